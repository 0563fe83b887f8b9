"""Neon and Invisible live, through ``pupil-labs-realtime-api`` (``pip install 'streamdp[neon]'``).

Gaze arrives in scene-camera pixels with a ``worn`` flag and a Unix timestamp; Neon's
``EyestateGazeData`` also carries both pupil diameters (mm). streamdp normalizes the position by
the scene camera size with the origin at the bottom left (as Pupil Core's ``norm_pos``), marks
unworn samples invalid, averages the two diameters, and takes blinks from the device's eye events
when it sends them (``BlinkEventData``, event type 4).
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from typing import Any

from ..errors import BudgetExhausted, InputError
from ..gaze import BlinkEvents, GazeBatch
from ..pipeline import PrivatePipeline
from ..readers.neon import INVISIBLE_SCENE_SIZE, NEON_SCENE_SIZE
from .sink import ReleasePublisher

log = logging.getLogger(__name__)

BLINK_EVENT = 4


def neon_row(
    datum: Any, scene_size: tuple[float, float] = NEON_SCENE_SIZE
) -> tuple[float, float, float, float, float, bool]:
    """(t, x, y, confidence, diameter mm, valid) of one realtime-API gaze datum."""
    x = float(datum.x) / scene_size[0]
    y = 1.0 - float(datum.y) / scene_size[1]
    worn = bool(datum.worn)
    left = getattr(datum, "pupil_diameter_left", math.nan)
    right = getattr(datum, "pupil_diameter_right", math.nan)
    ds = [float(d) for d in (left, right) if d is not None and math.isfinite(d) and d > 0]
    diameter = sum(ds) / len(ds) if ds else math.nan
    valid = worn and math.isfinite(x) and math.isfinite(y)
    return float(datum.timestamp_unix_seconds), x, y, 1.0 if valid else 0.0, diameter, valid


def neon_batch(rows: list[tuple[float, float, float, float, float, bool]], source: str) -> GazeBatch:
    rows = sorted(rows)
    return GazeBatch.from_arrays(
        t=[r[0] for r in rows],
        x=[r[1] if r[5] else math.nan for r in rows],
        y=[r[2] if r[5] else math.nan for r in rows],
        confidence=[r[3] for r in rows],
        diameter=[r[4] for r in rows],
        eye_id=[2] * len(rows),
        valid=[r[5] for r in rows],
        diameter_unit="mm",
        source=source,
    )


def neon_blink(event: Any) -> tuple[float, float] | None:
    """(start, end) in Unix seconds of a blink eye event; None for other events."""
    if getattr(event, "event_type", None) != BLINK_EVENT:
        return None
    return event.start_time_ns * 1e-9, event.end_time_ns * 1e-9


class NeonRelay:
    """Neon/Invisible gaze in, sanitized chunks out (the same pipeline and sink as the relay).

    ``device`` is a ``pupil_labs.realtime_api.simple.Device`` (or anything with the same
    ``receive_gaze_datum(timeout_seconds)`` and ``receive_eye_events(timeout_seconds)``).
    """

    def __init__(
        self,
        pipeline: PrivatePipeline,
        sink: ReleasePublisher,
        device: Any,
        *,
        invisible: bool = False,
        batch_seconds: float = 0.02,
    ) -> None:
        self.pipeline = pipeline
        self.sink = sink
        self.device = device
        self.scene_size = INVISIBLE_SCENE_SIZE if invisible else NEON_SCENE_SIZE
        self.batch_seconds = batch_seconds
        self._stop = threading.Event()
        self.released = 0
        self._last_t = -math.inf
        self._blinks_on = pipeline.features.event_config.blink_source == "given"

    def stop(self) -> None:
        self._stop.set()

    def run(self, on_release: Callable[[Any], None] | None = None) -> int:
        rows: list[tuple[float, float, float, float, float, bool]] = []
        blinks: list[tuple[float, float]] = []
        while not self._stop.is_set():
            datum = self.device.receive_gaze_datum(timeout_seconds=0.5)
            if datum is not None:
                rows.append(neon_row(datum, self.scene_size))
            if self._blinks_on:
                event = self.device.receive_eye_events(timeout_seconds=0.0)
                blink = neon_blink(event) if event is not None else None
                if blink is not None:
                    blinks.append(blink)
            if rows and (datum is None or rows[-1][0] - rows[0][0] >= self.batch_seconds):
                fresh = [r for r in rows if r[0] >= self._last_t]
                rows = []
                if not fresh:
                    continue
                batch = neon_batch(fresh, "Neon realtime API")
                self._last_t = float(batch.t[-1])
                given = (
                    BlinkEvents.from_arrays([b[0] for b in blinks], [b[1] for b in blinks]) if self._blinks_on else None
                )
                blinks = []
                try:
                    releases = self.pipeline.update(batch, given)
                except BudgetExhausted:
                    releases = []
                for rel in releases:
                    self.sink.publish(rel)
                    self.released += 1
                    if on_release is not None:
                        on_release(rel)
        return self.released


def connect_device(address: str | None) -> Any:
    """A realtime-API device: discovered on the network, or at ``host[:port]``."""
    try:
        from pupil_labs.realtime_api.simple import Device, discover_one_device
    except ImportError:
        raise InputError("Neon/Invisible live needs the optional extra: pip install 'streamdp[neon]'") from None
    if address is None:
        device = discover_one_device(max_search_duration_seconds=10.0)
        if device is None:
            raise InputError("no Neon or Invisible found on the network within 10 s")
        return device
    host, _, port = address.partition(":")
    return Device(host, int(port or 8080))
