"""A stand-in for Pupil Capture that speaks its Network API, fed by a recording or synthetic gaze.

What it serves, as Capture does (DESIGN.md §2):

- **Pupil Remote** (:mod:`streamdp.network.simulated_remote`): Capture's answers (``SUB_PORT``,
  ``PUB_PORT``, ``t`` running between datums, ``T``, ``R``/``r``, ``C``/``c``, ``v``, forwarding),
  binding and restarts (:meth:`CaptureSimulator.restart_remote`, as its menu; ``start_plugin``/
  ``stop_plugin`` naming ``NetworkApiPlugin``), announced only by Capture's log records.
- **The world process** (:mod:`streamdp.network.simulated_world`): Capture's reactions to
  calibration, recording and eye-process notifications; :attr:`CaptureSimulator.world` records them.
- **Binding**: Capture binds every interface (``*``); the simulator binds loopback unless given
  ``remote_host="*"``, ``backbone_host="*"`` (exposing recordings to the network is asked for).
- **The IPC backbone**: an XSUB socket apps publish into (``PUB_PORT``) and an XPUB socket apps
  subscribe to (``SUB_PORT``), with everything published forwarded to the subscribers.
- **Datums** with Capture's topics, field names and types, encoded by
  :mod:`streamdp.pupil_wire` (the module the relay decodes with): ``gaze.3d.01.`` (binocular) or
  ``gaze.3d.<eye>.`` with ``pupil.<eye>.3d`` for each eye, ``gaze.2d.*``/``pupil.<eye>.2d`` for a
  recording whose diameters are in px, and ``blinks`` onset/offset datums. Frames are
  ``[topic (UTF-8), msgpack(datum, use_bin_type=True)]``.
- **Capture's untidiness**, by default (``tidy=True`` sends every datum once, in time order):
  gaze in ~30 Hz world-frame bursts, monocular gaze up to ~90 ms behind binocular gaze already
  sent, blink onsets and offsets re-published every frame while the detector's filter fires
  (:func:`streamdp.pupil_wire.capture_datums`). With ``eye_lag`` (s), one eye process at a time
  falls behind now and then, as the real Capture v3.6 on 2 busy cores (up to 1.3 s).

Pacing: ``speed=1`` real time, ``speed=10`` ten times faster, ``speed=0`` as fast as the sockets
take it. Pupil time (``t``) is the data's: the first datum's time until playback starts, then each
datum's time as it leaves, running on at ``speed`` (real time with ``speed=0``, after the stream).

Delivery, as Capture's by default: high-water mark 1000 (a stalled subscriber loses messages),
playback at once. ``hwm=0`` and ``wait_for_subscriber=True`` deliver every datum (tests, demos).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgpack
import zmq

from ..gaze import Recording
from ..pupil_wire import capture_datums, encode, recording_datums
from ..pupil_wire.encode import checked_eye_lag
from .binding import bind
from .simulated_remote import PUPIL_VERSION, PupilRemoteServer, bind_retrying
from .simulated_world import SimulatedWorld

log = logging.getLogger(__name__)

__all__ = ["CAPTURE_HWM", "PUPIL_VERSION", "CaptureSimulator", "SimulatorPorts"]

#: the high-water mark of Capture's backbone (ZeroMQ's default)
CAPTURE_HWM = 1000
_FEED = "inproc://streamdp-simulator-feed-{}"


@dataclass(frozen=True)
class SimulatorPorts:
    remote: int
    sub: int
    pub: int


def _shifted(datum: dict[str, Any], shift: float) -> dict[str, Any]:
    if shift == 0.0:
        return datum
    out = {**datum, "timestamp": datum["timestamp"] + shift}
    if datum.get("base_data"):
        out["base_data"] = [{**b, "timestamp": b["timestamp"] + shift} for b in datum["base_data"]]
    return out


class CaptureSimulator:
    """Pupil Capture's Network API on loopback, fed by ``recording``. Use as a context manager or
    call :meth:`start` and :meth:`stop`.

    Parameters
    ----------
    recording : Recording
        The gaze (and blinks) to play.
    host : str
        Interface to bind (loopback by default).
    remote_host, backbone_host : str, optional
        Where Pupil Remote and the backbone bind (default: ``host``); ``"*"`` for both is
        Capture's binding (every interface).
    remote_port : int
        Pupil Remote's port (0: any free port).
    speed : float
        Playback speed: 1 real time, 0 as fast as the sockets take it.
    wait_for_subscriber : bool
        Publish nothing before someone subscribes to gaze (Capture does not wait).
    hwm : int
        The backbone's high-water mark per subscriber: Capture's 1000 by default; 0 is unlimited
        (lossless, for tests and demos).
    loop : bool
        Play the recording over and over, the clock running on.
    time_shift : float
        Seconds added to every timestamp.
    tidy : bool
        Every datum once, in time order, instead of Capture's untidiness.
    eye_lag : float
        The most (s) an eye process falls behind now and then, one eye at a time, with
        ``tidy=False`` (:func:`streamdp.pupil_wire.capture_datums`); 0 (default): never.

    Raises
    ------
    TypeError, ValueError
        ``remote_port`` is not a port number 0–65535 (0: any free port), ``speed`` is negative,
        ``hwm`` is not an int ≥ 0, ``eye_lag`` is not a finite number ≥ 0.

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> with CaptureSimulator(generate(duration=2.0, seed=1).recording, speed=0) as sim:
    ...     req = zmq.Context.instance().socket(zmq.REQ)
    ...     _ = req.connect(sim.remote_address)
    ...     req.send_string("SUB_PORT")
    ...     int(req.recv_string()) == sim.ports.sub
    ...     req.close(linger=0)
    True
    """

    def __init__(
        self,
        recording: Recording,
        *,
        host: str = "127.0.0.1",
        remote_host: str | None = None,
        backbone_host: str | None = None,
        remote_port: int = 0,
        speed: float = 1.0,
        wait_for_subscriber: bool = False,
        hwm: int = CAPTURE_HWM,
        loop: bool = False,
        time_shift: float = 0.0,
        tidy: bool = False,
        eye_lag: float = 0.0,
        context: zmq.Context | None = None,
    ) -> None:
        if speed < 0:
            raise ValueError(f"speed must be ≥ 0 (0: as fast as possible), got {speed!r}")
        if isinstance(hwm, bool) or not isinstance(hwm, int):
            raise TypeError(f"hwm must be an int, got {hwm!r}")
        if hwm < 0:
            raise ValueError(f"hwm must be ≥ 0 (0: unlimited), got {hwm!r}")
        if isinstance(remote_port, bool) or not isinstance(remote_port, int):
            raise TypeError(f"remote_port must be an int, got {remote_port!r}")
        if not 0 <= remote_port <= 65535:
            raise ValueError(f"remote_port must be a port number 0–65535 (0: any free port), got {remote_port!r}")
        self.eye_lag = checked_eye_lag(eye_lag)
        self.recording = recording
        self.host = host
        self.remote_host = host if remote_host is None else remote_host
        self.backbone_host = host if backbone_host is None else backbone_host
        self._remote: PupilRemoteServer | None = None
        self._restarts: queue.Queue[tuple[str, int | None, threading.Event]] = queue.Queue()
        self.speed = float(speed)
        self.wait_for_subscriber = wait_for_subscriber
        self.hwm = hwm
        self.loop = loop
        self.tidy = tidy
        self._shift = float(time_shift)
        self._ctx = context or zmq.Context.instance()
        self._stop = threading.Event()
        self._subscribed = threading.Event()
        self.finished = threading.Event()
        self._clock_lock = threading.Lock()
        self._pupil_time = float(recording.gaze.t[0]) + self._shift if len(recording.gaze) else 0.0
        self._pupil_wall = time.monotonic()
        self._playing = False  # Pupil time stands still until the first datum leaves
        self._threads: list[threading.Thread] = []
        self.recording_active = False
        self.published = 0
        self._remote_port = remote_port
        self.ports = SimulatorPorts(0, 0, 0)
        self._feed_address = _FEED.format(id(self))
        self.world = SimulatedWorld(now=self.pupil_time)
        self.notifications_received = self.world.received  # subjects, in order, Capture's own too

    # -------------------------------------------------------------- lifecycle

    def __enter__(self) -> CaptureSimulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def remote_address(self) -> str:
        """Where a local app connects to Pupil Remote (``127.0.0.1`` if bound on every interface)."""
        host = self._remote.host if self._remote is not None else self.remote_host
        return f"tcp://{'127.0.0.1' if host in ('*', '0.0.0.0') else host}:{self.ports.remote}"

    def restart_remote(self, *, host: str, port: int | None = None, timeout: float = 5.0) -> None:
        """Restart Pupil Remote's server on ``host`` (and ``port``; default: the current one) as
        Capture's Network API menu does: stop, bind again (a failed bind falls back to
        ``tcp://*:*``), announced only by Capture's log records on the backbone. Returns once
        the new socket is bound.

        Raises
        ------
        TimeoutError
            The simulator's broker did not restart it within ``timeout`` seconds (not running).
        """
        done = threading.Event()
        self._restarts.put((host, port, done))
        if not done.wait(timeout):
            raise TimeoutError(f"Pupil Remote was not restarted within {timeout:g} s (is the simulator running?)")

    def start(self) -> None:
        """Bind Pupil Remote and the backbone and start serving.

        Raises
        ------
        InputError
            Pupil Remote's port is taken (after waiting briefly for a previous owner to let go)
            or the host cannot be bound, named with the address; nothing is left open.
        """
        xsub = self._ctx.socket(zmq.XSUB)
        xpub = self._ctx.socket(zmq.XPUB)
        pull = self._ctx.socket(zmq.PULL)
        for s in (xsub, xpub, pull):
            s.linger = 0
        xpub.sndhwm = self.hwm
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        remote = PupilRemoteServer(
            self._ctx,
            host=self.remote_host,
            port=self._remote_port,
            publish=lambda f: self.world.observe(f, xpub.send_multipart),  # the world hears Pupil Remote's notes
            bind=bind_retrying,
        )
        try:
            remote.start(self.remote_host, self._remote_port, announce=False)
            pub_port = int(bind(xsub, f"tcp://{self.backbone_host}:0").rsplit(":", 1)[1])
            sub_port = int(bind(xpub, f"tcp://{self.backbone_host}:0").rsplit(":", 1)[1])
            pull.bind(self._feed_address)
        except BaseException:
            remote.stop(announce=False)
            for s in (xsub, xpub, pull):
                s.close(linger=0)
            raise
        xsub.send(b"\x01notify.")  # Capture's world process hears every notification (start_plugin)
        self._remote = remote
        self.ports = SimulatorPorts(remote.port, sub_port, pub_port)
        broker = threading.Thread(target=self._broker, args=(xsub, xpub, pull), name="capture-broker", daemon=True)
        feeder = threading.Thread(target=self._feeder, name="capture-feeder", daemon=True)
        self._threads = [broker, feeder]
        broker.start()
        feeder.start()
        msg = "simulated Pupil Capture: Pupil Remote %s, SUB_PORT %d, PUB_PORT %d"
        log.info(msg, self.remote_address, sub_port, pub_port)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for th in self._threads:
            th.join(timeout)
        self._threads = []

    def wait_until_finished(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

    @property
    def gaze_subscribed(self) -> bool:  # with wait_for_subscriber, playback starts then
        return self._subscribed.is_set()

    # -------------------------------------------------------------- Pupil time

    def pupil_time(self) -> float:
        """Pupil time now, the data's: the first datum's time until playback starts, then the
        time the last datum left plus the wall time since (×``speed``; ×1 with ``speed=0``), so
        ``t`` runs on between datums and after the stream and never back (but by ``T``), as
        Capture's clock does."""
        with self._clock_lock:
            return self._now()

    def _now(self) -> float:
        if not self._playing:
            return self._pupil_time
        return self._pupil_time + (time.monotonic() - self._pupil_wall) * (self.speed or 1.0)

    def _set_time(self, new_time: float) -> None:
        with self._clock_lock:
            self._shift += new_time - self._now()
            self._pupil_time, self._pupil_wall = new_time, time.monotonic()

    # -------------------------------------------------------------- threads

    def _broker(self, xsub: zmq.Socket, xpub: zmq.Socket, pull: zmq.Socket) -> None:
        remote = self._remote
        assert remote is not None
        poller = zmq.Poller()
        for s in (xsub, xpub, pull):
            poller.register(s, zmq.POLLIN)
        serving = remote.socket
        if serving is not None:
            poller.register(serving, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                for sock, _ in poller.poll(50):
                    if serving is not None and sock is serving:
                        frames = serving.recv_multipart()
                        serving.send_string(self._answer(remote, frames))
                    elif sock is xpub:
                        frame = xpub.recv()
                        topic = frame[1:]
                        if frame[:1] == b"\x01" and (b"gaze".startswith(topic) or topic.startswith(b"gaze")):
                            self._subscribed.set()
                        xsub.send(frame)  # subscriptions travel upstream to publishers
                    elif sock is xsub:
                        frames = xsub.recv_multipart()
                        self.world.observe(frames, xpub.send_multipart)
                    elif sock is pull:
                        self.world.observe(pull.recv_multipart(), xpub.send_multipart)
                        self.published += 1
                self.world.react(xpub.send_multipart, remote)  # after Pupil Remote answered: it may restart
                while not self._restarts.empty():  # the menu's restarts, asked from other threads
                    host, port, done = self._restarts.get_nowait()
                    remote.restart(host, port)
                    done.set()
                if remote.socket is not serving:  # restarted: serve the new socket
                    if serving is not None:
                        poller.unregister(serving)
                    serving = remote.socket
                    if serving is not None:
                        poller.register(serving, zmq.POLLIN)
                    self.ports = SimulatorPorts(remote.port, self.ports.sub, self.ports.pub)
        finally:
            remote.stop(announce=False)
            for s in (xsub, xpub, pull):
                s.close(linger=0)

    def _answer(self, remote: PupilRemoteServer, frames: list[bytes]) -> str:
        def recording(active: bool) -> None:
            self.recording_active = active

        ports = (self.ports.sub, self.ports.pub)
        return remote.answer(frames, ports=ports, now=self.pupil_time, set_time=self._set_time, on_recording=recording)

    def _feeder(self) -> None:
        push = self._ctx.socket(zmq.PUSH)
        push.linger = 0
        push.sndtimeo = 100
        push.connect(self._feed_address)
        try:
            if self.wait_for_subscriber:
                while not self._subscribed.wait(0.05):
                    if self._stop.is_set():
                        return
            while True:
                self._play(push)
                if not self.loop or self._stop.is_set():
                    break
                # the next pass continues the clock a second after the last, never back
                with self._clock_lock:
                    self._shift += float(self.recording.gaze.duration) + 1.0
                if self.speed > 0 and self._stop.wait(1.0 / self.speed):
                    break
        finally:
            push.close(linger=0)
            self.finished.set()

    def _play(self, push: zmq.Socket) -> None:
        start_wall = time.monotonic()
        t0 = float(self.recording.gaze.t[0])
        pack = msgpack.Packer(use_bin_type=True).pack
        sent: Iterator[tuple[float, dict[str, Any]]]
        if self.tidy:
            sent = ((d["timestamp"], d) for d in recording_datums(self.recording))
        else:
            # a lagging eye's datums leave out of timestamp order: pacing follows `at`
            sent = capture_datums(self.recording, eye_lag=self.eye_lag)
        for at, datum in sent:
            if self._stop.is_set():
                return
            if self.speed > 0:
                delay = start_wall + (at - t0) / self.speed - time.monotonic()
                if delay > 0.002 and self._stop.wait(delay):
                    return
            with self._clock_lock:
                shift = self._shift  # read per datum: `T <time>` applies from the next one on
                # Capture's clock never runs back on its own: a datum leaving late does not pull it
                leaves = at + shift if not self._playing else max(at + shift, self._now())
                self._pupil_time, self._pupil_wall = leaves, time.monotonic()
                self._playing = True
            frames = encode(_shifted(datum, shift), pack)
            while True:  # a full queue must not keep a stopping simulator from stopping
                try:
                    push.send_multipart(frames)
                    break
                except zmq.Again:
                    if self._stop.is_set():
                        return
