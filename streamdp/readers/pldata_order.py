"""The gaze of a ``.pldata`` file in time order, a block at a time, in bounded memory.

Capture writes gaze in the order it publishes it: roughly time order, monocular gaze up to ~90 ms
behind binocular gaze already written. :func:`~streamdp.readers.pupil.read_pldata_gaze` reads the
whole file and sorts it, refusing a datum more than
:data:`~streamdp.readers._checks.PLDATA_REORDER_TOLERANCE` behind one written before it.
:class:`OrderedPldataGaze` gives the same rows in the same order without holding the file: it
reads blocks (:func:`~streamdp.readers.pupil.iter_pldata_gaze_columns`) and holds back the newest
``tolerance`` (+ :data:`MARGIN`) s of gaze. A datum the whole-file reader would still sort lies at
most ``tolerance`` behind the newest one read, so it always lands among the held rows; anything
farther back ("late") is what the whole-file reader refuses.

It checks as it goes what the whole-file reader checks at the end, and where it finds something
that reader refuses, or might (a late datum, a damaged record, an implausible sampling rate, no
usable gaze, a count that disagrees with ``_timestamps.npy``, a first gaze datum whose topic names
no detector, gaze beyond the public plausibility bounds of :mod:`streamdp.plausibility`), it raises
:class:`NotStreamable`: the caller reads the file whole, which refuses it in its own words (or, in
the cases it cannot decide here, reads it; implausible gaze it counts and says).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import DiameterUnit, GazeColumns
from ..plausibility import MAX_GAP_S, MAX_SAMPLES_PER_SECOND, implausible
from ._checks import MAX_RATE_HZ, MIN_RATE_HZ, PLDATA_REORDER_TOLERANCE
from ._pldata_blocks import BLOCK_BYTES

#: held beyond the tolerance (s), so that rounding in ``newest - tolerance`` never releases a row
#: a datum within the tolerance could still precede
MARGIN = 1e-3
#: distinct timestamps per step of :func:`~streamdp.readers._checks.typical_step`
_K = 8


class NotStreamable(Exception):
    """The file holds something the whole-file reader refuses or might; read it whole."""


class _StepCounts:
    """Whether the median of :func:`~streamdp.readers._checks.typical_step`'s steps lies in the
    plausible range, decided from counts over the ordered stream: the median is at least ``lo``
    exactly when at most ``(n - 1) // 2`` of the ``n`` steps lie below it (both middle values of
    an even count then do), and likewise at most ``hi``."""

    def __init__(self) -> None:
        self.tail = np.empty(0)
        self.distinct = 0
        self.steps = 0
        self.low = 0
        self.high = 0

    def add(self, t: NDArray[np.float64]) -> None:
        if not t.size:
            return
        first = np.ones(t.size, dtype=bool)
        first[1:] = t[1:] != t[:-1]
        u = t[first]
        if self.tail.size and u[0] == self.tail[-1]:
            u = u[1:]
        x = np.concatenate((self.tail, u))
        steps = (x[_K:] - x[:-_K]) / _K
        self.steps += steps.size
        self.low += int(np.count_nonzero(steps < 1.0 / MAX_RATE_HZ))
        self.high += int(np.count_nonzero(steps > 1.0 / MIN_RATE_HZ))
        self.distinct += u.size
        self.tail = x[-_K:]

    def surely_plausible(self) -> bool:
        if self.distinct <= _K:
            return False  # typical_step uses fewer steps then: let the whole-file reader decide
        half = (self.steps - 1) // 2
        return self.low <= half and self.high <= half


class OrderedPldataGaze:
    """The gaze of a ``.pldata`` file as time-ordered columns, a block at a time.

    Iterating yields :class:`~streamdp.gaze.GazeColumns` in time order, each datum once, stably
    sorted as :func:`~streamdp.readers.pupil.read_pldata_gaze` sorts the whole file, with the
    pupil diameter in the column of the file's unit only (as
    :meth:`GazeColumns.from_batch <streamdp.gaze.GazeColumns.from_batch>` of that reader's
    batch). Memory: a block of the file and ``tolerance`` s of gaze, whatever the file's length.
    After a complete iteration ``count``, ``first``, ``last`` and ``unit`` describe the gaze.

    Parameters
    ----------
    path : path
        A ``.pldata`` file.
    block_bytes : int
        Bytes of the file read at a time.
    tolerance : float
        How far (s) a datum may lie behind one written before it (the whole-file reader's).

    Raises
    ------
    NotStreamable
        While iterating: the file holds something the whole-file reader refuses or might (see
        the module's description); ``late`` counts the datums found too far back.

    Examples
    --------
    >>> import msgpack, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gaze.pldata"
    >>> datum = lambda t: msgpack.packb(("gaze.3d.01.", msgpack.packb(
    ...     {"topic": "gaze.3d.01.", "timestamp": t, "confidence": 0.9, "norm_pos": [0.4, 0.6]})))
    >>> _ = path.write_bytes(b"".join(datum(1.0 + 0.005 * i) for i in (0, 2, 1, *range(3, 40))))
    >>> gaze = OrderedPldataGaze(path)
    >>> t = np.concatenate([cols.t for cols in gaze])
    >>> bool(np.all(np.diff(t) > 0)), gaze.count, gaze.unit
    (True, 40, 'mm')
    """

    def __init__(
        self, path: str | Path, *, block_bytes: int = BLOCK_BYTES, tolerance: float = PLDATA_REORDER_TOLERANCE
    ) -> None:
        self.path = Path(path)
        self.block_bytes = block_bytes
        self.tolerance = tolerance
        self.count = 0
        self.late = 0
        self.first = math.nan
        self.last = math.nan
        self.unit: DiameterUnit | None = None
        self._usable = False
        self._steps = _StepCounts()
        self._second = (math.nan, 0)  # the second of the last sample released, and its samples so far

    def __iter__(self) -> Iterator[GazeColumns]:
        from .pupil import iter_pldata_gaze_columns

        self.count, self.late, self._usable, self._steps = 0, 0, False, _StepCounts()
        self._second = (math.nan, 0)
        held = GazeColumns.empty()
        newest = -math.inf
        try:
            for block in iter_pldata_gaze_columns(self.path, block_bytes=self.block_bytes):
                cols = block.columns
                if not len(cols):
                    continue
                if self.unit is None:
                    if block.unit is None:
                        raise NotStreamable(f"{self.path}: the first gaze datums name no detector (2d or 3d)")
                    self.unit = block.unit
                t = cols.t
                if not np.all(np.isfinite(t)):
                    raise NotStreamable(f"{self.path}: a timestamp that is not a finite number")
                # the whole-file reader's check, carried across blocks: behind the latest before
                before = np.maximum.accumulate(np.concatenate(([newest], t)))[:-1]
                late = int(np.count_nonzero(before - t > self.tolerance))
                if late:
                    self.late += late
                    raise NotStreamable(f"{self.path}: {late} gaze datums more than {self.tolerance:g} s late")
                newest = max(newest, float(t.max()))
                held = GazeColumns.concat([held, cols])
                held = held.take(np.argsort(held.t, kind="stable"))
                cut = int(np.searchsorted(held.t, newest - self.tolerance - MARGIN, side="left"))
                if cut:
                    yield self._release(held.take(slice(0, cut)))
                    held = held.take(slice(cut, None))
            if len(held):
                yield self._release(held)
        except InputError as exc:
            raise NotStreamable(str(exc)) from None
        self._finish()

    def _release(self, cols: GazeColumns) -> GazeColumns:
        assert self.unit is not None
        batch = cols.to_batch(self.unit, str(self.path))  # the whole-file reader's row checks
        self._check_plausible(batch.t, batch.x, batch.y, batch.diameter, batch.diameter_unit)
        if self.count == 0:
            self.first = float(batch.t[0])
        self.last = float(batch.t[-1])
        self.count += len(batch)
        self._usable = self._usable or bool(np.any(batch.valid & (batch.confidence > 0.0)))
        self._steps.add(batch.t)
        return GazeColumns.from_batch(batch)

    def _check_plausible(
        self, t: NDArray[np.float64], x: NDArray[np.float64], y: NDArray[np.float64], d: NDArray[np.float64], unit: str
    ) -> None:
        """Refuse to stream gaze beyond the public plausibility bounds, here or across the blocks
        released before (the whole-file reader counts it and says so)."""
        gap = self.count > 0 and float(t[0]) - self.last > MAX_GAP_S
        second, seen = self._second
        same = np.floor(t) == second
        if np.all(same):
            self._second = (second, seen + len(t))
        else:
            last = np.floor(t[-1])
            self._second = (last, int(np.count_nonzero(np.floor(t) == last)))
        crowded = (
            seen + int(np.count_nonzero(same)) > MAX_SAMPLES_PER_SECOND or self._second[1] > MAX_SAMPLES_PER_SECOND
        )
        if gap or crowded or any(bool(m.any()) for m in implausible(t, x, y, d, unit)):
            raise NotStreamable(f"{self.path}: gaze beyond the public plausibility bounds")

    def _finish(self) -> None:
        if self.count == 0:
            raise NotStreamable(f"{self.path}: no gaze")
        ts_path = self.path.with_name(self.path.stem + "_timestamps.npy")
        if ts_path.exists():
            try:
                stamps = np.load(ts_path, mmap_mode="r").shape[0]
            except (OSError, ValueError) as exc:
                raise NotStreamable(f"{ts_path}: {exc}") from None
            if stamps != self.count:
                raise NotStreamable(f"{ts_path}: {stamps} timestamps for {self.count} gaze datums")
        if not self._steps.surely_plausible():
            raise NotStreamable(f"{self.path}: the sampling rate is not surely plausible")
        if not self._usable:
            raise NotStreamable(f"{self.path}: no usable gaze")
