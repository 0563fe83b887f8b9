"""Realtime-API gaze datums and eye events decoded into columns (Neon and Invisible live).

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

import math
from array import array
from typing import Any

import numpy as np

from ..gaze import BINOCULAR, BlinkEvents, GazeColumns
from ..readers.neon import NEON_SCENE_SIZE, normalize_scene_pixels

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
