"""Decoding: gaze and blink datums, as Capture publishes them on its backbone and records them in
``.pldata``, straight into columns. No Python object is kept per sample: every field goes into a
typed ``array.array`` as it is read, and :meth:`GazeDecoder.take` hands the columns over as NumPy
arrays without a copy."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgpack
import numpy as np
from msgpack import unpackb
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import BlinkEvents, DiameterUnit, GazeBatch, GazeColumns, choose_diameter_unit
from .blink_pairing import BlinkPairing
from .datum_fields import _checked_fields, _detector_unit, _diameters, _eye
from .timing import BLINK_HISTORY

_F64 = NDArray[np.float64]

#: per backbone topic (bytes): (eye, the detector's diameter unit)
_TOPICS: dict[bytes, tuple[int, DiameterUnit | None]] = {}


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
        self._newest = -math.inf  # the newest gaze time decoded: when a held blink is final
        self._clear()

    def _clear(self) -> None:
        # six doubles per sample (t, x, y, confidence, mm, px), row after row
        self._rows = array("d")
        self._eye = array("b")
        self._blink_start, self._blink_end = array("d"), array("d")
        self._had_blinks = False
        #: the newest and oldest gaze time decoded since the last :meth:`take`
        self.pending_newest = -math.inf
        self.pending_oldest = math.inf

    def reset(self) -> None:
        """Forget what was decoded, a blink half-paired and the detector (the source restarted)."""
        self.pairing = BlinkPairing()
        self._newest = -math.inf
        self.detector_unit = None
        self._clear()

    def add_frames(self, frames: Sequence[bytes]) -> None:
        """One backbone message: ``[topic, msgpack payload, *extra binary frames]``.

        Capture's own gaze datums take a fast path: decoded with byte strings (no UTF-8 decoding
        of keys and of the pupil detector's strings, about a third of msgpack's time) and read
        with exact type checks. Anything that path does not accept is decoded again as text and
        goes through the checked path, which counts or raises as for any other source."""
        try:
            topic = frames[0]
            payload = frames[1]
            if topic[:5] == b"gaze." and self._fast_gaze(topic, unpackb(payload, raw=True, strict_map_key=False)):
                return
            datum = unpackb(payload, raw=False, strict_map_key=False)
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

    def _fast_gaze(self, topic: bytes, datum: object) -> bool:
        """Append a well-formed Capture gaze datum decoded with ``raw=True``; False if it is not
        one (the caller then takes the checked path)."""
        if type(datum) is not dict:
            return False
        t = datum.get(b"timestamp")
        conf = datum.get(b"confidence")
        pos = datum.get(b"norm_pos")
        if not (type(t) is float and type(conf) is float and type(pos) is list and len(pos) == 2):
            return False
        x, y = pos
        if not (
            type(x) is float
            and type(y) is float
            and t - t == 0.0  # finite: inf - inf and nan - nan are nan
            and x - x == 0.0
            and y - y == 0.0
            and 0.0 <= conf <= 1.0
        ):
            return False
        known = _TOPICS.get(topic)
        if known is None:
            text = topic.decode("utf-8", "replace")
            known = (_eye(text), _detector_unit(text))
            if len(_TOPICS) < 64:  # a handful of topics in practice
                _TOPICS[topic] = known
        if self.detector_unit is None:
            self.detector_unit = known[1]
        mm = px = 0.0
        n_mm = n_px = 0
        base = datum.get(b"base_data")
        if type(base) is list:
            for b in base:
                if type(b) is dict:
                    v = b.get(b"diameter_3d")
                    if type(v) is float:
                        if 0.0 < v < math.inf:
                            mm += v
                            n_mm += 1
                    elif v is not None:
                        return False
                    v = b.get(b"diameter")
                    if type(v) is float:
                        if 0.0 < v < math.inf:
                            px += v
                            n_px += 1
                    elif v is not None:
                        return False
                elif b is not None:
                    return False
        elif base is not None:
            return False
        self._rows.extend((t, x, y, conf, mm / n_mm if n_mm else math.nan, px / n_px if n_px else math.nan))
        self._eye.append(known[0])
        if t > self.pending_newest:
            self.pending_newest = t
        if t < self.pending_oldest:
            self.pending_oldest = t
        return True

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
        self.pending_newest = max(self.pending_newest, t)
        self.pending_oldest = min(self.pending_oldest, t)
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

    def flush_blinks(self) -> None:
        """End of stream: the blink held for a later offset (see :class:`BlinkPairing`) is final
        and goes to the next :meth:`take`."""
        blink = self.pairing.flush()
        if blink is not None:
            self._had_blinks = True
            self._blink_start.append(blink[0])
            self._blink_end.append(blink[1])

    @property
    def pending(self) -> int:
        """Gaze samples decoded since the last :meth:`take`."""
        return len(self._eye)

    @property
    def pending_blinks(self) -> bool:
        """Whether a blink datum arrived since the last :meth:`take`."""
        return self._had_blinks

    def peek(self, start: int) -> GazeColumns:
        """The gaze decoded since the last :meth:`take` from its row ``start`` on (arrival order),
        left pending for the next :meth:`take` (the live gaze channel reads each burst as it comes)."""
        rows = np.frombuffer(self._rows[6 * start :], dtype=np.float64).reshape(-1, 6)
        t, x, y, conf, mm, px = (np.ascontiguousarray(c) for c in rows.T)
        return GazeColumns(t, x, y, conf, mm, px, np.array(self._eye[start:], dtype=np.int8), np.ones(len(t), bool))

    def take(self) -> tuple[GazeColumns, BlinkEvents | None]:
        """The gaze decoded since the last call (arrival order) and the blinks finished since then
        (None when no blink datum arrived at all). A blink held for a later offset is final once
        gaze more than :data:`BLINK_HISTORY` s past its last offset arrived: by then the detector,
        publishing offsets every world frame while its filter fires, would have sent the next."""
        n = len(self._eye)
        rows = np.frombuffer(self._rows, dtype=np.float64).reshape(n, 6) if n else np.empty((0, 6))
        if n:
            self._newest = max(self._newest, float(rows[:, 0].max()))
        held = self.pairing.offset
        if held is not None and self._newest > held + BLINK_HISTORY:
            self.flush_blinks()
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
