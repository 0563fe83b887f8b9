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

    A chunk holds consecutive steps only: when the step times jump (a segment restarted after a
    gap), the partial chunk before the jump is dropped and counted in ``dropped_steps``, as is a
    partial chunk at the end of the stream. Nothing partial is ever released. ``dropped_steps``
    counts across streams (:meth:`flush` keeps it; :meth:`reset` clears it).

    Raises
    ------
    TypeError, ValueError
        ``chunk_length`` is not a power of two ≥ 2, or ``step`` is not a finite number > 0.

    Examples
    --------
    >>> import numpy as np
    >>> chunker = Chunker(4, step=0.5)
    >>> rows = FeatureRows(np.arange(10) * 0.5, np.zeros((10, 52)))
    >>> [c.t.tolist() for c in chunker.update(rows)]
    [[0.0, 0.5, 1.0, 1.5], [2.0, 2.5, 3.0, 3.5]]
    >>> chunker.flush(), chunker.dropped_steps
    ([], 2)
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
        self._last_t: float | None = None

    def update(self, rows: FeatureRows) -> list[Chunk]:
        """Take the next feature rows; return the chunks they completed."""
        if len(rows) == 0:
            return []
        t, v = rows.t, rows.values
        prev = np.concatenate(([self._last_t if self._last_t is not None else t[0] - self.step], t[:-1]))
        jumps = np.flatnonzero(np.abs((t - prev) - self.step) > 1e-6 * self.step)
        out: list[Chunk] = []
        start = 0
        for j in [*jumps.tolist(), len(t)]:
            if j > start:
                out.extend(self._take(t[start:j], v[start:j]))
            if j < len(t):
                self.dropped_steps += self._held
                self._t, self._v, self._held = [], [], 0
            start = j
        self._last_t = float(t[-1])
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
