"""Means and variances over sliding windows whose every bit depends on the window's own events.

A float running sum (``s[hi] - s[lo]``) carries the rounding of every earlier event into every
later window, so one raw sample would change bits of windows long after the reach the ledger
states (:mod:`streamdp.privacy.reach`). Instead, time is cut into public groups
``(g·D, (g+1)·D]``; a window ``(t - W, t]`` is its head (the part of a group before the first
group boundary in it), the whole groups inside it, and its tail (after the last boundary). Each
part's count, mean and sum of squared deviations is computed from the part's own events, and
the parts are merged left to right (Chan et al.'s pairwise update): a function of the window's
events and of public times only. Whole groups are computed once per call; heads and tails hold
at most one group's events, so a step costs O(events per group + W / D), not O(events per window).

Private: array-level helpers of :class:`~streamdp.stages._window_state.EventColumn`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

_F64 = NDArray[np.float64]
_Idx = NDArray[np.intp]

#: most entries (ranges × events) gathered at once
_GATHER_LIMIT = 1 << 20


def window_mean_var(
    end: _F64,
    values: dict[str, _F64],
    counts: dict[str, NDArray[np.int64]],
    lo: _Idx,
    hi: _Idx,
    t: _F64,
    window: float,
    group: float,
) -> dict[str, tuple[_F64, _F64]]:
    """Mean and population variance of each quantity's finite values over the events
    ``lo..hi-1`` of the windows ``(t - window, t]`` (both 0 for none).

    ``end`` holds the events' (counted) ends in order, ``values[name]`` their values and
    ``counts[name]`` the prefix counts of the finite ones (``counts[name][i]``: among the first
    ``i``); ``group`` is the public group length ``D`` in s.
    """
    a = t - window
    g1 = np.ceil(a / group)
    g1 += g1 * group < a  # the first boundary at or after the window's start ...
    g2 = np.floor(t / group)
    g2 -= g2 * group > t  # ... and the last at or before its end
    split = g1 <= g2
    g1 = np.where(split, g1, 0.0).astype(np.int64)
    g2 = np.where(split, g2, 0.0).astype(np.int64)
    head_stop = np.where(split, np.searchsorted(end, g1 * group, side="right"), hi)
    tail_start = np.where(split, np.searchsorted(end, g2 * group, side="right"), hi)
    whole = np.where(split, g2 - g1, 0)  # whole groups g1 .. g2-1 in each window
    n_whole = int(np.max(whole, initial=0))
    # the boundaries the windows split at, not from 0: times may be Unix seconds (Neon)
    first = int(np.min(g1[split])) if split.any() else 0
    last = int(np.max(g2[split])) if split.any() else 0
    # bounds[i]: the events ending at or before boundary first + i (the same products as above)
    bounds = np.searchsorted(end, np.arange(first, last + 1) * group, side="right")
    size = end.shape[0]
    heads, tails = _plan(lo, head_stop, size), _plan(tail_start, hi, size)
    wholes = _plan(bounds[:-1], bounds[1:], size)
    out = {}
    for name, v in values.items():
        c = counts[name]
        acc = _range_stats(v, c, lo, head_stop, heads)
        if n_whole:
            groups = _range_stats(v, c, bounds[:-1], bounds[1:], wholes)
            for k in range(n_whole):
                at = np.minimum(g1 + k - first, bounds.shape[0] - 2)
                part = tuple(s[at] for s in groups)
                acc = _merge(acc, (np.where(k < whole, part[0], 0), part[1], part[2]))
        acc = _merge(acc, _range_stats(v, c, tail_start, hi, tails))
        n, mean, m2 = acc
        some = n > 0
        out[name] = (np.where(some, mean, 0.0), np.where(some, m2 / np.maximum(n, 1), 0.0))
    return out


def _merge(
    left: tuple[NDArray[np.int64], _F64, _F64], right: tuple[NDArray[np.int64], _F64, _F64]
) -> tuple[NDArray[np.int64], _F64, _F64]:
    """(count, mean, sum of squared deviations) of two consecutive parts together; an empty
    part leaves the other exactly as it is."""
    na, ma, qa = left
    nb, mb, qb = right
    n = na + nb
    safe = np.maximum(n, 1).astype(np.float64)
    d = mb - ma
    mean = ma + d * (nb / safe)
    m2 = qa + qb + d * d * (na * nb / safe)
    mean = np.where(nb == 0, ma, np.where(na == 0, mb, mean))
    m2 = np.where(nb == 0, qa, np.where(na == 0, qb, m2))
    return n, mean, m2


def _plan(start: _Idx, stop: _Idx, size: int) -> list[tuple[int, int, _Idx, _F64]]:
    """How to gather the ranges ``start_k:stop_k`` of ``size`` events, in slices of ranges
    ``a:b``: column ``i`` of ``idx`` holds range ``a + i``, row ``j`` its ``j``-th event (or
    padding, ``weight`` 0)."""
    k = start.shape[0]
    width = int(np.max(stop - start, initial=0))
    if width == 0 or size == 0:
        return []
    rows = max(1, _GATHER_LIMIT // width)
    plan = []
    for a in range(0, k, rows):
        b = min(a + rows, k)
        idx = start[a:b] + np.arange(width)[:, None]
        weight = (idx < stop[a:b]).astype(np.float64)
        np.minimum(idx, size - 1, out=idx)
        plan.append((a, b, idx, weight))
    return plan


def _range_stats(
    values: _F64, counts: NDArray[np.int64], start: _Idx, stop: _Idx, plan: list[tuple[int, int, _Idx, _F64]]
) -> tuple[NDArray[np.int64], _F64, _F64]:
    """(count, mean, sum of squared deviations) of the finite ``values[start_k:stop_k]``
    (gathered by ``plan``), two passes over each range, summed first to last."""
    n = counts[stop] - counts[start]
    mean, m2 = np.zeros(start.shape[0]), np.zeros(start.shape[0])
    for a, b, idx, weight in plan:
        v = values[idx]
        finite = np.isfinite(v)
        if not finite.all():
            weight = weight * finite
            v = np.where(finite, v, 0.0)
        safe = np.maximum(n[a:b], 1)
        mean[a:b] = _column_sums(v * weight) / safe
        d = (v - mean[a:b]) * weight
        m2[a:b] = _column_sums(d * d)
    return n, mean, m2


def _column_sums(a: _F64) -> _F64:
    """Each column's sum, first row to last: a column's bits depend on its own values alone,
    not on how many columns there are (a reduction may sum pairwise, in an order that does)."""
    if a.shape[1] < 256:
        return np.add.accumulate(a, axis=0)[-1]
    total = a[0].copy()
    for row in a[1:]:
        total += row
    return total
