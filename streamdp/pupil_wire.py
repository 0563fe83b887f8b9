"""Pupil's wire format, both ways: gaze and blink datums as Capture publishes them on its IPC
backbone and records them in ``.pldata``, decoded straight into columns, and encoded from a
recording (the simulator's side). One module, so that what the simulator sends and what the relay,
the plugin and the readers take cannot drift apart.

A gaze datum has ``topic`` (``gaze.3d.01.``, ``gaze.3d.0.``, ``gaze.2d.1.``…), ``norm_pos``
(world camera, origin bottom-left), ``confidence``, ``timestamp`` (Pupil time, s) and
``base_data``: the pupil datums it was mapped from, with ``diameter`` (px) and, from the 3d
detector, ``diameter_3d`` (mm). Frames on the backbone are ``[topic (UTF-8), msgpack(datum)]``.

Decoding keeps no Python object per sample: every field goes into a typed ``array.array`` column
as it is read, and :meth:`GazeDecoder.take` hands the columns over as NumPy arrays without a copy.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeGuard

import msgpack
import numpy as np
from numpy.typing import NDArray

from .errors import InputError
from .gaze import (
    BINOCULAR,
    UNKNOWN_EYE,
    BlinkEvents,
    DiameterUnit,
    GazeBatch,
    GazeColumns,
    Recording,
    choose_diameter_unit,
)

_F64 = NDArray[np.float64]


# ---------------------------------------------------------------- decoding


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


class GazeDecoder:
    """Gaze and blink datums in, columns out: the decoding half of the wire format.

    Bad input never stops the stream: a frame that is not msgpack or not a dict counts in
    ``malformed``, a datum with a missing, wrongly typed or non-finite field in ``invalid`` (each
    logged by the caller if it wants to); nothing already decoded is lost. With ``strict`` the
    first bad datum raises instead (recordings: refuse, never guess).

    Examples
    --------
    >>> dec = GazeDecoder()
    >>> dec.add_frames([b"gaze.3d.01.", msgpack.packb({"timestamp": 1.0, "norm_pos": [0.5, 0.5], "confidence": 0.9})])
    >>> dec.add_frames([b"gaze.3d.0.", b"\\xc1"])
    >>> cols, blinks = dec.take()
    >>> len(cols), dec.malformed, blinks
    (1, 1, None)
    """

    def __init__(self, *, strict: bool = False) -> None:
        self.strict = strict
        #: the diameter unit the gaze's pupil detector gives, from the first gaze topic that
        #: names it: mm for ``gaze.3d.*`` (``diameter_3d``), px for ``gaze.2d.*``
        self.detector_unit: DiameterUnit | None = None
        self.malformed = 0
        self.invalid = 0
        self.pairing = BlinkPairing()
        self._unpack = {"raw": False, "strict_map_key": False}
        self._clear()

    def _clear(self) -> None:
        # six doubles per sample (t, x, y, confidence, mm, px), row after row
        self._rows = array("d")
        self._eye = array("b")
        self._blink_start, self._blink_end = array("d"), array("d")
        self._had_blinks = False

    def reset(self) -> None:
        """Forget what was decoded, a blink half-paired and the detector (the source restarted)."""
        self.pairing = BlinkPairing()
        self.detector_unit = None
        self._clear()

    def add_frames(self, frames: Sequence[bytes]) -> None:
        """One backbone message: ``[topic, msgpack payload, *extra binary frames]``."""
        try:
            topic = frames[0]
            datum = msgpack.unpackb(frames[1], **self._unpack)
        except (IndexError, ValueError, TypeError, msgpack.UnpackException):
            self.malformed += 1
            return
        if type(datum) is not dict:
            self.malformed += 1
            return
        if topic[:6] == b"blinks":
            self.add_blink(datum, "blinks datum")
        else:
            self.add_gaze(datum, "gaze datum")

    def add_gaze(self, datum: object, where: str) -> None:
        if type(datum) is dict:
            # Capture's own datums are plain floats: checked here without ABC lookups
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
                    self._append(datum, t, x, y, conf)
                    return
        try:
            t, x, y, conf = _checked_fields(datum, where)
        except InputError:
            if self.strict:
                raise
            self.invalid += 1
            return
        assert isinstance(datum, Mapping)
        self._append(datum, t, x, y, conf)

    def _append(self, datum: Mapping[str, Any], t: float, x: float, y: float, conf: float) -> None:
        if self.detector_unit is None:
            self.detector_unit = _detector_unit(datum.get("topic"))
        mm, px = _diameters(datum)
        self._rows.extend((t, x, y, conf, mm, px))
        self._eye.append(_eye(datum.get("topic", "")))

    def add_blink(self, datum: object, where: str) -> None:
        try:
            blink = self.pairing.add(datum, where)
        except InputError:
            if self.strict:
                raise
            self.invalid += 1
            return
        self._had_blinks = True
        if blink is not None:
            self._blink_start.append(blink[0])
            self._blink_end.append(blink[1])

    def take(self) -> tuple[GazeColumns, BlinkEvents | None]:
        """The gaze decoded since the last call (arrival order) and the blinks finished since then
        (None when no blink datum arrived at all)."""
        n = len(self._eye)
        rows = np.frombuffer(self._rows, dtype=np.float64).reshape(n, 6) if n else np.empty((0, 6))
        t, x, y, conf, mm, px = (np.ascontiguousarray(c) for c in rows.T)
        eye = np.frombuffer(self._eye, dtype=np.int8) if n else np.empty(0, dtype=np.int8)
        cols = GazeColumns(t, x, y, conf, mm, px, eye, np.ones(n, dtype=bool))
        blinks = None
        if self._had_blinks:
            blinks = BlinkEvents.from_arrays(np.array(self._blink_start), np.array(self._blink_end))
        self._clear()
        return cols, blinks


def gaze_from_datums(datums: Iterable[object], source: str) -> GazeBatch:
    """Every gaze datum of a recording to a batch sorted by time, raising on the first bad one.

    Raises
    ------
    InputError
        A datum that is not a dict, misses a field, or holds a wrongly typed or non-finite value.
    """
    dec = GazeDecoder(strict=True)
    for i, d in enumerate(datums):
        dec.add_gaze(d, f"{source} datum {i}")
    cols, _ = dec.take()
    order = np.argsort(cols.t, kind="stable")
    cols = cols.take(order)
    unit = dec.detector_unit or choose_diameter_unit(cols.diameter_mm, cols.diameter_px) or "none"
    return cols.to_batch(unit, source)


# ---------------------------------------------------------------- encoding


def pupil_datum(eye: int, t: float, conf: float, x: float, y: float, diameter: float, unit: str) -> dict[str, Any]:
    """The pupil datum Capture would map a gaze sample from: 3d (``diameter_3d`` mm) for a
    stream in mm, 2d (``diameter`` px only) otherwise."""
    method = "3d" if unit == "mm" else "2d"
    datum: dict[str, Any] = {
        "topic": f"pupil.{eye}.{method}",
        "id": eye,
        "method": "pye3d 0.3.0 real-time" if method == "3d" else "2d c++",
        "timestamp": t,
        "confidence": conf,
        # the eye camera sees the pupil mirrored and offset; a plausible position, not the gaze
        "norm_pos": [0.5 + 0.3 * (x - 0.5), 0.5 - 0.3 * (y - 0.5)],
    }
    if math.isfinite(diameter):
        datum["diameter_3d" if unit == "mm" else "diameter"] = diameter
    return datum


def gaze_datum(
    t: float, x: float, y: float, conf: float, eyes: tuple[int, ...], base: list[dict[str, Any]], unit: str
) -> dict[str, Any]:
    """A gaze datum with Capture's fields: 3d gaze carries the eye model fields (binocular keyed
    by the strings ``"0"``/``"1"``, monocular singular), 2d gaze has none."""
    method = "3d" if unit == "mm" else "2d"
    eye_part = "01" if len(eyes) == 2 else str(eyes[0])
    datum: dict[str, Any] = {
        "topic": f"gaze.{method}.{eye_part}.",
        "norm_pos": [x, y],
        "confidence": conf,
        "timestamp": t,
        "base_data": base,
    }
    if method == "3d":
        datum["gaze_point_3d"] = [(x - 0.5) * 600.0, (0.5 - y) * 400.0, 500.0]
        centres = {"0": [20.0, 15.0, -20.0], "1": [-40.0, 15.0, -20.0]}
        if len(eyes) == 2:
            datum["eye_centers_3d"] = centres
            datum["gaze_normals_3d"] = {"0": [0.0, 0.0, 1.0], "1": [0.0, 0.0, 1.0]}
        else:
            datum["eye_center_3d"] = centres[eye_part]
            datum["gaze_normal_3d"] = [0.0, 0.0, 1.0]
    return datum


def recording_datums(recording: Recording) -> Iterator[dict[str, Any]]:
    """Every datum the recording yields, in time order, as Capture would publish it: each gaze
    sample as ``gaze.<3d|2d>.01.`` (or its eye's topic) followed by one pupil datum per eye, and
    the recording's blinks as ``blinks`` onset/offset datums. Samples without gaze are skipped:
    Capture publishes no gaze where it has none."""
    g = recording.gaze
    blinks: list[tuple[float, str]] = []
    if recording.blinks is not None:
        for s, e in zip(recording.blinks.start.tolist(), recording.blinks.end.tolist(), strict=True):
            blinks.extend(((s, "onset"), (e, "offset")))
        blinks.sort()
    bi = 0
    unit = "px" if g.diameter_unit == "px" else "mm"
    columns = (g.t, g.x, g.y, g.confidence, g.diameter, g.eye_id, g.valid)
    for t, x, y, c, d, eye, valid in zip(*(a.tolist() for a in columns), strict=True):
        while bi < len(blinks) and blinks[bi][0] <= t:
            bt, kind = blinks[bi]
            yield {"topic": "blinks", "type": kind, "timestamp": bt, "confidence": 0.9, "base_data": []}
            bi += 1
        if not valid:
            continue
        eyes = (0, 1) if eye in (BINOCULAR, UNKNOWN_EYE) else (int(eye),)
        base = [pupil_datum(e, t, c, x, y, d, unit) for e in eyes]
        yield gaze_datum(t, x, y, c, eyes, base, unit)
        yield from base


def encode(datum: Mapping[str, Any], pack: Any = None) -> list[bytes]:
    """The backbone frames of a datum: ``[topic, msgpack(datum)]``."""
    payload = (pack or msgpack.Packer(use_bin_type=True).pack)(datum)
    return [str(datum["topic"]).encode(), payload]
