"""Neon and Invisible live, through ``pupil-labs-realtime-api`` (``pip install 'streamdp[neon]'``).

The Neon relay is an I/O shell around a :class:`~streamdp.session.Session`, like the Capture
relay: it reads the device's datums, decodes them into columns
(:class:`~streamdp.network.neon_decode.NeonDecoder`) and hands them to the session, whose sinks
publish. Reordering, a restart when the clock goes back, and the late and invalid counters all
come from the session.

The public schedule holds without gaze: the relay keeps the device's clock (Unix time; the offset
between the datums' timestamps and ``time.time()``, taken from the freshest datum) and, once the
device has nothing queued, releases every chunk whose deadline that clock has passed
(:meth:`~streamdp.session.Session.advance_to`), whether or not gaze still comes.

The device's streams fail one at a time (:class:`~streamdp.network.neon_stream.NeonStream`):
when the eye events fail, the relay says so once (the reason and how many came) and takes blinks
from confidence (:class:`~streamdp.network.neon_blinks.ConfidenceBlinks`); when gaze fails, it
ends with :class:`DeviceStreamError` naming the reason; each reconnection of a stream that
ended counts in the status' ``reconnects`` and is published as a ``reconnecting`` status.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any

import numpy as np

from ..errors import InputError, StreamdpError
from ..gaze import BlinkEvents
from ..live_pacing import FeedPacing
from ..readers.neon import INVISIBLE_SCENE_SIZE, NEON_SCENE_SIZE
from ..session import Session, SessionCounters
from ..status import SessionStatus, StatusEvent
from .neon_blinks import ConfidenceBlinks
from .neon_decode import BLINK_EVENT, NeonDecoder, mean_diameter
from .neon_stream import open_device_streams

__all__ = ["BLINK_EVENT", "DeviceStreamError", "NeonDecoder", "NeonRelay", "connect_device", "mean_diameter"]

log = logging.getLogger(__name__)


class DeviceStreamError(StreamdpError):
    """The device's gaze stream stopped for good: the message names the device and the reason."""


class NeonRelay:
    """Neon/Invisible gaze in, sanitized chunks out through ``session``'s sinks.

    Parameters
    ----------
    session : Session
        The private session (its sinks: typically a
        :class:`~streamdp.network.sink.ReleasePublisher`). Unless it has a pacing, the relay gives
        it one (a :class:`~streamdp.live_pacing.FeedPacing`: the stages run every few steps, not
        with every batch).
    device : object
        A :class:`~streamdp.network.neon_stream.NeonStream` (every datum queued, what does not fit
        counted: :attr:`dropped`), or anything with ``receive_gaze_datum(timeout_seconds)`` and
        ``receive_eye_events(timeout_seconds)``. Closed by :meth:`run` when it stops, if it has
        ``close()``. Its ``gaze_failure``, ``eye_events_failure`` and ``reconnects``, where it
        has them, are watched between batches.
    invisible : bool
        Invisible's scene camera size instead of Neon's.
    batch_seconds : float
        Gaze is handed to the session every this many seconds of device time (and whenever
        the device has nothing more to give).
    status_interval : float
        Seconds between the running status the session's sinks publish (as the Capture relay
        does); a stopped status is published when :meth:`run` ends.

    Raises
    ------
    TypeError
        ``session`` is not a :class:`~streamdp.session.Session`; ``status_interval`` is not a
        number.
    ValueError
        The session's configuration leaves the camera to the source (``camera="auto"``) but the
        session was built for another camera than the device's: build it with
        ``Session(config, camera="neon")`` (or ``"invisible"``), so that live and recorded Neon
        gaze give the same features. ``status_interval`` is not finite and > 0. The session
        detects blinks from confidence: Neon's is 1 whenever worn, so blinks come from the
        device's own blink events (``blinks="given"``).
    """

    def __init__(
        self,
        session: Session,
        device: Any,
        *,
        invisible: bool = False,
        batch_seconds: float = 0.02,
        status_interval: float = 10.0,
    ) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"session must be a Session, got {type(session).__name__}")
        if isinstance(status_interval, bool) or not isinstance(status_interval, (int, float)):
            raise TypeError(f"status_interval must be a number of seconds, got {status_interval!r}")
        if not (math.isfinite(status_interval) and status_interval > 0):
            raise ValueError(f"status_interval must be finite and > 0 seconds, got {status_interval!r}")
        camera = "invisible" if invisible else "neon"
        if session.config.camera == "auto" and session.camera != camera:
            raise ValueError(
                f"the session's scene camera is {session.camera!r} but the device is a {camera}: "
                f"build it with Session(config, camera={camera!r})"
            )
        if session.config.blinks != "given":
            raise ValueError(
                f"the session detects blinks from confidence (blinks={session.config.blinks!r}), but Neon's "
                "confidence is 1 whenever the glasses are worn: build it with blinks='given' (the device's "
                "own blink events)"
            )
        self.session = session
        session.pacing = session.pacing or FeedPacing()
        self.device = device
        self.decoder = NeonDecoder(INVISIBLE_SCENE_SIZE if invisible else NEON_SCENE_SIZE)
        self.batch_seconds = batch_seconds
        self.status_interval = float(status_interval)
        self._stop = threading.Event()
        #: device time − ``time.time()``: the largest seen since the clock last went back
        self._offset: float | None = None
        #: blinks from confidence once the device's eye events failed (None while they run)
        self.fallback_blinks: ConfidenceBlinks | None = None
        self._reconnects_seen = 0

    @property
    def counters(self) -> SessionCounters:
        return self.session.counters

    @property
    def released(self) -> int:
        return self.session.counters.released

    def stop(self) -> None:
        """Ask the loop to end after the datum in hand (thread- and signal-safe)."""
        self._stop.set()

    def subscribers(self) -> int:
        """The live subscriptions of the session's sinks that count them (ZeroMQ publishers)."""
        return sum(s.poll_subscriptions() for s in self.session.sinks if hasattr(s, "poll_subscriptions"))

    def publish_status(self, event: StatusEvent = StatusEvent.RUNNING) -> SessionStatus:
        """The session's status with the subscriber count, published through its sinks."""
        return self.session.publish_status(event, self.subscribers())

    def device_now(self) -> float | None:
        """The device's clock now (its datums' time base), as the freshest datum showed it: a
        datum is never received before it was sampled, so this is never ahead of the device.
        None before the first gaze."""
        return None if self._offset is None else time.time() + self._offset

    def _until_due(self) -> float | None:
        due, now = self.session.next_deadline, self.device_now()
        return None if due is None or now is None else due - now

    def release_due(self) -> None:
        """The public schedule: every chunk whose deadline the device's clock has passed is
        released now with what is known, gaze or not. Called when nothing is queued, so all gaze
        the device sent before now has been fed."""
        wait = self._until_due()
        if wait is not None and wait < 0:
            now = self.device_now()
            assert now is not None
            self.session.advance_to(now)

    def run(self) -> SessionCounters:
        """Relay until :meth:`stop`, publishing a running status every ``status_interval`` s and
        releasing chunks at their deadlines on the device's clock when gaze stops; then close the
        device and publish a stopped status. Returns the counters.

        Raises
        ------
        DeviceStreamError
            The device's gaze stream failed for good (what it had sent is fed first); raised
            within the 0.5 s a read waits at most."""
        last_status = time.monotonic()
        try:
            while not self._stop.is_set():
                wait = self._until_due()
                timeout = 0.5 if wait is None else min(0.5, max(0.0, wait))
                datum = self.device.receive_gaze_datum(timeout_seconds=timeout)
                # everything the device has queued, in batches: a slow pass loses nothing
                while datum is not None and not self._stop.is_set():
                    self.decoder.add_gaze(datum)
                    if self.decoder.span >= self.batch_seconds:
                        self.watch_streams(gaze=False)  # an eye-event failure counts from this batch
                        self._take_events()
                        self.feed()
                    datum = self.device.receive_gaze_datum(timeout_seconds=0.0)
                self._take_events()
                if len(self.decoder):
                    self.feed()
                self.watch_streams()
                if not self._stop.is_set():
                    self.release_due()
                if time.monotonic() - last_status >= self.status_interval:
                    last_status = time.monotonic()
                    log.info("Neon relay: %s", self.publish_status(StatusEvent.RUNNING))
        finally:
            close = getattr(self.device, "close", None)
            if callable(close):
                close()
            self.publish_status(StatusEvent.STOPPED)
            log.info("Neon relay stopped: %s", self.counters)
        return self.counters

    @property
    def dropped(self) -> int:
        """Datums the device's queue had no room for (a :class:`NeonStream`; 0 for others)."""
        return int(getattr(self.device, "dropped", 0))

    def _take_events(self) -> None:
        event = self.device.receive_eye_events(timeout_seconds=0.0)
        while event is not None:
            self.decoder.add_event(event)
            event = self.device.receive_eye_events(timeout_seconds=0.0)

    def watch_streams(self, *, gaze: bool = True) -> None:
        """Act on what the device's streams report: reconnections are counted and published, an
        eye-event failure is said once and blinks come from confidence from then on, a gaze
        failure ends the relay (with ``gaze``: the relay calls it so once the queue is drained).

        Raises
        ------
        DeviceStreamError
            ``gaze`` and the gaze stream failed for good."""
        reconnects = int(getattr(self.device, "reconnects", 0))
        if reconnects > self._reconnects_seen:
            self.session.counters.reconnects += reconnects - self._reconnects_seen
            self._reconnects_seen = reconnects
            log.warning("%s: a stream of the device ended: reconnecting (%d so far)", self.session.source, reconnects)
            self.publish_status(StatusEvent.RECONNECTING)
        events_failure = getattr(self.device, "eye_events_failure", None)
        if events_failure is not None and self.fallback_blinks is None:
            log.warning(
                "%s: %s; blinks now come from confidence (on Neon only the worn flag's drops)",
                self.session.source,
                events_failure,
            )
            self.fallback_blinks = ConfidenceBlinks(self.session)
        gaze_failure = getattr(self.device, "gaze_failure", None) if gaze else None
        if gaze_failure is not None:
            raise DeviceStreamError(f"{self.session.source}: {gaze_failure}")

    def feed(self) -> None:
        """Hand what was decoded to the session."""
        cols, blinks = self.decoder.take()
        if self.fallback_blinks is not None and len(cols):
            found = self.fallback_blinks.update(cols)
            if blinks is not None:  # events the device sent before its stream failed
                start, end = np.concatenate([blinks.start, found.start]), np.concatenate([blinks.end, found.end])
                found = BlinkEvents.from_arrays(start, end)
            blinks = found
        invalid, self.decoder.invalid = self.decoder.invalid, 0
        restarts = self.session.counters.restarts
        seen = float(cols.t.max()) - time.time() if len(cols) else None
        if seen is not None:  # the clock as this gaze shows it, before the session acts on it
            self._offset = seen if self._offset is None else max(self._offset, seen)
        self.session.receive(cols, blinks, invalid=invalid)
        if seen is not None and self.session.counters.restarts != restarts:
            self._offset = seen  # the clock went back (the session restarted): start afresh
            if self.fallback_blinks is not None:
                self.fallback_blinks.reset()


def connect_device(address: str | None) -> Any:
    """A realtime-API device, discovered on the network or at ``host[:port]``, read through a
    :class:`~streamdp.network.neon_stream.NeonStream` (every gaze datum and eye event queued).

    Raises
    ------
    InputError
        The ``neon`` extra is not installed, or no device was found.
    """
    try:
        from pupil_labs.realtime_api.simple import Device, discover_one_device
    except ImportError:
        raise InputError("Neon/Invisible live needs the optional extra: pip install 'streamdp[neon]'") from None
    if address is None:
        device = discover_one_device(max_search_duration_seconds=10.0)
        if device is None:
            raise InputError("no Neon or Invisible found on the network within 10 s")
    else:
        host, _, port = address.partition(":")
        device = Device(host, int(port or 8080))
    return open_device_streams(device)
