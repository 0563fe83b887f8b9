"""``streamdp relay``: Pupil Capture's gaze in, sanitized chunks out.

The relay is an I/O shell around a :class:`~streamdp.session.Session`: it asks Pupil Remote for
the backbone's ``SUB_PORT``, subscribes to gaze (and to blinks when the session takes the
source's blinks), hands every message to the session as it arrives and lets the session's sinks
publish (its own socket and, optionally, Capture's backbone).

Robustness, each case counted and logged:

- malformed frames (not msgpack, not a dict) and datums with missing or wrongly typed fields are
  skipped by the session's decoder (``malformed``, ``invalid``);
- Capture publishes monocular and binocular gaze interleaved, out of order: the session's reorder
  buffer sorts them; anything older than what was already fed is dropped (``late``);
- Capture going silent is checked with Pupil Remote's ``t``; when it does not answer the relay
  reconnects and starts a new segment (``reconnects``): windows have a gap, nothing is invented
  across it. Pupil time is read with ``t`` every heartbeat: a jump beyond the reorder window
  (``T``, Time Sync's jump; :mod:`~streamdp.network.capture_clock`) starts a new segment
  (``restarts``), as in the Capture plugin; Time Sync's slews continue the session;
- slow or vanished subscribers cost bounded memory (see
  :class:`~streamdp.network.sink.ReleasePublisher`);
- :meth:`Relay.stop` (SIGINT/SIGTERM in the CLI) ends the loop between two batches: a chunk is
  released whole or not at all.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

import zmq

from ..checks import check_seconds
from ..live_pacing import FeedPacing
from ..privacy.release import PrivateRelease
from ..session import Session, SessionCounters
from ..status import SessionStatus, StatusEvent
from .backbone_sink import BackboneSink
from .capture_clock import CaptureClock
from .read_pacing import ReadPacing
from .remote_watch import DeploymentCheck, DeploymentWatch

__all__ = ["MAX_GAZE_MESSAGES_PER_S", "BackboneSink", "Relay", "RemoteUnavailable"]

log = logging.getLogger(__name__)


#: the most gaze messages per second a Capture publishes (400 Hz eye cameras, binocular and
#: monocular datums): sizes the input queue from the seconds of gaze it may hold
MAX_GAZE_MESSAGES_PER_S = 1000
_BACKLOG_BEYOND_CHUNK_WINDOW = 2.0  # s behind Capture's clock, past the chunk window, before shedding


# plain ints: pyzmq's enums cost more than the check itself
_NOBLOCK, _RCVMORE = int(zmq.NOBLOCK), int(zmq.RCVMORE)


class RemoteUnavailable(Exception):
    """Pupil Remote did not answer in time."""


class Relay:
    """Feeds the gaze of the Capture at ``remote`` into ``session``; the session's sinks publish.

    Parameters
    ----------
    session : Session
        The private session (its sinks: typically a
        :class:`~streamdp.network.sink.ReleasePublisher`). The relay takes it over: it adds the
        backbone sink (``to_backbone``), sets its ``on_release`` hook and, unless it has one, its
        pacing (a :class:`~streamdp.live_pacing.FeedPacing`: the stages run every few steps).
    remote : str
        Pupil Remote's address (Capture's default ``tcp://127.0.0.1:50020``).
    to_backbone : bool
        Also publish releases onto Capture's backbone.
    heartbeat : float
        Seconds without gaze after which Pupil Remote is asked whether Capture is still there.
    timeout : float
        Seconds Pupil Remote has to answer.
    status_interval : float
        Seconds between status messages.
    max_backlog : float, optional
        Seconds of gaze the input may hold: the subscription's queue is sized for it, and when
        the relay falls further behind Capture's clock than this (a flood, a stalled machine) it
        discards what is queued undecoded and counts it (``shed``, local): memory stays bounded
        and the relay catches up instead of releasing ever later. Default: the session's chunk
        reorder window + 2 s (Capture's gaze trails its clock, by seconds on a loaded PC).
    read_interval : float
        Seconds the relay lets gaze queue between two reads while no release is near (0: read
        every burst). Capture publishes ~30–60 bursts a second; waking for each costs more than
        decoding them, and the stages run once every few steps anyway. From ``read_interval`` before
        a chunk's deadline on, the relay reads every burst, so a chunk goes out as soon as the gaze
        makes it due; it wakes at each tick's deadline (and reads then).
    deployment_check : callable, optional
        Capture's ports by name → a :class:`~streamdp.network.doctor.DeploymentReport` (a partial
        of :func:`~streamdp.network.doctor.check_ports`): run when the relay connects and
        whenever Pupil Remote announces a restart (:attr:`watch`); its verdict is logged in one line.
    """

    def __init__(
        self,
        session: Session,
        *,
        remote: str = "tcp://127.0.0.1:50020",
        to_backbone: bool = False,
        heartbeat: float = 1.0,
        timeout: float = 1.0,
        status_interval: float = 10.0,
        max_backlog: float | None = None,
        read_interval: float = 0.25,
        deployment_check: DeploymentCheck | None = None,
        context: zmq.Context | None = None,
    ) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"session must be a Session, got {type(session).__name__}")
        default_backlog = session.config.chunk_reorder_window + _BACKLOG_BEYOND_CHUNK_WINDOW
        self.max_backlog = check_seconds("max_backlog", default_backlog if max_backlog is None else max_backlog)
        self.read_interval = check_seconds("read_interval", read_interval, zero_ok=True)
        if self.read_interval >= self.max_backlog:
            raise ValueError(f"read_interval ({read_interval!r} s) must be below max_backlog ({self.max_backlog:g} s)")
        self.session = session
        self.remote = remote
        self.host = urlsplit(remote).hostname or "127.0.0.1"
        self.heartbeat, self.timeout, self.status_interval = heartbeat, timeout, status_interval
        self._ctx = context or zmq.Context.instance()
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._req: zmq.Socket | None = None
        self._sub: zmq.Socket | None = None
        self._sub_port = 0
        self._backbone: BackboneSink | None = None
        if to_backbone:
            self._backbone = BackboneSink()
            session.sinks.append(self._backbone)
        self._publishers = [s for s in session.sinks if hasattr(s, "poll_subscriptions")]
        #: called with each release and the monotonic time its last gaze message was received
        self.on_release: Callable[[PrivateRelease, float], None] | None = None
        self._batch_received = 0.0
        #: Capture's clock, read with Pupil Remote's ``t`` every heartbeat (the plugin's rule for jumps); the
        #: session's restarts at the last read (one it made itself, at its gaze, is not made twice)
        self._clock, self._restarts_read = CaptureClock(), 0
        #: the schedule's clock (the data's) and how long gaze may queue between reads
        self._reads = ReadPacing(self.read_interval)
        self._last_gaze, self._queue_empty = time.monotonic(), True
        session.on_release = self._released
        session.pacing = session.pacing or FeedPacing()
        # no chunk for each deadline T + 1e5 s skips; a leap needs a jump its size (a starved read of t: ~0.1 s off)
        session.clock_was_set = lambda: (self._check_clock(restart=False) or 0.0) > session.config.chunk_leap
        #: the deployment check's runs (``watch.report``: the latest; ``watch.on_report``: its hook)
        self.watch = None if deployment_check is None else DeploymentWatch(deployment_check)
        #: called at each failed attempt to reach Pupil Remote with the reason and the attempts since the relay
        #: was last connected (1, 2, …); it may raise to end :meth:`run`. Without it, each is logged as a warning
        self.on_waiting: Callable[[Exception, int], None] | None = None

    @property
    def counters(self) -> SessionCounters:
        return self.session.counters

    # ---------------------------------------------------------------- control

    def stop(self) -> None:
        """Ask the loop to end after the batch in hand (thread- and signal-safe)."""
        self._stop.set()

    def subscribers(self) -> int:
        return sum(p.poll_subscriptions() for p in self._publishers)

    def status(self, event: StatusEvent = StatusEvent.RUNNING) -> SessionStatus:
        return self.session.status(event, self.subscribers())

    # ---------------------------------------------------------------- Pupil Remote

    def _request(self, command: str) -> str:
        if self._req is None:
            self._req = self._ctx.socket(zmq.REQ)
            self._req.linger = 0
            self._req.connect(self.remote)
        self._req.send_string(command)
        if not self._req.poll(int(self.timeout * 1000)):
            self._req.close(linger=0)
            self._req = None  # a REQ socket that lost its answer cannot be reused
            raise RemoteUnavailable(f"Pupil Remote at {self.remote} did not answer {command!r}")
        return self._req.recv_string()

    def _connect(self) -> None:
        sub_port = int(self._request("SUB_PORT"))
        pub_port = int(self._request("PUB_PORT"))
        sub = self._ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.rcvhwm = max(100, int(self.max_backlog * MAX_GAZE_MESSAGES_PER_S))
        sub.connect(f"tcp://{self.host}:{sub_port}")
        sub.setsockopt_string(zmq.SUBSCRIBE, "gaze.")
        if self.session.config.blinks == "given":
            sub.setsockopt_string(zmq.SUBSCRIBE, "blinks")
        self._sub, self._sub_port = sub, sub_port
        self._clock.reset()
        self._sync_clock()
        if self._backbone is not None:
            self._backbone.connect(self._ctx, self.host, pub_port)
        if self.watch is not None:
            remote_port = urlsplit(self.remote).port or 0
            ports = {"Pupil Remote": remote_port, "SUB_PORT": sub_port, "PUB_PORT": pub_port}
            self.watch.start(self._ctx, self.host, {k: v for k, v in ports.items() if v})
        self.connected.set()
        log.info("connected to Pupil Capture at %s (SUB_PORT %d, PUB_PORT %d)", self.remote, sub_port, pub_port)

    def _sync_clock(self, sync: bool = True) -> float | None:
        """Read Capture's clock (monotonic too, until ``T`` or Time Sync moves it): the jump
        beyond the reorder window since the last read, if any; ``sync``: map the monotonic clock
        to it (when connecting and when gaze is quiet, never while gaze may be queued)."""
        before = time.monotonic()
        pupil = float(self._request("t"))
        after = time.monotonic()
        wall, spread = (before + after) / 2, (after - before) / 2
        return self._clock.read(wall=wall, pupil=pupil, newest_gaze=self.session.newest_gaze, sync=sync, spread=spread)

    def pupil_now(self) -> float | None:
        """Capture's clock now, as last synchronized; None before the first connection."""
        return self._clock.now()

    def schedule_now(self) -> float | None:
        """The time the schedule runs on: the newest gaze read, running on with the monotonic
        clock from when it was read (None before any gaze). While gaze flows this is the data's
        own clock, as in a replay; when it stops, chunks still go out at their deadlines (later
        than on Capture's clock by Capture's delivery delay, never earlier)."""
        return self._reads.now()

    def _until_due(self, chunks_only: bool = False) -> float | None:
        """Seconds until the next chunk or tick (``chunks_only``: chunk) is due on the schedule's clock."""
        due, now = self.session.next_chunk_deadline if chunks_only else self.session.next_deadline, self.schedule_now()
        return None if due is None or now is None else due - now

    def _release_due(self) -> None:
        """The public schedule: a chunk or tick whose deadline passed is released now with what is
        known, gaze or not; not while gaze is queued (it is read first: none that arrived is left out)."""
        if not self._queue_empty:
            return
        wait = self._until_due()
        if wait is not None and wait <= 0:
            now = self.schedule_now()
            assert now is not None
            self.session.advance_to(now)

    def _disconnect(self) -> None:
        self.connected.clear()
        self._reads.reset()  # a new segment's gaze sets the schedule's clock again
        for s in (self._sub, self._req):
            if s is not None:
                s.close(linger=0)
        self._sub = self._req = None
        if self._backbone is not None:
            self._backbone.close()
        if self.watch is not None:
            self.watch.close()

    # ---------------------------------------------------------------- the loop

    def run(self) -> SessionCounters:
        """Relay until :meth:`stop`. Returns the counters."""
        backoff, attempts = 0.1, 0
        last_status = time.monotonic()
        try:
            while not self._stop.is_set():
                if self._sub is None:
                    try:
                        self._connect()
                        backoff, attempts = 0.1, 0
                    except (RemoteUnavailable, ValueError) as exc:
                        attempts += 1
                        self._disconnect()
                        if self.on_waiting is None:
                            log.warning("%s; retrying in %.1f s", exc, backoff)
                        else:
                            self.on_waiting(exc, attempts)
                        self._stop.wait(backoff)
                        backoff = min(backoff * 2, 5.0)
                        continue
                assert self._sub is not None
                quiet = time.monotonic() - self._last_gaze
                timeout = max(0.0, self.heartbeat - quiet)
                wait = self._until_due()
                if wait is not None:
                    timeout = min(timeout, max(0.0, wait))
                # a tick's deadline is a time to wake and read, not to read every burst before it
                pause = self._reads.pause(wait=self._until_due(chunks_only=True), timeout=timeout)
                if pause > 0:  # a sleep, not the stop event's wait: its Python costs ~25 µs at a wake a tick
                    time.sleep(pause)
                    timeout = max(0.0, timeout - pause)
                if self._stop.is_set():
                    break
                if self._sub.poll(math.ceil(timeout * 1000)):
                    self._drain()
                    self._last_gaze = time.monotonic()
                else:
                    self._queue_empty = True
                self._release_due()
                if time.monotonic() - self._clock.read_at >= self.heartbeat and self._sub is not None:
                    self._check_clock()
                if self.watch is not None and time.monotonic() >= self.watch.due:
                    self.watch.poll()  # Pupil Remote restarted? (a few times a second, not per message)
                if time.monotonic() - self._last_gaze >= self.heartbeat and not self._stop.is_set():
                    self._check_alive()
                    self._last_gaze = time.monotonic()
                if time.monotonic() - last_status > self.status_interval:
                    # (un)subscriptions read when they are told, not at every wake (the publisher reads them itself)
                    last_status = time.monotonic()
                    status = self.session.publish_status(StatusEvent.RUNNING, self.subscribers())
                    log.info("relay: %s", status)
        finally:
            self._disconnect()
            self.session.publish_status(StatusEvent.STOPPED, self.subscribers())
            log.info("relay stopped: %s", self.counters)
        return self.counters

    def _check_clock(self, sync: bool = False, restart: bool = True) -> float | None:
        """Every heartbeat, and when gaze leaps past a chunk's deadline (``restart=False``: the session asks, and
        starts the new segment itself): a jump of Pupil time beyond the reorder window (``T``, Time Sync's jump)
        starts a new segment, as in the Capture plugin; Time Sync's slews continue. The jump (s), if any."""
        try:
            jump = self._sync_clock(sync)
        except (RemoteUnavailable, ValueError) as exc:
            log.warning("%s: Capture's clock not re-read", exc)
            return None
        if jump is not None:
            log.warning("Pupil time jumped by %+.3f s (T or Time Sync): new segment", jump)
            if restart and self.session.counters.restarts == self._restarts_read:  # not already, at its gaze
                self.session.restart(StatusEvent.CAPTURE_RESTARTED)
            self.session.publish_status(StatusEvent.CLOCK_JUMPED, self.subscribers())  # one line a jump
            self._reads.reset()
        self._restarts_read = self.session.counters.restarts
        return jump

    def _check_alive(self) -> None:
        """Ask Pupil Remote for the backbone's port: no answer means Capture is gone, another
        port means it restarted (and answers ``t`` again) while our subscription points nowhere."""
        try:
            port = int(self._request("SUB_PORT"))
        except (RemoteUnavailable, ValueError) as exc:
            log.warning("%s: reconnecting, the feature windows restart", exc)
            self.session.restart(StatusEvent.RECONNECTING)
        else:
            if port == self._sub_port:
                self._check_clock(sync=True)  # gaze is quiet: the mapping is read afresh
                return
            log.warning("Pupil Capture restarted (SUB_PORT %d, was %d): new segment", port, self._sub_port)
            self.session.restart(StatusEvent.CAPTURE_RESTARTED)
        self._disconnect()

    def _drain(self, limit: int = 2_000) -> None:
        assert self._sub is not None
        self._batch_received = time.monotonic()
        self.session.receive_frames(self._pending(self._sub, limit))
        newest = self.session.newest_gaze
        if newest is not None:
            self._reads.seen(newest)
        self._shed_if_behind()

    def _behind(self) -> float:
        """Seconds between Capture's clock and the newest gaze the session has (0 if unknown)."""
        now, newest = self.pupil_now(), self.session.newest_gaze
        return 0.0 if now is None or newest is None else now - newest

    def _shed_if_behind(self) -> None:
        if self._behind() <= self.max_backlog:
            return
        assert self._sub is not None
        recv, shed = self._sub.recv_multipart, 0
        while True:  # undecoded: the cheapest way back to the present
            try:
                recv(zmq.NOBLOCK, copy=False)
            except zmq.Again:
                break
            shed += 1
        if shed:
            self.session.counters.shed += shed
            log.warning("relay: %.1f s behind Capture's clock: %d queued messages shed", self._behind(), shed)

    def _pending(self, sub: zmq.Socket, limit: int) -> Iterator[list[bytes]]:
        """The messages already queued (at most ``limit``), decoded one by one as they are read."""
        # Cython recv/get, not recv_multipart (its option lookups cost more than the frames); one
        # zmq.Again per read, not an EVENTS query per message (ZeroMQ's command queue: ~2 µs each)
        recv, get = sub.recv, sub.get
        self._queue_empty = False
        for _ in range(limit):
            try:
                frames = [recv(_NOBLOCK)]
            except zmq.Again:
                self._queue_empty = True
                return
            while get(_RCVMORE):
                frames.append(recv())
            self._batch_received = time.monotonic()
            yield frames

    def _released(self, release: PrivateRelease) -> None:
        if self.on_release is not None:
            self.on_release(release, self._batch_received)
