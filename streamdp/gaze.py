"""The gaze types: struct-of-arrays NumPy, never an object per sample. :class:`GazeBatch` is
validated, ordered gaze in one diameter unit; :class:`GazeColumns` is decoded gaze as it
arrives, before the reorder buffer and the choice of diameter unit."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InputError
from .frame_columns import GAZE_COLUMNS, gaze_columns, gaze_frame

if TYPE_CHECKING:
    import pandas as pd

_F64 = NDArray[np.float64]

DiameterUnit = Literal["mm", "px", "none"]

#: eye id of a gaze sample mapped from both eyes
BINOCULAR = 2
#: eye id when the source does not say
UNKNOWN_EYE = -1


def _float_array(name: str, values: ArrayLike, n: int | None) -> NDArray[np.float64]:
    arr = np.ascontiguousarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise InputError(f"GazeBatch.{name}: expected a 1-D array, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise InputError(f"GazeBatch.{name}: length {arr.shape[0]} differs from t's length {n}")
    return arr


@dataclass(frozen=True, eq=False)
class GazeBatch:
    """A batch of gaze samples, one array per field, in time order.

    Parameters
    ----------
    t : array of float
        Timestamps in seconds on the source's clock (Pupil time for Pupil Core, UTC seconds for
        Neon). Non-decreasing within the batch.
    x, y : array of float
        Gaze position, normalized to the scene camera, origin bottom-left (Pupil's ``norm_pos``).
        Off-screen values outside [0, 1] are legitimate. NaN only where ``valid`` is False.
    confidence : array of float
        Detection confidence in [0, 1]; 1.0 where the device does not report one.
    diameter : array of float
        Pupil diameter in ``diameter_unit``; NaN where unknown.
    eye_id : array of int8
        0 or 1 for a monocular sample, :data:`BINOCULAR` (2), or :data:`UNKNOWN_EYE` (-1).
    valid : array of bool
        False where the device reported no usable gaze (e.g. the headset not worn).
    diameter_unit : {"mm", "px", "none"}
        Unit of ``diameter`` for the whole batch.
    source : str
        Where the batch came from, used in error messages.

    Raises
    ------
    InputError
        Arrays of different lengths, non-finite or decreasing timestamps, confidence outside
        [0, 1], NaN positions on valid samples, or a negative diameter.

    Examples
    --------
    >>> b = GazeBatch.from_arrays(t=[0.0, 0.005], x=[0.5, 0.51], y=[0.5, 0.5])
    >>> len(b), b.duration
    (2, 0.005)
    """

    t: NDArray[np.float64]
    x: NDArray[np.float64]
    y: NDArray[np.float64]
    confidence: NDArray[np.float64]
    diameter: NDArray[np.float64]
    eye_id: NDArray[np.int8]
    valid: NDArray[np.bool_]
    diameter_unit: DiameterUnit = "none"
    source: str = field(default="gaze", compare=False)

    def __post_init__(self) -> None:
        src = self.source
        t = self.t
        n = t.shape[0]
        if not np.all(np.isfinite(t)):
            bad = int(np.flatnonzero(~np.isfinite(t))[0])
            raise InputError(f"{src}: timestamp at row {bad} is {float(t[bad])!r}, not a finite number")
        if n > 1:
            dt = np.diff(t)
            if np.any(dt < 0):
                bad = int(np.flatnonzero(dt < 0)[0]) + 1
                raise InputError(
                    f"{src}: timestamps go backwards at row {bad}: {float(t[bad - 1])!r} then {float(t[bad])!r}"
                )
        conf = self.confidence
        out = ~((conf >= 0.0) & (conf <= 1.0))
        if np.any(out):
            bad = int(np.flatnonzero(out)[0])
            raise InputError(f"{src}: confidence at row {bad} is {float(conf[bad])!r}, outside [0, 1]")
        bad_pos = self.valid & ~(np.isfinite(self.x) & np.isfinite(self.y))
        if np.any(bad_pos):
            bad = int(np.flatnonzero(bad_pos)[0])
            raise InputError(
                f"{src}: gaze position at row {bad} is ({float(self.x[bad])!r}, {float(self.y[bad])!r}) on a "
                "sample marked valid"
            )
        d = self.diameter
        if np.any(d < 0):
            bad = int(np.flatnonzero(d < 0)[0])
            raise InputError(f"{src}: pupil diameter at row {bad} is negative ({float(d[bad])!r})")
        if np.any(np.isinf(d)):
            bad = int(np.flatnonzero(np.isinf(d))[0])
            raise InputError(f"{src}: pupil diameter at row {bad} is infinite")
        if self.diameter_unit not in ("mm", "px", "none"):
            raise InputError(f"{src}: diameter_unit {self.diameter_unit!r} is not mm, px or none")
        for arr in (t, self.x, self.y, conf, d, self.eye_id, self.valid):
            arr.setflags(write=False)

    @classmethod
    def from_arrays(
        cls,
        *,
        t: ArrayLike,
        x: ArrayLike,
        y: ArrayLike,
        confidence: ArrayLike | None = None,
        diameter: ArrayLike | None = None,
        eye_id: ArrayLike | None = None,
        valid: ArrayLike | None = None,
        diameter_unit: DiameterUnit = "none",
        source: str = "gaze",
    ) -> GazeBatch:
        """Build a batch from array-likes, filling the optional fields with neutral values."""
        tt = _float_array("t", t, None)
        n = tt.shape[0]
        xx = _float_array("x", x, n)
        yy = _float_array("y", y, n)
        conf = np.ones(n) if confidence is None else _float_array("confidence", confidence, n)
        diam = np.full(n, np.nan) if diameter is None else _float_array("diameter", diameter, n)
        if eye_id is None:
            eye = np.full(n, UNKNOWN_EYE, dtype=np.int8)
        else:
            eye = np.ascontiguousarray(eye_id, dtype=np.int8)
            if eye.shape != (n,):
                raise InputError(f"{source}: eye_id has shape {eye.shape}, expected ({n},)")
        if valid is None:
            val = np.isfinite(xx) & np.isfinite(yy)
        else:
            val = np.ascontiguousarray(valid, dtype=bool)
            if val.shape != (n,):
                raise InputError(f"{source}: valid has shape {val.shape}, expected ({n},)")
        return cls(tt, xx, yy, conf, diam, eye, val, diameter_unit, source)

    @classmethod
    def empty(cls, diameter_unit: DiameterUnit = "none", source: str = "gaze") -> GazeBatch:
        return cls.from_arrays(t=[], x=[], y=[], diameter_unit=diameter_unit, source=source)

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def to_pandas(self) -> pd.DataFrame:
        """The batch as a DataFrame of :data:`~streamdp.frame_columns.GAZE_COLUMNS`, the diameter
        unit and source in ``attrs`` (also :func:`streamdp.frames.gaze_to_pandas`; needs the
        ``pandas`` extra)."""
        return gaze_frame({name: getattr(self, name) for name in GAZE_COLUMNS}, self.diameter_unit, self.source)

    @classmethod
    def from_pandas(cls, df: pd.DataFrame, *, diameter_unit: str | None = None, source: str | None = None) -> GazeBatch:
        """A batch from a DataFrame with ``t``, ``x``, ``y`` and optional columns
        (:func:`streamdp.frames.gaze_from_pandas`).

        Raises
        ------
        InputError
            A missing, unknown or non-numeric column, named.
        """
        return cls.from_arrays(**gaze_columns(df, diameter_unit=diameter_unit, source=source))

    @property
    def duration(self) -> float:
        return float(self.t[-1] - self.t[0]) if len(self) else 0.0

    def slice(self, start: int, stop: int) -> GazeBatch:
        """Rows ``start:stop`` as a new batch (read-only views, no copy)."""
        # rows of a checked batch are checked: no second pass over them (the stages cut a long
        # batch at every chunk, and checking each remainder again was quadratic in its length)
        part = object.__new__(GazeBatch)
        for f in fields(self):
            value = getattr(self, f.name)
            object.__setattr__(part, f.name, value[start:stop] if isinstance(value, np.ndarray) else value)
        return part

    def split(self, sizes: ArrayLike) -> list[GazeBatch]:
        """Split into consecutive batches at the given cumulative row indices."""
        cuts = [0, *np.asarray(sizes, dtype=np.int64).tolist(), len(self)]
        return [self.slice(a, b) for a, b in itertools.pairwise(cuts)]

    @staticmethod
    def concat(batches: list[GazeBatch]) -> GazeBatch:
        """Join batches in order; they must share a diameter unit."""
        if not batches:
            return GazeBatch.empty()
        units = {b.diameter_unit for b in batches}
        if len(units) > 1:
            raise InputError(f"cannot join gaze batches with diameter units {sorted(units)}")
        return GazeBatch(
            np.concatenate([b.t for b in batches]),
            np.concatenate([b.x for b in batches]),
            np.concatenate([b.y for b in batches]),
            np.concatenate([b.confidence for b in batches]),
            np.concatenate([b.diameter for b in batches]),
            np.concatenate([b.eye_id for b in batches]),
            np.concatenate([b.valid for b in batches]),
            batches[0].diameter_unit,
            batches[0].source,
        )


@dataclass(frozen=True, eq=False)
class BlinkEvents:
    """Blinks given by a source (Pupil's blink detector, Neon): onset and offset times in s."""

    start: NDArray[np.float64]
    end: NDArray[np.float64]

    def __post_init__(self) -> None:
        if self.start.shape != self.end.shape or self.start.ndim != 1:
            raise InputError("blinks: start and end must be 1-D arrays of one length")
        if np.any(~np.isfinite(self.start)) or np.any(~np.isfinite(self.end)):
            raise InputError("blinks: non-finite onset or offset time")
        if np.any(self.end < self.start):
            bad = int(np.flatnonzero(self.end < self.start)[0])
            raise InputError(f"blinks: blink {bad} ends ({self.end[bad]}) before it starts")

    @classmethod
    def from_arrays(cls, start: ArrayLike, end: ArrayLike) -> BlinkEvents:
        s = np.asarray(start, dtype=np.float64)
        e = np.asarray(end, dtype=np.float64)
        order = np.argsort(e, kind="stable")
        return cls(s[order], e[order])


@dataclass(frozen=True, eq=False)
class Recording:
    """A whole recording in memory: its gaze, and the blinks its source detected if any."""

    gaze: GazeBatch
    blinks: BlinkEvents | None
    name: str
    #: add to a timestamp to get Unix time in s, where the recording says
    wall_clock_offset: float | None = None
    #: the scene camera (a key of ``CAMERA_FOV_DEG``) where the format tells it
    camera: str | None = None


@dataclass(frozen=True, eq=False)
class GazeColumns:
    """Decoded gaze, one array per field, in arrival order (not yet sorted or unit-resolved).

    Unlike :class:`~streamdp.gaze.GazeBatch` it keeps both pupil diameters, ``diameter_mm``
    (``diameter_3d``) and ``diameter_px``, because a live stream's unit is decided only once its
    first diameter arrives (see :func:`choose_diameter_unit`).
    """

    t: _F64
    x: _F64
    y: _F64
    confidence: _F64
    diameter_mm: _F64
    diameter_px: _F64
    eye_id: NDArray[np.int8]
    valid: NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @classmethod
    def from_arrays(
        cls,
        *,
        t: ArrayLike,
        x: ArrayLike,
        y: ArrayLike,
        confidence: ArrayLike,
        diameter_mm: ArrayLike,
        diameter_px: ArrayLike,
        eye_id: ArrayLike,
        valid: ArrayLike,
    ) -> GazeColumns:
        return cls(
            np.asarray(t, dtype=np.float64),
            np.asarray(x, dtype=np.float64),
            np.asarray(y, dtype=np.float64),
            np.asarray(confidence, dtype=np.float64),
            np.asarray(diameter_mm, dtype=np.float64),
            np.asarray(diameter_px, dtype=np.float64),
            np.asarray(eye_id, dtype=np.int8),
            np.asarray(valid, dtype=bool),
        )

    @classmethod
    def empty(cls) -> GazeColumns:
        e = np.empty(0)
        return cls(e, e, e, e, e, e, np.empty(0, dtype=np.int8), np.empty(0, dtype=bool))

    @classmethod
    def from_batch(cls, batch: GazeBatch) -> GazeColumns:
        """A batch's rows as columns; its diameter goes to the column of its unit."""
        nan = np.full(len(batch), np.nan)
        mm = batch.diameter if batch.diameter_unit == "mm" else nan
        px = batch.diameter if batch.diameter_unit == "px" else nan
        return cls(batch.t, batch.x, batch.y, batch.confidence, mm, px, batch.eye_id, batch.valid)

    @staticmethod
    def concat(parts: Sequence[GazeColumns]) -> GazeColumns:
        parts = [p for p in parts if len(p)]
        if not parts:
            return GazeColumns.empty()
        if len(parts) == 1:
            return parts[0]
        return GazeColumns(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIELDS))

    def take(self, index: NDArray[np.intp] | slice) -> GazeColumns:
        return GazeColumns(*(getattr(self, f)[index] for f in _FIELDS))

    def to_batch(self, unit: DiameterUnit, source: str) -> GazeBatch:
        """A validated :class:`GazeBatch` with the diameter of ``unit`` (rows must be in order).

        Raises
        ------
        InputError
            From :class:`GazeBatch`: timestamps out of order, NaN positions on valid rows, …
        """
        diameter = (
            self.diameter_mm if unit == "mm" else self.diameter_px if unit == "px" else np.full(len(self), np.nan)
        )
        x = np.where(self.valid, self.x, np.nan)
        y = np.where(self.valid, self.y, np.nan)
        return GazeBatch(self.t, x, y, self.confidence, diameter, self.eye_id, self.valid, unit, source)


_FIELDS = ("t", "x", "y", "confidence", "diameter_mm", "diameter_px", "eye_id", "valid")


def choose_diameter_unit(diameter_mm: _F64, diameter_px: _F64) -> DiameterUnit | None:
    """The unit of a stream's pupil diameters when its source does not say (time-ordered
    arrays): that of the first sample carrying a diameter, mm where it has a ``diameter_3d``,
    else px; None while no diameter has been seen. Only the first sample decides, so the unit
    never depends on how the stream was split into batches. (Pupil gaze says it in its topic,
    ``gaze.3d`` or ``gaze.2d``: see :attr:`streamdp.pupil_wire.GazeDecoder.detector_unit`.)

    Examples
    --------
    >>> nan = float("nan")
    >>> choose_diameter_unit(np.array([nan, 3.1]), np.array([40.0, 41.0]))
    'px'
    >>> choose_diameter_unit(np.array([3.0]), np.array([40.0])), choose_diameter_unit(np.array([nan]), np.array([nan]))
    ('mm', None)
    """
    has_mm = np.isfinite(diameter_mm)
    seen = np.flatnonzero(has_mm | np.isfinite(diameter_px))
    if not seen.size:
        return None
    return "mm" if has_mm[seen[0]] else "px"
