"""Running state of :class:`~streamdp.stages.features.WindowFeatures`: per-kind event columns
with prefix sums (counts, sums and variances over any window by two binary searches) and the
monotone queues of the sliding maxima. Private: array-level helpers, not stages."""

from __future__ import annotations

from collections import deque

import numpy as np
from numpy.typing import NDArray

_F64 = NDArray[np.float64]


class EventColumn:
    """Events of one kind in end-time order, with running sums of shifted values and squares."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.end = np.empty(0)
        self.shift: dict[str, float] = {}
        self.s1 = {n: np.zeros(1) for n in names}
        self.s2 = {n: np.zeros(1) for n in names}
        self.cnt = {n: np.zeros(1, dtype=np.int64) for n in names}
        self.values: dict[str, _F64] = {n: np.empty(0) for n in names}
        self.base = 0  # index of end[0] among all events of the stream

    def append(self, end: _F64, values: dict[str, _F64]) -> None:
        if end.shape[0] == 0:
            return
        self.end = np.concatenate((self.end, end))
        for n in self.names:
            v = values[n]
            finite = np.isfinite(v)
            if n not in self.shift and np.any(finite):
                self.shift[n] = float(v[finite][0])
            d = np.where(finite, v - self.shift.get(n, 0.0), 0.0)
            # continued sequentially from the last running sum: the same bits for any batch split
            self.s1[n] = np.concatenate((self.s1[n], np.cumsum(np.concatenate(([self.s1[n][-1]], d)))[1:]))
            self.s2[n] = np.concatenate((self.s2[n], np.cumsum(np.concatenate(([self.s2[n][-1]], d * d)))[1:]))
            self.cnt[n] = np.concatenate((self.cnt[n], self.cnt[n][-1] + np.cumsum(finite)))
            self.values[n] = np.concatenate((self.values[n], v))

    def bounds(self, t: _F64, window: float) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        return (
            np.searchsorted(self.end, t - window, side="right"),
            np.searchsorted(self.end, t, side="right"),
        )

    def total(self, name: str, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> _F64:
        """Sum of the finite values of events ``lo..hi-1``."""
        n = self.cnt[name][hi] - self.cnt[name][lo]
        return (self.s1[name][hi] - self.s1[name][lo]) + n * self.shift.get(name, 0.0)

    def mean_var(self, name: str, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> tuple[_F64, _F64, NDArray[np.int64]]:
        n = self.cnt[name][hi] - self.cnt[name][lo]
        s1 = self.s1[name][hi] - self.s1[name][lo]
        s2 = self.s2[name][hi] - self.s2[name][lo]
        safe = np.maximum(n, 1)
        m = s1 / safe
        var = np.maximum(s2 / safe - m * m, 0.0)
        mean = np.where(n > 0, m + self.shift.get(name, 0.0), 0.0)
        return mean, np.where(n > 0, var, 0.0), n

    def trim(self, keep_from: int) -> None:
        """Forget events before local index ``keep_from`` (they left every future window)."""
        if keep_from <= 0:
            return
        self.end = self.end[keep_from:]
        for n in self.names:
            self.s1[n] = self.s1[n][keep_from:]
            self.s2[n] = self.s2[n][keep_from:]
            self.cnt[n] = self.cnt[n][keep_from:]
            self.values[n] = self.values[n][keep_from:]
        self.base += keep_from


class SlidingMax:
    """Maximum over the events in the window, by a monotone queue of global indices."""

    def __init__(self) -> None:
        self.q: deque[int] = deque()
        self.next = 0  # global index of the next event to enter


def slide_max(state: SlidingMax, end: list[float], vals: list[float], base: int, tk: float, lo_t: float) -> None:
    q = state.q
    while state.next - base < len(end) and end[state.next - base] <= tk:
        val = vals[state.next - base]
        while q and vals[q[-1] - base] <= val:
            q.pop()
        q.append(state.next)
        state.next += 1
    while q and end[q[0] - base] <= lo_t:
        q.popleft()
