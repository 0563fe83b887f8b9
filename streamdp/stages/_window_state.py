"""Running state of :class:`~streamdp.stages.features.WindowFeatures`: per-kind event columns
(windows found by two binary searches; counts from integer prefix sums, means and variances
summed over each window's own events). Private: array-level helpers, not stages."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ._window_stats import window_mean_var

_F64 = NDArray[np.float64]


class EventColumn:
    """Events of one kind in end-time order, with integer prefix counts.

    Counts (and sums of 0/1 flags) come from prefix sums of integers, exact for any window.
    Means and variances come from the window's own events (:mod:`._window_stats`): a float
    running sum would carry the rounding of every earlier event into every later window, so that
    one raw sample would change bits of windows long after the reach the ledger states
    (:mod:`streamdp.privacy.reach`).
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

    def mean_var(
        self, lo: NDArray[np.intp], hi: NDArray[np.intp], t: _F64, window: float, group: float
    ) -> dict[str, tuple[_F64, _F64]]:
        """Mean and population variance of each quantity's finite values over the events
        ``lo..hi-1`` of the windows ``(t - window, t]`` (both 0 for none), from the window's own
        events and public group boundaries every ``group`` s
        (:func:`~streamdp.stages._window_stats.window_mean_var`)."""
        return window_mean_var(self.end, self.values, self.cnt, lo, hi, t, window, group)

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
