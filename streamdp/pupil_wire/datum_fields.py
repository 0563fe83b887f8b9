"""One datum's fields, read and checked: numbers, the pupil diameters of its base data, and the eye
and the detector's diameter unit its topic names. The decoder and the blink pairing read with
these; where a field must be there, one that is missing, wrongly typed or not finite is an
:class:`~streamdp.errors.InputError` naming where it was read."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeGuard

from ..errors import InputError
from ..gaze import BINOCULAR, UNKNOWN_EYE, DiameterUnit


def _number(value: Any, where: str, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"{where}: field {field!r} is {value!r}, not a number")
    v = float(value)
    if not math.isfinite(v):
        raise InputError(f"{where}: field {field!r} is {v!r}, not a finite number")
    return v


def _positive(v: object) -> TypeGuard[float]:
    """A usable diameter: a finite number > 0 (``0 < v < inf`` is False for NaN)."""
    if type(v) is float:
        return 0.0 < v < math.inf
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _diameters(datum: Mapping[str, Any]) -> tuple[float, float]:
    """(diameter_3d mm, diameter px) averaged over the datum's pupil base data; NaN where absent."""
    base = datum.get("base_data")
    if isinstance(base, Mapping):
        base = (base,)
    elif type(base) is not list and not isinstance(base, tuple):
        return math.nan, math.nan
    mm = px = 0.0
    n_mm = n_px = 0
    for b in base:
        if type(b) is not dict and not isinstance(b, Mapping):
            continue
        v = b.get("diameter_3d")
        if _positive(v):
            mm += v
            n_mm += 1
        v = b.get("diameter")
        if _positive(v):
            px += v
            n_px += 1
    return (mm / n_mm if n_mm else math.nan, px / n_px if n_px else math.nan)


def _detector_unit(topic: object) -> DiameterUnit | None:
    s = str(topic)
    return "mm" if s.startswith("gaze.3d.") else "px" if s.startswith("gaze.2d.") else None


_EYE_OF_TOPIC: dict[object, int] = {}


def _eye(topic: object) -> int:
    eye = _EYE_OF_TOPIC.get(topic) if type(topic) is str else None
    if eye is None:
        eye = _eye_of(topic)
        if type(topic) is str and len(_EYE_OF_TOPIC) < 64:  # a handful of topics in practice
            _EYE_OF_TOPIC[topic] = eye
    return eye


def _eye_of(topic: object) -> int:
    s = str(topic)
    if s.endswith("01."):
        return BINOCULAR
    if s[-2:-1] in ("0", "1") and s.endswith("."):
        return int(s[-2])
    return UNKNOWN_EYE


def _checked_fields(datum: object, where: str) -> tuple[float, float, float, float]:
    """(t, x, y, confidence) of a gaze datum that failed the fast type checks, or an error."""
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
    return t, x, y, conf
