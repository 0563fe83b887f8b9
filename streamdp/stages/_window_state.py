"""Running state of :class:`~streamdp.stages.features.WindowFeatures`: per-kind event columns
(windows found by two binary searches; counts from integer prefix sums, means and variances
summed over each window's own events) and the monotone queues of the sliding maxima. Private:
array-level helpers, not stages."""

from __future__ import annotations

from collections import deque

import numpy as np
from numpy.typing import NDArray

_F64 = NDArray[np.float64]


#: most window entries (steps × events) gathered at once by :meth:`EventColumn.mean_var`
_GATHER_LIMIT = 1 << 20


class EventColumn:
    """Events of one kind in end-time order, with integer prefix counts.

    Counts (and sums of 0/1 flags) come from prefix sums of integers, exact for any window.
    Means and variances are summed afresh over each window's own events, in their order: a
    float running sum would carry the rounding of every earlier event into every later window,
    so that one raw sample would change bits of windows long after the reach the ledger states
    (:mod:`streamdp.privacy.reach`). Every bit of a window's value is a function of the events in
    it alone.
    """

    def __init__(self, names: tuple[str, ...], flags: tuple[str, ...] = ()) -> None:
        self.names = names
        self.flags = flags
        self.end = np.empty(0)
        # prefix counts: of each quantity's finite values, and of each flag's true values
        self.cnt = {n: np.zeros(1, dtype=np.int64) for n in names + flags}
        self.values: dict[str, _F64] = {n: np.empty(0) for n in names}
        self.base = 0  # index of end[0] among all events of the stream

    def append(self, end: _F64, values: dict[str, NDArray[np.generic]]) -> None:
        """Events ending at ``end`` (in order, after those held): a float array per quantity of
        ``names`` and a boolean array per flag of ``flags``."""
        if end.shape[0] == 0:
            return
        self.end = np.concatenate((self.end, end))
        for n in self.names:
            v = np.asarray(values[n], dtype=np.float64)
            self.cnt[n] = np.concatenate((self.cnt[n], self.cnt[n][-1] + np.cumsum(np.isfinite(v))))
            self.values[n] = np.concatenate((self.values[n], v))
        for n in self.flags:
            self.cnt[n] = np.concatenate((self.cnt[n], self.cnt[n][-1] + np.cumsum(values[n], dtype=np.int64)))

    def bounds(self, t: _F64, window: float) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        return (
            np.searchsorted(self.end, t - window, side="right"),
            np.searchsorted(self.end, t, side="right"),
        )

    def total(self, name: str, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> _F64:
        """Number of events ``lo..hi-1`` whose flag ``name`` is true (exact integers)."""
        return (self.cnt[name][hi] - self.cnt[name][lo]).astype(np.float64)

    def mean_var(self, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> dict[str, tuple[_F64, _F64]]:
        """Mean and population variance of each quantity's finite values over events
        ``lo..hi-1`` (both 0 for none), summed afresh for each window (see the class)."""
        m = lo.shape[0]
        out = {n: (np.zeros(m), np.zeros(m)) for n in self.names}
        width = int(np.max(hi - lo, initial=0))
        if width == 0:
            return out
        rows = max(1, _GATHER_LIMIT // width)
        for a in range(0, m, rows):
            b = min(a + rows, m)
            # column k holds the events of window a + k, row j its j-th event (or padding)
            idx = lo[a:b] + np.arange(width)[:, None]
            inside = idx < hi[a:b]
            np.minimum(idx, self.end.shape[0] - 1, out=idx)
            weight = inside.astype(np.float64)
            for n in self.names:
                v = self.values[n][idx]
                count = self.cnt[n][hi[a:b]] - self.cnt[n][lo[a:b]]
                w = weight if count.sum() == inside.sum() else weight * np.isfinite(v)
                mean, var = _window_mean_var(v, w, count)
                out[n][0][a:b] = mean
                out[n][1][a:b] = var
        return out

    def trim(self, keep_from: int) -> None:
        """Forget events before local index ``keep_from`` (they left every future window)."""
        if keep_from <= 0:
            return
        self.end = self.end[keep_from:]
        for n in self.names + self.flags:
            self.cnt[n] = self.cnt[n][keep_from:]
        for n in self.names:
            self.values[n] = self.values[n][keep_from:]
        self.base += keep_from


def _window_mean_var(v: _F64, weight: _F64, count: NDArray[np.int64]) -> tuple[_F64, _F64]:
    """Mean and variance of ``v`` where ``weight`` is 1 (0: padding or not finite), column by
    column (a column: one window), shifted by the column's first value (``v[0]`` lies in the
    window whenever it holds an event) against cancellation."""
    shift = np.where(np.isfinite(v[0]), v[0], 0.0)
    d = np.nan_to_num(v - shift) * weight
    s1 = _column_sums(d)
    s2 = _column_sums(d * d)
    safe = np.maximum(count, 1)
    m = s1 / safe
    some = count > 0
    return np.where(some, m + shift, 0.0), np.where(some, np.maximum(s2 / safe - m * m, 0.0), 0.0)


def _column_sums(a: _F64) -> _F64:
    """Each column's sum, first row to last: a column's bits depend on its own values alone,
    not on how many columns there are (a reduction may sum pairwise, in an order that does)."""
    if a.shape[1] < 256:
        return np.add.accumulate(a, axis=0)[-1]
    total = a[0].copy()
    for row in a[1:]:
        total += row
    return total


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
