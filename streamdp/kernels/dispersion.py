"""Dispersion-based fixation detection (I-DT, Salvucci & Goldberg 2000), vectorized.

Dispersion of a set of samples is ``(max x - min x) + (max y - min y)`` in degrees.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .sparse_table import span_levels


def window_dispersion(
    x: NDArray[np.float64], y: NDArray[np.float64], lo: NDArray[np.intp], hi: NDArray[np.intp]
) -> NDArray[np.float64]:
    """Dispersion of every inclusive index range ``[lo[i], hi[i]]``.

    Range max/min queries answered level by level of a sparse table
    (:func:`~streamdp.kernels.sparse_table.span_levels`): O(N log L) time and O(N) memory for
    ranges of at most L samples.

    Examples
    --------
    >>> x = np.array([0.0, 1.0, 0.5, 3.0]); y = np.zeros(4)
    >>> window_dispersion(x, y, np.array([0, 1]), np.array([2, 3])).tolist()
    [1.0, 2.5]
    """
    n_q = lo.shape[0]
    out = np.empty(n_q)
    if n_q == 0:
        return out
    length = hi - lo + 1
    level = np.floor(np.log2(length)).astype(np.intp)
    # max x, min x, max y, min y over spans of 2**level samples
    reduce = [np.maximum, np.minimum, np.maximum, np.minimum]
    for lev, cur in span_levels([x, x, y, y], reduce, int(level.max())):
        sel = np.flatnonzero(level == lev)
        if sel.size == 0:
            continue
        a = lo[sel]
        b = hi[sel] - (1 << lev) + 1
        # the same association as grow_extent, so both agree to the last bit
        out[sel] = (np.maximum(cur[0][a], cur[0][b]) - np.minimum(cur[1][a], cur[1][b])) + (
            np.maximum(cur[2][a], cur[2][b]) - np.minimum(cur[3][a], cur[3][b])
        )
    return out


def grow_extent(
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    breaks: NDArray[np.bool_],
    start: int,
    box: tuple[float, float, float, float],
    max_dispersion: float,
    t: NDArray[np.float64] | None = None,
    t_limit: float = np.inf,
) -> tuple[int, tuple[float, float, float, float]]:
    """Extend a fixation whose bounding box is ``box`` (max x, min x, max y, min y) over samples
    ``start, start+1, ...`` until one would push the dispersion above ``max_dispersion`` or
    ``breaks[i]`` says sample ``i`` follows a gap, or (given ``t``) its time exceeds ``t_limit``.

    Returns the index of the first sample that does not belong (``len(x)`` if all do) and the
    bounding box of the samples that do. Works in doubling blocks, so a fixation of L samples
    costs O(L) vectorized work and O(log L) calls.
    """
    n = x.shape[0]
    mx, mnx, my, mny = box
    i = start
    block = 32
    while i < n:
        j = min(n, i + block)
        cmx = np.maximum.accumulate(np.maximum(x[i:j], mx))
        cmnx = np.minimum.accumulate(np.minimum(x[i:j], mnx))
        cmy = np.maximum.accumulate(np.maximum(y[i:j], my))
        cmny = np.minimum.accumulate(np.minimum(y[i:j], mny))
        stop = ((cmx - cmnx) + (cmy - cmny) > max_dispersion) | breaks[i:j]
        if t is not None:
            stop |= t[i:j] > t_limit
        hit = np.flatnonzero(stop)
        if hit.size:
            k = int(hit[0])
            if k > 0:
                mx, mnx, my, mny = cmx[k - 1], cmnx[k - 1], cmy[k - 1], cmny[k - 1]
            return i + k, (float(mx), float(mnx), float(my), float(mny))
        mx, mnx, my, mny = cmx[-1], cmnx[-1], cmy[-1], cmny[-1]
        i = j
        block *= 2
    return n, (float(mx), float(mnx), float(my), float(mny))


def segment_mean_var(
    values: NDArray[np.float64], starts: NDArray[np.intp], stops: NDArray[np.intp]
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
    """Mean and population variance of ``values[starts[i]:stops[i]]`` ignoring NaN, two-pass.

    Segments must be non-empty. Returns (mean, var, count of finite values); mean and var are
    NaN where a segment has no finite value. The result for a segment depends only on its own
    values, so it is the same whichever array the segment is cut from.

    Examples
    --------
    >>> m, v, c = segment_mean_var(np.array([1.0, 3.0, np.nan, 5.0]), np.array([0, 2]),
    ...                            np.array([2, 4]))
    >>> m.tolist(), v.tolist(), c.tolist()
    ([2.0, 5.0], [1.0, 0.0], [2, 1])
    """
    n_seg = starts.shape[0]
    if n_seg == 0:
        return np.empty(0), np.empty(0), np.empty(0, dtype=np.intp)
    lengths = stops - starts
    offsets = np.zeros(n_seg, dtype=np.intp)
    np.cumsum(lengths[:-1], out=offsets[1:])
    gather = np.arange(int(lengths.sum())) + np.repeat(starts - offsets, lengths)
    vals = values[gather]
    finite = np.isfinite(vals)
    count = np.add.reduceat(finite.astype(np.intp), offsets)
    total = np.add.reduceat(np.where(finite, vals, 0.0), offsets)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
        dev = np.where(finite, vals - np.repeat(mean, lengths), 0.0)
        var = np.add.reduceat(dev * dev, offsets) / count
    return mean, var, count
