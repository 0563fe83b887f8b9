"""A stand-in for Pupil Capture that speaks its Network API, fed by a recording or synthetic gaze.

What it serves, as Capture does (DESIGN.md §2):

- **Pupil Remote** on a REQ/REP socket: ``SUB_PORT`` and ``PUB_PORT`` answer the backbone's ports,
  ``t`` the current Pupil time (running between datums), ``T <time>`` sets it ("Timesync
  successful."), ``R [name]``/``r`` and ``C``/``c`` notify ``recording.should_start``/``stop`` and
  ``calibration.should_start``/``stop`` on the backbone ("OK"), ``v`` the version, and any
  multi-frame request is forwarded onto the backbone ("Message forwarded."), as Capture answers.
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
  (:func:`streamdp.pupil_wire.capture_datums`).

Pacing: ``speed=1`` plays at real time, ``speed=10`` ten times faster, ``speed=0`` as fast as the
sockets take it (for tests and the demo). Pupil time (``t``) is the data's: it stands at the first
datum's time until playback starts, then runs from each datum's time as it leaves, at ``speed`` (at
real time with ``speed=0`` and after the stream), so a relay that maps its clock to ``t`` sees the
data arrive on time.

Delivery, by default as Capture's: the backbone's high-water mark is ZeroMQ's default 1000 (a
subscriber that stalls loses messages) and playback starts at once, whoever listens. A test or a
demo that needs every datum asks for ``hwm=0`` (unlimited) and ``wait_for_subscriber=True``
(nothing is published before someone subscribes to gaze: no loss to ZeroMQ's slow joiner).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgpack
import zmq

from ..gaze import Recording
from ..pupil_wire import capture_datums, encode, recording_datums
from .sink import bind, bind_error

log = logging.getLogger(__name__)

PUPIL_VERSION = "3.5.1"
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


def _bind_retrying(sock: zmq.Socket, address: str, patience: float = 3.0) -> None:
    """Bind, waiting out a previous owner of the port: ZeroMQ releases a closed socket's port
    asynchronously, so a Capture restarted on 50020 may find it still taken for a moment.

    Raises
    ------
    InputError
        The port is still taken after ``patience`` seconds, or the address cannot be bound.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            sock.bind(address)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                raise bind_error(address, exc) from None
            time.sleep(0.05)


class CaptureSimulator:
    """Pupil Capture's Network API on loopback, fed by ``recording``. Use as a context manager or
    call :meth:`start` and :meth:`stop`.

    Parameters
    ----------
    recording : Recording
        The gaze (and blinks) to play.
    host : str
        Interface to bind (loopback by default).
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

    Raises
    ------
    TypeError, ValueError
        ``remote_port`` is not a port number 0–65535 (0: any free port), ``speed`` is negative,
        ``hwm`` is not an int ≥ 0.

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
        remote_port: int = 0,
        speed: float = 1.0,
        wait_for_subscriber: bool = False,
        hwm: int = CAPTURE_HWM,
        loop: bool = False,
        time_shift: float = 0.0,
        tidy: bool = False,
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
        self.recording = recording
        self.host = host
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

    # -------------------------------------------------------------- lifecycle

    def __enter__(self) -> CaptureSimulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def remote_address(self) -> str:
        return f"tcp://{self.host}:{self.ports.remote}"

    def start(self) -> None:
        """Bind Pupil Remote and the backbone and start serving.

        Raises
        ------
        InputError
            Pupil Remote's port is taken (after waiting briefly for a previous owner to let go)
            or the host cannot be bound, named with the address; nothing is left open.
        """
        rep = self._ctx.socket(zmq.REP)
        xsub = self._ctx.socket(zmq.XSUB)
        xpub = self._ctx.socket(zmq.XPUB)
        pull = self._ctx.socket(zmq.PULL)
        for s in (rep, xsub, xpub, pull):
            s.linger = 0
        xpub.sndhwm = self.hwm
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        try:
            if self._remote_port:
                _bind_retrying(rep, f"tcp://{self.host}:{self._remote_port}")
                remote = self._remote_port
            else:
                remote = int(bind(rep, f"tcp://{self.host}:0").rsplit(":", 1)[1])
            pub_port = int(bind(xsub, f"tcp://{self.host}:0").rsplit(":", 1)[1])
            sub_port = int(bind(xpub, f"tcp://{self.host}:0").rsplit(":", 1)[1])
            pull.bind(self._feed_address)
        except BaseException:
            for s in (rep, xsub, xpub, pull):
                s.close(linger=0)
            raise
        self.ports = SimulatorPorts(remote, sub_port, pub_port)
        broker = threading.Thread(target=self._broker, args=(rep, xsub, xpub, pull), name="capture-broker", daemon=True)
        feeder = threading.Thread(target=self._feeder, name="capture-feeder", daemon=True)
        self._threads = [broker, feeder]
        broker.start()
        feeder.start()
        log.info(
            "simulated Pupil Capture: Pupil Remote %s, SUB_PORT %d, PUB_PORT %d",
            self.remote_address,
            sub_port,
            pub_port,
        )

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for th in self._threads:
            th.join(timeout)
        self._threads = []

    def wait_until_finished(self, timeout: float | None = None) -> bool:
        return self.finished.wait(timeout)

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

    def _broker(self, rep: zmq.Socket, xsub: zmq.Socket, xpub: zmq.Socket, pull: zmq.Socket) -> None:
        poller = zmq.Poller()
        for s in (rep, xsub, xpub, pull):
            poller.register(s, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                for sock, _ in poller.poll(50):
                    if sock is rep:
                        self._remote_request(rep, xpub)
                    elif sock is xpub:
                        frame = xpub.recv()
                        topic = frame[1:]
                        if frame[:1] == b"\x01" and (b"gaze".startswith(topic) or topic.startswith(b"gaze")):
                            self._subscribed.set()
                        xsub.send(frame)  # subscriptions travel upstream to publishers
                    elif sock is xsub:
                        xpub.send_multipart(xsub.recv_multipart())
                    else:
                        xpub.send_multipart(pull.recv_multipart())
                        self.published += 1
        finally:
            for s in (rep, xsub, xpub, pull):
                s.close(linger=0)

    def _remote_request(self, rep: zmq.Socket, xpub: zmq.Socket) -> None:
        frames = rep.recv_multipart()
        if len(frames) >= 2:  # Capture forwards any multi-frame request onto the backbone
            xpub.send_multipart(frames)
            rep.send_string("Message forwarded.")
            return
        try:
            cmd = frames[0].decode()
        except UnicodeDecodeError:
            rep.send_string("Unknown command.")
            return
        if cmd == "SUB_PORT":
            rep.send_string(str(self.ports.sub))
        elif cmd == "PUB_PORT":
            rep.send_string(str(self.ports.pub))
        elif cmd.startswith("T"):
            try:
                target = float(cmd[2:])
            except ValueError:
                rep.send_string(f"'{cmd[2:]}' cannot be converted to float.")
            else:
                self._set_time(target)
                rep.send_string("Timesync successful.")
        elif cmd.startswith("t"):
            rep.send_string(repr(self.pupil_time()))
        elif cmd.startswith("R"):
            self.recording_active = True
            self._notify(xpub, {"subject": "recording.should_start", "session_name": cmd[2:]})
            rep.send_string("OK")
        elif cmd.startswith("r"):
            self.recording_active = False
            self._notify(xpub, {"subject": "recording.should_stop"})
            rep.send_string("OK")
        elif cmd in ("C", "c"):
            self._notify(xpub, {"subject": "calibration.should_start" if cmd == "C" else "calibration.should_stop"})
            rep.send_string("OK")
        elif cmd == "v":
            rep.send_string(PUPIL_VERSION)
        else:
            rep.send_string("Unknown command.")

    def _notify(self, xpub: zmq.Socket, notification: dict[str, Any]) -> None:
        """What Pupil Remote's commands do in Capture: a notification on the backbone."""
        payload = {**notification, "topic": "notify." + notification["subject"]}
        xpub.send_multipart([payload["topic"].encode(), msgpack.packb(payload, use_bin_type=True)])

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
                # the next pass continues the clock a second after the last: Pupil time never
                # runs backwards on its own, nor ahead of the data
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
            sent = capture_datums(self.recording)
        for at, datum in sent:
            if self._stop.is_set():
                return
            if self.speed > 0:
                delay = start_wall + (at - t0) / self.speed - time.monotonic()
                if delay > 0.002 and self._stop.wait(delay):
                    return
            with self._clock_lock:
                shift = self._shift  # read per datum: `T <time>` applies from the next one on
                # Capture's clock never runs back on its own: a datum leaving late (within a
                # burst, or behind schedule) does not pull it back
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
