"""Group feature rows into non-overlapping chunks of n consecutive steps (n a power of two)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .base import Stage
from .features import FeatureRows


@dataclass(frozen=True, eq=False)
class Chunk:
    """n consecutive steps: times (n,) and unsanitized values (n, F). Never leaves the device."""

    t: NDArray[np.float64]
    values: NDArray[np.float64]


class Chunker(Stage[FeatureRows, "list[Chunk]"]):
    """FeatureRows in, finished chunks out (a :class:`~streamdp.stages.base.Stage`).

    Chunks are the public slots of the step grid: chunk ``c`` holds steps ``k ∈ [c·n, (c+1)·n)``
    with ``t_k = k · step`` (:mod:`streamdp.stages.schedule`). Steps before the first slot that
    starts after the stream's first row, steps before a jump in the grid and a partial slot at
    the end are never released and are counted in ``dropped_steps`` (local), which counts across
    streams (:meth:`flush` keeps it; :meth:`reset` clears it). The private pipeline emits every
    step of the grid, so only the first partial slot and the last are dropped there.

    Raises
    ------
    TypeError, ValueError
        ``chunk_length`` is not a power of two ≥ 2, or ``step`` is not a finite number > 0.

    Examples
    --------
    >>> import numpy as np
    >>> chunker = Chunker(4, step=0.5)
    >>> rows = FeatureRows(np.arange(1, 14) * 0.5, np.zeros((13, 52)))
    >>> [c.t.tolist() for c in chunker.update(rows)]
    [[2.0, 2.5, 3.0, 3.5], [4.0, 4.5, 5.0, 5.5]]
    >>> chunker.flush(), chunker.dropped_steps
    ([], 5)
    """

    def __init__(self, chunk_length: int, step: float) -> None:
        from ..privacy.mechanisms import check_chunk_length

        if isinstance(step, bool) or not isinstance(step, (int, float)):
            raise TypeError(f"Chunker step must be a number, got {step!r}")
        if not (math.isfinite(step) and step > 0):
            raise ValueError(f"Chunker step must be finite and > 0, got {step!r}")
        self.chunk_length = check_chunk_length(chunk_length)
        self.step = float(step)
        self.reset()

    def reset(self) -> None:
        """Forget the stream and the count of dropped steps, as a freshly built chunker."""
        self.dropped_steps = 0
        self._clear()

    def _clear(self) -> None:
        self._t: list[NDArray[np.float64]] = []
        self._v: list[NDArray[np.float64]] = []
        self._held = 0
        self._next_k: int | None = None  # the step the held rows continue with

    def update(self, rows: FeatureRows) -> list[Chunk]:
        """Take the next feature rows; return the chunks they completed."""
        if len(rows) == 0:
            return []
        n = self.chunk_length
        k = np.rint(rows.t / self.step).astype(np.int64)
        jumps = np.flatnonzero(np.diff(k) != 1) + 1
        out: list[Chunk] = []
        for a, b in zip([0, *jumps.tolist()], [*jumps.tolist(), len(k)], strict=True):
            if self._next_k is not None and int(k[a]) != self._next_k:
                self.dropped_steps += self._held
                self._t, self._v, self._held, self._next_k = [], [], 0, None
            if self._next_k is None:  # start at the next slot boundary
                skip = min(b - a, int(-k[a] % n))
                self.dropped_steps += skip
                a += skip
                if a == b:
                    continue
            out.extend(self._take(rows.t[a:b], rows.values[a:b]))
            self._next_k = int(k[b - 1]) + 1
        return out

    def _take(self, t: NDArray[np.float64], v: NDArray[np.float64]) -> list[Chunk]:
        self._t.append(t)
        self._v.append(v)
        self._held += len(t)
        n = self.chunk_length
        if self._held < n:
            return []
        tt = np.concatenate(self._t)
        vv = np.concatenate(self._v)
        full = (len(tt) // n) * n
        chunks = [Chunk(tt[i : i + n], vv[i : i + n]) for i in range(0, full, n)]
        self._t, self._v = [tt[full:]], [vv[full:]]
        self._held = len(tt) - full
        return chunks

    def flush(self) -> list[Chunk]:
        """End of stream: the partial chunk is dropped (counted in ``dropped_steps``); nothing is
        returned, since nothing partial is ever released."""
        self.dropped_steps += self._held
        self._clear()
        return []
