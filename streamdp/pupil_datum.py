"""Pupil Capture's gaze datum (as published on the IPC backbone and recorded in ``.pldata``) to
batch rows. Format knowledge shared by the recording reader and the live relay.

A gaze datum has ``topic`` (``gaze.3d.01.``, ``gaze.3d.0.``, ``gaze.2d.1.``…), ``norm_pos``
(world camera, origin bottom-left), ``confidence``, ``timestamp`` (Pupil time, s) and
``base_data``: the pupil datums it was mapped from, with ``diameter`` (px) and, from the 3d
detector, ``diameter_3d`` (mm).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np

from .errors import InputError
from .gaze import BINOCULAR, UNKNOWN_EYE, GazeBatch

Row = tuple[float, float, float, float, float, float, int]


def _number(value: Any, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: field {field!r} is {value!r}, not a number")
    v = float(value)
    if not math.isfinite(v):
        raise InputError(f"{where}: field {field!r} is {v!r}, not a finite number")
    return v


def _diameters(datum: Mapping[str, Any]) -> tuple[float, float]:
    """(diameter_3d mm, diameter px) averaged over the datum's pupil base data; NaN where absent."""
    base = datum.get("base_data")
    if isinstance(base, Mapping):
        base = (base,)
    if not isinstance(base, (list, tuple)):
        return math.nan, math.nan
    mm = px = 0.0
    n_mm = n_px = 0
    for b in base:
        if not isinstance(b, dict):
            continue
        v = b.get("diameter_3d")
        # `v > 0` is False for NaN; `v < inf` keeps infinities out
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf:
            mm += v
            n_mm += 1
        v = b.get("diameter")
        if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf:
            px += v
            n_px += 1
    return (mm / n_mm if n_mm else math.nan, px / n_px if n_px else math.nan)


def _eye(topic: object) -> int:
    s = str(topic)
    if s.endswith("01."):
        return BINOCULAR
    if s[-2:-1] in ("0", "1") and s.endswith("."):
        return int(s[-2])
    return UNKNOWN_EYE


def gaze_row(datum: object, where: str) -> Row:
    """(t, x, y, confidence, diameter mm, diameter px, eye id) of one gaze datum.

    Raises
    ------
    InputError
        Not a dict, a missing field, a field of the wrong type, a non-finite number, or a
        confidence outside [0, 1], named with ``where``.
    """
    if type(datum) is dict:
        # the relay's hot path: Capture's own datums, plain floats, checked without ABC lookups
        t = datum.get("timestamp")
        conf = datum.get("confidence")
        pos = datum.get("norm_pos")
        if type(t) is float and type(conf) is float and isinstance(pos, (list, tuple)) and len(pos) == 2:
            x, y = pos
            if (
                type(x) is float
                and type(y) is float
                and t - t == 0.0  # finite: inf - inf and nan - nan are nan
                and x - x == 0.0
                and y - y == 0.0
                and 0.0 <= conf <= 1.0
            ):
                mm, px = _diameters(datum)
                return t, x, y, conf, mm, px, _eye(datum.get("topic", ""))
    return _checked_row(datum, where)


def _checked_row(datum: object, where: str) -> Row:
    if not isinstance(datum, Mapping):
        raise InputError(f"{where}: a {type(datum).__name__}, not a gaze datum")
    try:
        t = _number(datum["timestamp"], where, "timestamp")
        pos = datum["norm_pos"]
        conf = _number(datum["confidence"], where, "confidence")
    except KeyError as exc:
        raise InputError(f"{where}: missing field {exc.args[0]!r}") from None
    if not (isinstance(pos, (tuple, list)) and len(pos) == 2):
        raise InputError(f"{where}: field 'norm_pos' is {pos!r}, not a pair")
    x = _number(pos[0], where, "norm_pos[0]")
    y = _number(pos[1], where, "norm_pos[1]")
    if not 0.0 <= conf <= 1.0:
        raise InputError(f"{where}: confidence {conf!r} is outside [0, 1]")
    mm, px = _diameters(datum)
    return t, x, y, conf, mm, px, _eye(datum.get("topic", ""))


def gaze_batch(rows: list[Row], source: str, unit: Literal["auto", "mm"] = "auto", sort: bool = True) -> GazeBatch:
    """Rows to a batch (sorted by time when ``sort``). ``unit="auto"``: mm where every sample with a
    diameter has ``diameter_3d``, else px (a whole recording). ``unit="mm"``: always mm, NaN where
    a datum has no ``diameter_3d`` (a live stream, whose batches must share one unit)."""
    arr = np.asarray(rows, dtype=np.float64).reshape(-1, 7)
    t, x, y, conf, mm, px, eye = arr.T
    if unit == "mm":
        diam, dunit = mm, "mm"
    else:
        use_mm = bool(np.any(np.isfinite(mm))) and bool(np.all(np.isfinite(mm) | ~np.isfinite(px)))
        diam = mm if use_mm else px
        dunit = "mm" if use_mm else ("px" if np.any(np.isfinite(px)) else "none")
    order = np.argsort(t, kind="stable") if sort else slice(None)
    return GazeBatch.from_arrays(
        t=t[order],
        x=x[order],
        y=y[order],
        confidence=conf[order],
        diameter=diam[order],
        eye_id=eye[order].astype(np.int8),
        diameter_unit=dunit,  # type: ignore[arg-type]
        source=source,
    )


def gaze_from_datums(datums: Iterable[object], source: str) -> GazeBatch:
    """Every datum to a batch, raising on the first bad one (recordings: refuse, never guess)."""
    return gaze_batch([gaze_row(d, f"{source} datum {i}") for i, d in enumerate(datums)], source)


class BlinkPairing:
    """Capture's blink detector publishes a blink as an ``onset`` datum and, later, an ``offset``
    datum (topic ``blinks``); Player stores whole blinks with ``start_timestamp`` and
    ``end_timestamp``. :meth:`add` takes either and returns a finished blink as (start, end) in
    Pupil time, or None. An offset without an onset is ignored; a second onset replaces the first.

    Raises
    ------
    InputError
        From :meth:`add`: a datum that is not a dict or whose times are not finite numbers.
    """

    def __init__(self) -> None:
        self.onset: float | None = None

    def add(self, datum: object, where: str) -> tuple[float, float] | None:
        if not isinstance(datum, Mapping):
            raise InputError(f"{where}: a {type(datum).__name__}, not a blink datum")
        if "start_timestamp" in datum and "end_timestamp" in datum:
            return (
                _number(datum["start_timestamp"], where, "start_timestamp"),
                _number(datum["end_timestamp"], where, "end_timestamp"),
            )
        t = _number(datum.get("timestamp"), where, "timestamp")
        kind = datum.get("type")
        if kind == "onset":
            self.onset = t
        elif kind == "offset" and self.onset is not None:
            start, self.onset = self.onset, None
            return start, t
        return None
