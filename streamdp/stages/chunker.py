"""Group feature rows into non-overlapping chunks of n consecutive steps (n a power of two)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .features import FeatureRows


@dataclass(frozen=True, eq=False)
class Chunk:
    """n consecutive steps: times (n,) and unsanitized values (n, F). Never leaves the device."""

    t: NDArray[np.float64]
    values: NDArray[np.float64]


class Chunker:
    """FeatureRows in, finished chunks out (stage contract).

    A chunk holds consecutive steps only: when the step times jump (a segment restarted after a
    gap), the partial chunk before the jump is dropped and counted in ``dropped_steps``, as is a
    partial chunk at the end of the stream. Nothing partial is ever released.
    """

    def __init__(self, chunk_length: int, step: float) -> None:
        from ..privacy.mechanisms import check_chunk_length

        self.chunk_length = check_chunk_length(chunk_length)
        self.step = float(step)
        self.reset()

    def reset(self) -> None:
        self._t: list[NDArray[np.float64]] = []
        self._v: list[NDArray[np.float64]] = []
        self._held = 0
        self._last_t: float | None = None
        self.dropped_steps = 0

    def update(self, rows: FeatureRows) -> list[Chunk]:
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
        self.dropped_steps += self._held
        self._t, self._v, self._held = [], [], 0
        self._last_t = None
        return []
