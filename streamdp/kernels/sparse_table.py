"""Range queries over many index ranges of an array at once, by a sparse table: the reduction of
every span of ``2**level`` consecutive values, built level by level from the one below."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
from numpy.typing import NDArray

_Reduce = Callable[[NDArray[np.float64], NDArray[np.float64]], NDArray[np.float64]]


def span_levels(
    columns: Sequence[NDArray[np.float64]], reduce: Sequence[_Reduce], top: int
) -> Iterator[tuple[int, list[NDArray[np.float64]]]]:
    """``(level, spans)`` for ``level`` 0 … ``top``: ``spans[j][i]`` is ``reduce[j]`` (an
    elementwise ufunc such as ``np.maximum``) over ``columns[j][i : i + 2**level]``. One level is
    held at a time: O(n) memory, O(n · top) time. A range ``[a, b)`` of length ``L`` is then
    ``reduce(spans[a], spans[b - 2**k])`` at ``k = floor(log2 L)``.

    Examples
    --------
    >>> [(k, s[0].tolist()) for k, s in span_levels([np.array([3.0, 1.0, 4.0, 1.0])], [np.maximum], 2)]
    [(0, [3.0, 1.0, 4.0, 1.0]), (1, [3.0, 4.0, 4.0]), (2, [4.0])]
    """
    spans = list(columns)
    for level in range(top + 1):
        if level:
            half = 1 << (level - 1)
            spans = [op(c[:-half], c[half:]) for op, c in zip(reduce, spans, strict=True)]
        yield level, spans

#: up to this many ranges, a slice's max each is quicker than the table (a live step's few:
#: ~1.5 µs a range against ~50 µs to build and read a table over a 30 s window's events)
_FEW = 32


def range_max(
    values: NDArray[np.float64], lo: NDArray[np.intp], hi: NDArray[np.intp], empty: float = 0.0
) -> NDArray[np.float64]:
    """``values[lo[i]:hi[i]].max()`` for every ``i`` (``empty`` where the range is empty).

    Maxima of the power-of-two spans over the part of ``values`` the ranges cover
    (:func:`span_levels`); each range is the larger of two spans that cover it. A few ranges are
    read slice by slice instead. NaN propagates as with ``ndarray.max``.

    Parameters
    ----------
    values : ndarray of float64, shape (n,)
    lo, hi : ndarray of int, shape (m,)
        Range bounds, ``0 <= lo <= hi <= n``.
    empty : float
        The result for an empty range.

    Returns
    -------
    ndarray of float64, shape (m,)

    Raises
    ------
    ValueError
        ``lo`` and ``hi`` differ in shape, or a range is reversed or outside ``values``.

    Examples
    --------
    >>> v = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    >>> range_max(v, np.array([0, 1, 3, 2, 7]), np.array([2, 4, 8, 2, 8])).tolist()
    [3.0, 4.0, 9.0, 0.0, 6.0]
    """
    lo, hi = np.asarray(lo, dtype=np.intp), np.asarray(hi, dtype=np.intp)
    if lo.shape != hi.shape:
        raise ValueError(f"lo and hi differ in shape: {lo.shape} and {hi.shape}")
    if (lo < 0).any() or (hi < lo).any() or (hi > values.shape[0]).any():
        raise ValueError(f"ranges must satisfy 0 <= lo <= hi <= {values.shape[0]}")
    if lo.shape[0] <= _FEW:
        pairs = zip(lo.tolist(), hi.tolist(), strict=True)
        return np.array([values[a:b].max() if b > a else float(empty) for a, b in pairs], dtype=np.float64)
    out = np.full(lo.shape, float(empty))
    full = hi > lo
    if not full.any():
        return out
    lo, hi = lo[full], hi[full]
    start = int(lo.min())
    length = hi - lo
    level = np.floor(np.log2(length)).astype(np.intp)
    a, b = lo - start, hi - start - (1 << level)
    got = np.empty(length.shape)
    covered = np.asarray(values[start : int(hi.max())], dtype=np.float64)
    for k, (spans,) in span_levels([covered], [np.maximum], int(level.max())):
        at = level == k
        if at.any():
            got[at] = np.maximum(spans[a[at]], spans[b[at]])
    out[full] = got
    return out
