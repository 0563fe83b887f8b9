"""streamdp's own Pupil Remote: Capture's Network API for apps, serving only sanitized data (issue #28).

Apps written for Capture (hmd-eyes, pupil-helpers) connect a REQ socket to Pupil Remote, ask
``SUB_PORT`` and ``PUB_PORT``, send notifications, publish into ``PUB_PORT`` and subscribe to
``SUB_PORT``. :class:`StreamdpPupilRemote` answers them as Capture's
``pupil_remote_controller.py`` does, with ports of its own:

- **SUB_PORT** carries only the gaze channel's ticks as Capture's gaze datums
  (:mod:`streamdp.network.capture_gaze`), the session's ``streamdp.*`` releases as on the
  sanitized socket, and Capture's notifications that :func:`~streamdp.network.notification_policy.outbound`
  passes. Nothing else reaches it: the facade subscribes to nothing of Capture's but ``notify.``.
  What no app subscribed to is not built at all (:class:`~streamdp.network.subscriptions.Subscriptions`).
- **PUB_PORT** takes what apps publish (hmd-eyes sends ``calibration.add_ref_data`` and
  ``calibration.should_stop`` there, annotations too) and forwards what
  :func:`~streamdp.network.notification_policy.inbound` allows onto Capture's backbone.
- **Commands** (:data:`COMMANDS`): ``SUB_PORT``/``PUB_PORT`` answered with streamdp's ports;
  ``t``, ``T``, ``v``, ``R``, ``r``, ``C``, ``c`` forwarded to Capture's Pupil Remote with its
  answer returned; anything else ``"Unknown command."`` (Capture's answer; where Capture's own
  thread dies, on a frame that is not UTF-8 or empty, streamdp answers the same). A notification
  through the REQ socket is forwarded or refused by the policy; either way the app hears
  ``"Message forwarded."``, which is what Capture answers for any multi-frame message (bad ones
  included). Refusals are counted (``counters.refused``, the owner's status socket).

Threads: the session's thread publishes ticks and releases (this is a sink: :meth:`publish`)
straight onto ``SUB_PORT``; one thread serves commands, apps' publications and Capture's
notifications, which it puts on ``SUB_PORT`` too. The two share that one socket under a lock (a
ZeroMQ socket may change threads behind a full memory barrier): no hop, no extra wake-up per
tick. Binding follows the sanitized socket's rule: on loopback, or elsewhere with CURVE (or an
explicit ``insecure``).
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlsplit

import msgpack
import zmq
from zmq.auth.thread import ThreadAuthenticator

from ..privacy.release import PrivateRelease, check_sealed
from ..session_output import SessionCounters
from ..status import SessionStatus, check_status
from .binding import bind
from .capture_gaze import GAZE_TOPICS, gaze_datums, is_gaze_tick
from .capture_link import CaptureLink
from .curve import CurveServer
from .endpoint_checks import check_release_endpoint
from .notification_policy import inbound, outbound
from .sink import check_private_noise
from .subscriptions import Subscriptions

__all__ = ["COMMANDS", "FORWARDED", "StreamdpPupilRemote"]

log = logging.getLogger(__name__)

#: Pupil Remote's single-frame commands and who answers them (Capture matches R, r, T, t and v on
#: the first letter, C and c whole)
COMMANDS = {
    "SUB_PORT": "streamdp: its own SUB_PORT (sanitized data only)",
    "PUB_PORT": "streamdp: its own PUB_PORT (the policy decides what reaches Capture)",
    "t": "Capture: its clock",
    "T": "Capture: sets its clock (the session starts a new segment, as on any jump)",
    "v": "Capture: its version",
    "R": "Capture: starts a recording on this device",
    "r": "Capture: stops the recording",
    "C": "Capture: starts a calibration",
    "c": "Capture: stops the calibration",
}
FORWARDED = "Message forwarded."
UNKNOWN = "Unknown command."


def _loads(frame: bytes) -> object:
    try:
        return msgpack.unpackb(frame, raw=False, strict_map_key=False)
    except Exception:  # any malformed payload: the policy refuses what is not a map
        return None


class StreamdpPupilRemote:
    """Capture's Network API on ``address``, with only sanitized data behind it.

    A :class:`~streamdp.sinks.ReleaseSink` that takes the gaze channel's ticks
    (``accepts_gaze``): give it to the session beside the sanitized publisher.

    Parameters
    ----------
    address : str
        Where apps find Pupil Remote (``tcp://*:50020`` once Capture's own moved to loopback).
        ``SUB_PORT`` and ``PUB_PORT`` bind on the same host, on free ports.
    capture_remote : str
        Capture's own Pupil Remote.
    curve, insecure :
        As :class:`~streamdp.network.sink.ReleasePublisher`: an address beyond loopback needs CURVE
        (every socket of the facade is a CURVE server) or ``insecure=True``.
    gaze_mode : {"3d", "2d"}
        The gaze datums' kind (``gaze.3d.01.`` or ``gaze.2d.01.``), as the source's detection mode.
    counters : SessionCounters, optional
        Where refusals are counted (the session's: the owner's status socket shows them).
    timeout : float
        Seconds Capture has to answer a forwarded request.

    Raises
    ------
    InputError
        ``address`` is beyond loopback without CURVE or ``insecure``, or cannot be bound.
    ValueError
        ``address`` is ``capture_remote``, or ``gaze_mode`` is not "3d" or "2d".
    """

    accepts_gaze = True

    def __init__(
        self,
        address: str = "tcp://127.0.0.1:50021",
        *,
        capture_remote: str = "tcp://127.0.0.1:50020",
        curve: CurveServer | None = None,
        insecure: bool = False,
        gaze_mode: str = "3d",
        counters: SessionCounters | None = None,
        timeout: float = 1.0,
        sndhwm: int = 1000,
        context: zmq.Context | None = None,
        publish_reproducible_noise_not_private: bool = False,
    ) -> None:
        if gaze_mode not in GAZE_TOPICS:
            raise ValueError(f"gaze_mode must be '3d' or '2d', got {gaze_mode!r}")
        if urlsplit(address)[1:] == urlsplit(capture_remote)[1:] and not address.endswith(":0"):
            raise ValueError(f"streamdp's Pupil Remote ({address}) cannot be Capture's ({capture_remote})")
        keys = check_release_endpoint(address, curve=curve, insecure=insecure)
        self.gaze_mode = gaze_mode
        self._gaze_topic = GAZE_TOPICS[gaze_mode]
        self.counters = counters if counters is not None else SessionCounters()
        self.publish_reproducible_noise_not_private = bool(publish_reproducible_noise_not_private)
        ctx = self._ctx = context or zmq.Context.instance()
        self._auth: ThreadAuthenticator | None = None
        self._stop = threading.Event()
        self._sockets: list[zmq.Socket] = []
        host = urlsplit(address).hostname or "127.0.0.1"
        host = "*" if host in ("0.0.0.0", "*") else f"[{host}]" if ":" in host else host
        try:
            if keys is not None:
                assert curve is not None
                self._auth = ThreadAuthenticator(ctx)
                self._auth.start()
                self._auth.configure_curve(domain="*", location=str(curve.clients_dir))
            self._rep = self._socket(zmq.REP, keys)
            self.address = bind(self._rep, address)
            self._out = self._socket(zmq.XPUB, keys)  # SUB_PORT: both threads, under _out_lock
            self._listeners = Subscriptions(self._out)
            self._out.sndhwm = sndhwm
            self.sub_port = int(bind(self._out, f"tcp://{host}:0").rsplit(":", 1)[1])
            self._app_in = self._socket(zmq.SUB, keys)
            self._app_in.setsockopt(zmq.SUBSCRIBE, b"")
            self.pub_port = int(bind(self._app_in, f"tcp://{host}:0").rsplit(":", 1)[1])
            # close() wakes the server at once: it need not wake on a short timer to notice
            wake = f"inproc://streamdp-pupil-remote-wake-{id(self)}"
            self._wake_rx = self._socket(zmq.PAIR, None)
            self._wake_rx.bind(wake)
            self._wake_tx = self._socket(zmq.PAIR, None)
            self._wake_tx.connect(wake)
        except BaseException:
            self.close()
            raise
        self._link = CaptureLink(ctx, capture_remote, timeout=timeout)
        self._pack = msgpack.Packer(use_bin_type=True).pack
        self._out_lock = threading.Lock()
        self.closed = False
        self._server = threading.Thread(target=self._serve, name="streamdp-pupil-remote", daemon=True)
        self._server.start()

    def _socket(self, kind: int, keys: tuple[bytes, bytes] | None) -> zmq.Socket:
        sock = self._ctx.socket(kind)
        sock.linger = 0
        self._sockets.append(sock)
        if keys is not None:
            sock.curve_publickey, sock.curve_secretkey = keys
            sock.curve_server = True
        return sock

    # ------------------------------------------------------------ the sink (session's thread)

    def publish(self, release: PrivateRelease) -> None:
        """Publish a sealed release: a gaze tick as Capture's gaze datum, anything else on its
        ``streamdp.*`` topic as the sanitized socket does.

        Raises
        ------
        TypeError
            ``release`` is not a genuine, unmodified release.
        ValueError
            Its noise is reproducible (seeded) and ``publish_reproducible_noise_not_private`` was not set.
        RuntimeError
            The facade is closed.
        """
        check_private_noise(check_sealed(release), self.publish_reproducible_noise_not_private)
        gaze = is_gaze_tick(release)
        topic = self._gaze_topic if gaze else release.topic
        with self._out_lock:
            if self.closed:
                raise RuntimeError("this StreamdpPupilRemote is closed: nothing more is published")
            if not self._listeners.listened(topic):
                return  # no app subscribed to it: nothing built (ZeroMQ would drop it)
            if gaze:
                out = gaze_datums(release, self.gaze_mode)
            else:
                out = [(release.topic.encode(), self._pack(release.to_message()))]
            send = self._out.send  # two sends, not send_multipart: 1 us a tick instead of 3
            for topic_frame, payload in out:
                send(topic_frame, zmq.SNDMORE)
                send(payload)

    def publish_status(self, status: SessionStatus) -> None:
        """Check ``status`` and send nothing: it is the owner's (the status socket)."""
        check_status(status)

    # ------------------------------------------------------------ the server's thread

    def _serve(self) -> None:
        poller = zmq.Poller()
        poller.register(self._rep, zmq.POLLIN)
        poller.register(self._app_in, zmq.POLLIN)
        poller.register(self._wake_rx, zmq.POLLIN)
        link = self._link
        try:
            while not self._stop.is_set():
                if link.check():
                    if link.notifications is not None:
                        poller.register(link.notifications, zmq.POLLIN)
                with self._out_lock:  # what apps send upstream on SUB_PORT does not pile up there
                    if not self.closed:
                        self._listeners.read()
                # asleep until a request, a message or the next look at Capture's ports
                for sock, _ in poller.poll(max(1, int(link.until_check() * 1000))):
                    if sock is self._wake_rx:
                        break
                    if sock is self._rep:
                        self._rep.send_string(self._answer(self._rep.recv_multipart()))
                    elif sock is self._app_in:
                        self._from_app(self._app_in.recv_multipart())
                    elif link.notifications is not None and sock is link.notifications:
                        self._from_capture(link.notifications.recv_multipart())
                    else:  # the notification socket of a Capture since restarted
                        poller.unregister(sock)
        except zmq.ZMQError as exc:
            if not self._stop.is_set():
                log.error("streamdp's Pupil Remote stopped: %s", exc)
        finally:
            link.close()

    def _answer(self, frames: list[bytes]) -> str:
        """Pupil Remote's answer to a request, as Capture's ``PupilRemoteController.__on_recv``."""
        if len(frames) >= 2:
            self._from_app(frames, through_remote=True)
            return FORWARDED
        try:
            cmd = frames[0].decode()
        except UnicodeDecodeError:
            return UNKNOWN
        if cmd == "SUB_PORT":
            return str(self.sub_port)
        if cmd == "PUB_PORT":
            return str(self.pub_port)
        if cmd[:1] in ("t", "T", "v", "R", "r") or cmd in ("C", "c"):
            return self._link.request([frames[0]])
        return UNKNOWN

    def _from_app(self, frames: list[bytes], *, through_remote: bool = False) -> None:
        decision = inbound(frames[0], _loads(frames[1]) if len(frames) >= 2 else None)
        if not decision.forwarded:
            self.counters.refused += 1
            log.warning("refused an app's %r: %s", frames[0][:80], decision.reason)
            return
        if through_remote:
            self._link.request(frames)  # Capture's own "Message forwarded."
        elif not self._link.publish(frames):
            log.warning("an app's %r not forwarded: Capture is not connected", frames[0][:80])

    def _from_capture(self, frames: list[bytes]) -> None:
        note: Any = _loads(frames[1]) if len(frames) >= 2 else None
        kept = outbound(note) if isinstance(note, dict) else None
        if kept is not None:
            with self._out_lock:
                if not self.closed:
                    self._out.send_multipart([kept["topic"].encode(), self._pack(kept)])

    # ------------------------------------------------------------ closing

    def close(self) -> None:
        """Stop the server's thread and close every socket (what is unsent is dropped)."""
        self._stop.set()
        server = getattr(self, "_server", None)
        if server is not None and server.is_alive():
            self._wake_tx.send(b"stop")
            server.join(2.0)
        with getattr(self, "_out_lock", threading.Lock()):  # not while the session's thread sends
            self.closed = True
            for sock in self._sockets:
                sock.close(linger=0)
            self._sockets.clear()
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
