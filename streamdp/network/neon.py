"""Neon and Invisible live, through ``pupil-labs-realtime-api`` (``pip install 'streamdp[neon]'``).

The Neon relay is an I/O shell around a :class:`~streamdp.session.Session`, like the Capture
relay: it reads the device's datums, decodes them into columns and hands them to the session,
whose sinks publish. Reordering, a restart when the clock goes back, and the late and invalid
counters all come from the session.

The public schedule holds without gaze: the relay keeps the device's clock (Unix time; the offset
between the datums' timestamps and ``time.time()``, taken from the freshest datum) and, once the
device has nothing queued, releases every chunk whose deadline that clock has passed
(:meth:`~streamdp.session.Session.advance_to`), whether or not gaze still comes.

Gaze arrives in scene-camera pixels with a ``worn`` flag and a Unix timestamp. streamdp
normalizes the position by the scene camera size with the origin at the bottom left (as Pupil
Core's ``norm_pos``, and as :mod:`streamdp.readers.neon` does for recordings), marks unworn
samples invalid (confidence 0), averages the two pupil diameters of ``EyestateGazeData`` and its
eyelid variants (mm), and takes blinks from the device's eye events (``BlinkEventData``, event
type 4; fixation events are not used). Every gaze type of the realtime API 1.x is read:
``GazeData``, ``EyestateGazeData``, ``EyestateEyelidGazeData``, ``EyestateEyelidDualMonoGazeData``,
``BinoAndDualMonoGazeData`` by their binocular point, ``DualMonocularGazeData`` (no combined point)
by the mean of its left and right points.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from array import array
from typing import Any

import numpy as np

from ..errors import InputError
from ..gaze import BINOCULAR, BlinkEvents, GazeColumns
from ..readers.neon import INVISIBLE_SCENE_SIZE, NEON_SCENE_SIZE, normalize_scene_pixels
from ..session import Session, SessionCounters
from ..status import SessionStatus, StatusEvent
from .neon_stream import open_device_streams

log = logging.getLogger(__name__)

BLINK_EVENT = 4


class NeonDecoder:
    """Realtime-API gaze datums and eye events in, columns out, with no Python object kept per
    sample: each field goes into a typed ``array.array`` column as it is read.

    A datum without a usable timestamp or position fields counts in ``invalid`` and is skipped.

    Examples
    --------
    >>> from collections import namedtuple
    >>> Gaze = namedtuple("Gaze", "x y worn timestamp_unix_seconds")
    >>> dec = NeonDecoder()
    >>> dec.add_gaze(Gaze(800.0, 300.0, True, 1.7e9))
    >>> dec.add_gaze(Gaze(0.0, 0.0, False, 1.7e9 + 0.005))
    >>> dec.add_gaze("not a datum")
    >>> cols, blinks = dec.take()
    >>> cols.x.tolist(), cols.y.tolist(), cols.valid.tolist(), dec.invalid, blinks
    ([0.5, 0.0], [0.75, 1.0], [True, False], 1, None)
    """

    def __init__(self, scene_size: tuple[float, float] = NEON_SCENE_SIZE) -> None:
        self.scene_size = scene_size
        self.invalid = 0
        self._clear()

    def _clear(self) -> None:
        self._t, self._px, self._py = array("d"), array("d"), array("d")
        self._worn = array("b")
        self._left, self._right = array("d"), array("d")
        self._blink_start, self._blink_end = array("d"), array("d")
        self._had_blinks = False

    def __len__(self) -> int:
        return len(self._t)

    @property
    def span(self) -> float:
        """Seconds between the first and the last gaze held (0 when fewer than two)."""
        return self._t[-1] - self._t[0] if len(self._t) > 1 else 0.0

    def add_gaze(self, datum: Any) -> None:
        """One gaze datum: ``GazeData``, ``EyestateGazeData`` (and its eyelid variants), or
        ``DualMonocularGazeData``."""
        try:
            t = float(datum.timestamp_unix_seconds)
            if hasattr(datum, "x"):
                px, py = float(datum.x), float(datum.y)
            else:  # DualMonocularGazeData: left and right points only
                px = 0.5 * (float(datum.left.x) + float(datum.right.x))
                py = 0.5 * (float(datum.left.y) + float(datum.right.y))
            worn = bool(datum.worn)
        except (AttributeError, TypeError, ValueError):
            self.invalid += 1
            return
        if not math.isfinite(t):
            self.invalid += 1
            return
        left = getattr(datum, "pupil_diameter_left", None)
        right = getattr(datum, "pupil_diameter_right", None)
        self._t.append(t)
        self._px.append(px)
        self._py.append(py)
        self._worn.append(worn)
        self._left.append(_diameter(left))
        self._right.append(_diameter(right))

    def add_event(self, event: Any) -> None:
        """One eye event; only blinks are kept."""
        self._had_blinks = True
        if getattr(event, "event_type", None) != BLINK_EVENT:
            return
        try:
            start, end = event.start_time_ns * 1e-9, event.end_time_ns * 1e-9
        except (AttributeError, TypeError):
            self.invalid += 1
            return
        if not (math.isfinite(start) and math.isfinite(end) and start <= end):
            self.invalid += 1
            return
        self._blink_start.append(start)
        self._blink_end.append(end)

    def take(self) -> tuple[GazeColumns, BlinkEvents | None]:
        """The gaze decoded since the last call (arrival order) and the blinks finished since then
        (None when no eye event arrived at all)."""
        n = len(self._t)
        t = np.frombuffer(self._t, dtype=np.float64) if n else np.empty(0)
        px = np.frombuffer(self._px, dtype=np.float64) if n else np.empty(0)
        py = np.frombuffer(self._py, dtype=np.float64) if n else np.empty(0)
        worn = np.frombuffer(self._worn, dtype=np.int8).astype(bool) if n else np.empty(0, dtype=bool)
        x, y = normalize_scene_pixels(px, py, self.scene_size)
        valid = worn & np.isfinite(x) & np.isfinite(y)
        cols = GazeColumns.from_arrays(
            t=t,
            x=x,
            y=y,
            confidence=valid.astype(np.float64),
            diameter_mm=mean_diameter(
                np.frombuffer(self._left, dtype=np.float64) if n else np.empty(0),
                np.frombuffer(self._right, dtype=np.float64) if n else np.empty(0),
            ),
            diameter_px=np.full(n, np.nan),
            eye_id=np.full(n, BINOCULAR, dtype=np.int8),
            valid=valid,
        )
        blinks = None
        if self._had_blinks:
            blinks = BlinkEvents.from_arrays(np.array(self._blink_start), np.array(self._blink_end))
        self._clear()
        return cols, blinks


def _diameter(value: object) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return math.nan


def mean_diameter(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """The mean of the two pupil diameters (mm) where both are > 0, the one that is where only one
    is, NaN where neither is.

    Examples
    --------
    >>> mean_diameter(np.array([3.0, np.nan, 0.0]), np.array([3.4, 2.0, np.nan])).tolist()
    [3.2, 2.0, nan]
    """
    ok_l = np.isfinite(left) & (left > 0)
    ok_r = np.isfinite(right) & (right > 0)
    total = np.where(ok_l, left, 0.0) + np.where(ok_r, right, 0.0)
    count = ok_l.astype(np.float64) + ok_r
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1.0), np.nan)


class NeonRelay:
    """Neon/Invisible gaze in, sanitized chunks out through ``session``'s sinks.

    Parameters
    ----------
    session : Session
        The private session (its sinks: typically a
        :class:`~streamdp.network.sink.ReleasePublisher`).
    device : object
        A :class:`~streamdp.network.neon_stream.NeonStream` (every datum queued, what does not fit
        counted: :attr:`dropped`), or anything with ``receive_gaze_datum(timeout_seconds)`` and
        ``receive_eye_events(timeout_seconds)``. Closed by :meth:`run` when it stops, if it has
        ``close()``.
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
        self.device = device
        self.decoder = NeonDecoder(INVISIBLE_SCENE_SIZE if invisible else NEON_SCENE_SIZE)
        self.batch_seconds = batch_seconds
        self.status_interval = float(status_interval)
        self._stop = threading.Event()
        #: device time − ``time.time()``: the largest seen since the clock last went back
        self._offset: float | None = None

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
        device and publish a stopped status. Returns the counters."""
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
                        self._take_events()
                        self.feed()
                    datum = self.device.receive_gaze_datum(timeout_seconds=0.0)
                self._take_events()
                if len(self.decoder):
                    self.feed()
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

    def feed(self) -> None:
        """Hand what was decoded to the session."""
        cols, blinks = self.decoder.take()
        invalid, self.decoder.invalid = self.decoder.invalid, 0
        restarts = self.session.counters.restarts
        seen = float(cols.t.max()) - time.time() if len(cols) else None
        if seen is not None:  # the clock as this gaze shows it, before the session acts on it
            self._offset = seen if self._offset is None else max(self._offset, seen)
        self.session.receive(cols, blinks, invalid=invalid)
        if seen is not None and self.session.counters.restarts != restarts:
            self._offset = seen  # the clock went back (the session restarted): start afresh


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
