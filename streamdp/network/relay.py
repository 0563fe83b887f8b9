"""``streamdp relay``: Pupil Capture's gaze in, sanitized chunks out.

The relay asks Pupil Remote for the backbone's ``SUB_PORT``, subscribes to gaze (and to blinks
when the pipeline takes the source's blinks), runs the private pipeline and publishes every
release on its own socket (and, optionally, onto Capture's backbone so that Capture records it).

Robustness, each case counted and logged:

- malformed frames (not msgpack, not a dict) and datums with missing or wrongly typed fields are
  skipped (``malformed``, ``invalid``);
- Capture publishes monocular and binocular gaze interleaved, a few ms out of order: a reorder
  buffer of ``reorder_window`` seconds sorts them; anything older than what was already fed is
  dropped (``late``);
- Capture going silent is checked with Pupil Remote's ``t``; when it does not answer the relay
  reconnects and starts a new segment (``reconnects``): windows have a gap, nothing is invented
  across it. A clock that jumps backwards (Capture restarted, or ``T`` was sent) does the same
  (``restarts``);
- slow or vanished subscribers cost bounded memory (see :class:`ReleasePublisher`);
- :meth:`Relay.stop` (SIGINT/SIGTERM in the CLI) ends the loop between two batches: a chunk is
  released whole or not at all.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import msgpack
import zmq

from ..errors import BudgetExhausted, InputError
from ..gaze import BlinkEvents
from ..pipeline import PrivatePipeline
from ..pupil_datum import BlinkPairing, Row, gaze_batch, gaze_row
from ..stages.reorder import ReorderBuffer
from .sink import ReleasePublisher, backbone_publisher

log = logging.getLogger(__name__)


@dataclass
class RelayCounters:
    received: int = 0
    malformed: int = 0
    invalid: int = 0
    late: int = 0
    released: int = 0
    dropped_steps: int = 0
    reconnects: int = 0
    restarts: int = 0
    epsilon_spent: float = 0.0
    budget_exhausted: bool = False


class RemoteUnavailable(Exception):
    """Pupil Remote did not answer in time."""


class Relay:
    """Runs ``pipeline`` on the gaze of the Capture at ``remote`` and publishes through ``sink``.

    Parameters
    ----------
    pipeline : PrivatePipeline
    sink : ReleasePublisher
    remote : str
        Pupil Remote's address (Capture's default ``tcp://127.0.0.1:50020``).
    to_backbone : bool
        Also publish releases onto Capture's backbone, where its recorder saves them.
    reorder_window : float
        Seconds of gaze held back to put interleaved datums in time order.
    heartbeat : float
        Seconds without gaze after which Pupil Remote is asked for the time.
    timeout : float
        Seconds Pupil Remote has to answer.
    """

    def __init__(
        self,
        pipeline: PrivatePipeline,
        sink: ReleasePublisher,
        *,
        remote: str = "tcp://127.0.0.1:50020",
        to_backbone: bool = False,
        reorder_window: float = 0.05,
        heartbeat: float = 1.0,
        timeout: float = 1.0,
        status_interval: float = 10.0,
        context: zmq.Context | None = None,
    ) -> None:
        self.pipeline = pipeline
        self.sink = sink
        self.remote = remote
        self.host = urlsplit(remote).hostname or "127.0.0.1"
        self.to_backbone = to_backbone
        self.reorder_window = reorder_window
        self.heartbeat = heartbeat
        self.timeout = timeout
        self.status_interval = status_interval
        self.counters = RelayCounters()
        self._ctx = context or zmq.Context.instance()
        self._stop = threading.Event()
        self.connected = threading.Event()
        self._req: zmq.Socket | None = None
        self._sub: zmq.Socket | None = None
        self._sub_port = 0
        self._backbone: zmq.Socket | None = None
        self._order = ReorderBuffer(reorder_window)
        self._blinks_on = pipeline.features.event_config.blink_source == "given"
        self._pairing = BlinkPairing()
        self._blinks: list[tuple[float, float]] = []
        self._unpack_opts: dict[str, Any] = {"raw": False, "strict_map_key": False, "use_list": True}
        #: called with each release and the monotonic time its last gaze message was received
        self.on_release: Callable[[Any, float], None] | None = None
        self._batch_received = 0.0

    # ---------------------------------------------------------------- control

    def stop(self) -> None:
        """Ask the loop to end after the batch in hand (thread- and signal-safe)."""
        self._stop.set()

    def status(self, message: str = "") -> dict[str, Any]:
        out: dict[str, Any] = asdict(self.counters)
        out["mechanism"] = self.pipeline.privatizer.mechanism.name
        out["subscribers"] = self.sink.subscriptions
        out["message"] = message
        return out

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
        sub.rcvhwm = 100_000  # ~8 min of 200 Hz gaze + pupil datums: bounded, and never hit when keeping up
        sub.connect(f"tcp://{self.host}:{sub_port}")
        sub.setsockopt_string(zmq.SUBSCRIBE, "gaze.")
        if self._blinks_on:
            sub.setsockopt_string(zmq.SUBSCRIBE, "blinks")
        self._sub = sub
        self._sub_port = sub_port
        if self.to_backbone:
            self._backbone = backbone_publisher(self._ctx, self.host, pub_port)
        self.connected.set()
        log.info("connected to Pupil Capture at %s (SUB_PORT %d, PUB_PORT %d)", self.remote, sub_port, pub_port)

    def _disconnect(self) -> None:
        self.connected.clear()
        for s in (self._sub, self._backbone, self._req):
            if s is not None:
                s.close(linger=0)
        self._sub = self._backbone = self._req = None

    # ---------------------------------------------------------------- the loop

    def run(self) -> RelayCounters:
        """Relay until :meth:`stop`. Returns the counters."""
        backoff = 0.1
        last_status = time.monotonic()
        try:
            while not self._stop.is_set():
                if self._sub is None:
                    try:
                        self._connect()
                        backoff = 0.1
                    except (RemoteUnavailable, ValueError) as exc:
                        log.warning("%s; retrying in %.1f s", exc, backoff)
                        self._disconnect()
                        self._stop.wait(backoff)
                        backoff = min(backoff * 2, 5.0)
                        continue
                assert self._sub is not None
                if self._sub.poll(int(self.heartbeat * 1000)):
                    self._drain()
                elif not self._stop.is_set():
                    self._check_alive()
                self.sink.poll_subscriptions()
                if time.monotonic() - last_status > self.status_interval:
                    last_status = time.monotonic()
                    self.sink.publish_status(self.status())
                    log.info("relay: %s", self.status())
        finally:
            self._disconnect()
            log.info("relay stopped: %s", asdict(self.counters))
        return self.counters

    def _check_alive(self) -> None:
        """Ask Pupil Remote for the backbone's port: no answer means Capture is gone, another
        port means it restarted (and answers ``t`` again) while our subscription points nowhere."""
        try:
            port = int(self._request("SUB_PORT"))
        except (RemoteUnavailable, ValueError) as exc:
            log.warning("%s: reconnecting, the feature windows restart", exc)
            self.counters.reconnects += 1
        else:
            if port == self._sub_port:
                return
            log.warning("Pupil Capture restarted (SUB_PORT %d, was %d): new segment", port, self._sub_port)
            self.counters.restarts += 1
        self._restart_stream()
        self._disconnect()

    def _drain(self, limit: int = 20_000) -> None:
        assert self._sub is not None
        rows: list[Row] = []
        for _ in range(limit):
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            self.counters.received += 1
            self._decode(frames, rows)
        self._batch_received = time.monotonic()
        if rows:
            self._ingest(rows)

    def _decode(self, frames: list[bytes], rows: list[Row]) -> None:
        try:
            topic = frames[0]
            datum = msgpack.unpackb(frames[1], **self._unpack_opts)
        except (IndexError, ValueError, TypeError, msgpack.UnpackException):
            self.counters.malformed += 1
            log.debug("skipped a malformed backbone frame")
            return
        if not isinstance(datum, dict):
            self.counters.malformed += 1
            return
        if topic.startswith(b"blinks"):
            self._blink(datum)
            return
        try:
            rows.append(gaze_row(datum, "gaze datum"))
        except InputError as exc:
            self.counters.invalid += 1
            log.debug("skipped %s", exc)

    def _blink(self, datum: dict[str, Any]) -> None:
        try:
            blink = self._pairing.add(datum, "blinks datum")
        except InputError:
            self.counters.invalid += 1
            return
        if blink is not None:
            self._blinks.append(blink)

    def _ingest(self, rows: list[Row]) -> None:
        if self._order.clock_went_back(rows):
            log.warning(
                "Pupil time went back to %.3f (fed until %.3f): new segment", rows[0][0], self._order.released_until
            )
            self.counters.restarts += 1
            self._restart_stream()
        fresh = self._order.push(rows)
        self.counters.late = self._order.late
        if fresh:
            self._feed(fresh)

    def _feed(self, rows: list[Row]) -> None:
        batch = gaze_batch(rows, f"Capture at {self.remote}", unit="mm", sort=False)
        blinks = None
        if self._blinks_on:
            blinks = BlinkEvents.from_arrays([b[0] for b in self._blinks], [b[1] for b in self._blinks])
            self._blinks = []
        try:
            releases = self.pipeline.update(batch, blinks)
        except BudgetExhausted:
            releases = []
        self._publish(releases)

    def _publish(self, releases: list[Any]) -> None:
        for rel in releases:
            if self.on_release is not None:
                self.on_release(rel, self._batch_received)
            self.sink.publish(rel)
            if self._backbone is not None:
                self._backbone.send_multipart([rel.topic.encode(), msgpack.packb(rel.to_message(), use_bin_type=True)])
            self.counters.released += 1
            self.counters.epsilon_spent = float(rel.ledger["epsilon_spent"])
        priv = self.pipeline.privatizer
        if priv.exhausted and not self.counters.budget_exhausted:
            self.counters.budget_exhausted = True
            log.error("%s", priv.exhausted_message)
            self.sink.publish_status(self.status(priv.exhausted_message or "budget exhausted"))
        self.counters.dropped_steps = self.pipeline.chunker.dropped_steps

    def _restart_stream(self) -> None:
        """Finish what the held data allow, then start a new segment with the next gaze."""
        fresh = self._order.drain()
        if fresh:
            self._feed(fresh)
        try:
            self._publish(self.pipeline.restart())
        except BudgetExhausted:
            pass
        self._order.reset()
        self._pairing = BlinkPairing()
