"""Causal smoothing of released gaze positions: post-processing, free under differential privacy.

A per-axis median (or, for apps and the evaluation, a mean) of the last ``k`` ticks, or the
adaptive median of :mod:`streamdp.kernels.adaptive_median`, which follows a jump within one
tick. The stream's first ticks repeat the first one backwards, so the result of a stream fed in
batches, with the last ``k - 1`` positions carried as ``history``, equals that of the whole
stream at once.

Examples
--------
>>> out, history = causal_smooth(np.array([[0.0, 0.0], [9.0, 1.0]]), "median3")
>>> out.tolist(), history.tolist()
([[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [9.0, 1.0]])
>>> causal_smooth(np.array([[1.0, 1.0]]), "median3", history)[0].tolist()
[[1.0, 1.0]]
"""

from __future__ import annotations

import re

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from numpy.typing import NDArray

from .adaptive_median import adaptive_medians, few_adaptive_medians

__all__ = [
    "MAX_SMOOTHING_TICKS", "CausalMedian", "causal_smooth", "check_smoothing", "smoothing_lag", "smoothing_length",
]

#: the longest on-device median, in ticks (half a second at 60 Hz: longer lags the gaze too much)
MAX_SMOOTHING_TICKS = 31

_F64 = NDArray[np.float64]
_PATTERN = re.compile(r"^(median|mean|adaptive)(\d+)$")


def check_smoothing(name: object, *, max_ticks: int = 600, median_only: bool = False) -> str:
    """``name`` if it names a causal filter: ``"none"``, ``"median<k>"`` or ``"mean<k>"`` with
    2 ≤ k ≤ ``max_ticks``, or ``"adaptive<k>"`` (:mod:`~streamdp.kernels.adaptive_median`) with k
    odd, 3 ≤ k ≤ ``max_ticks``; ``median_only``: an odd-length median or adaptive median only (its
    output is one of its inputs, so released positions stay on the noise's lattice).

    Raises
    ------
    TypeError
        ``name`` is not a str.
    ValueError
        It names no such filter.

    Examples
    --------
    >>> check_smoothing("median9", max_ticks=31, median_only=True)
    'median9'
    >>> check_smoothing("mean9", median_only=True)
    Traceback (most recent call last):
    ...
    ValueError: smoothing must be none, median<k> or adaptive<k> with k odd, 3 ≤ k ≤ 600 ticks, got 'mean9'
    """
    if not isinstance(name, str):
        raise TypeError(f"smoothing must be a str such as 'median9' or 'none', got {name!r}")
    m = _PATTERN.match(name)
    if median_only:
        k = int(m.group(2)) if m and m.group(1) != "mean" else 0
        if name != "none" and not (3 <= k <= max_ticks and k % 2):
            raise ValueError(
                f"smoothing must be none, median<k> or adaptive<k> with k odd, 3 ≤ k ≤ {max_ticks} ticks, got {name!r}"
            )
    elif name != "none" and not (
        m and 2 <= int(m.group(2)) <= max_ticks and (m.group(1) != "adaptive" or int(m.group(2)) % 2)
    ):
        raise ValueError(
            f"filter must be none, median<k> or mean<k> with 2 ≤ k ≤ {max_ticks} ticks or adaptive<k> with k odd, "
            f"got {name!r}"
        )
    return name


def smoothing_length(name: str) -> int:
    """The ticks one filter output reads: ``k`` for ``median<k>``/``mean<k>``/``adaptive<k>``, 1
    for ``"none"``."""
    m = _PATTERN.match(name)
    return 1 if m is None else int(m.group(2))


def smoothing_lag(name: str) -> int:
    """The filter's step lag in ticks: after a noise-free step from one constant position to
    another at tick ``s``, the first tick whose output is the new position, less ``s``.

    ``(k - 1) // 2`` for ``median<k>``, ``k - 1`` for ``mean<k>`` (its output equals the new
    position once the window holds no old one), 1 for ``adaptive<k>`` with k ≥ 5 (0 for k = 1 and
    for ``"none"``; ``adaptive3`` is ``median3``: 1).

    Examples
    --------
    >>> smoothing_lag("median5"), smoothing_lag("adaptive9"), smoothing_lag("mean4"), smoothing_lag("none")
    (2, 1, 3, 0)
    """
    m = _PATTERN.match(check_smoothing(name))
    if m is None:
        return 0
    k = int(m.group(2))
    return {"median": (k - 1) // 2, "mean": k - 1, "adaptive": min(1, (k - 1) // 2)}[m.group(1)]


#: up to this many rows, an odd median is taken in Python: the live channel smooths one or two
#: ticks at a time, where NumPy's per-call cost is ten times the work
_FEW = 16


def _few_medians(values: _F64, history: _F64, k: int) -> tuple[_F64, _F64]:
    """Odd-length medians of a few rows: the middle of the sorted window, the value np.median
    returns for an odd count (one element, bit for bit)."""
    rows = history.tolist() + values.tolist()
    columns = list(zip(*rows, strict=True))
    mid = k // 2
    out = [[sorted(col[i : i + k])[mid] for col in columns] for i in range(len(values))]
    return np.array(out, dtype=np.float64).reshape(values.shape), np.array(rows[-(k - 1) :], dtype=np.float64)


def causal_smooth(values: _F64, name: str, history: _F64 | None = None) -> tuple[_F64, _F64 | None]:
    """``values`` (m, 2) filtered by ``name``, and the history the next batch needs (the last
    ``k - 1`` inputs; None for ``"none"``). ``history`` None: ``values`` start the stream."""
    k = smoothing_length(check_smoothing(name))
    if k == 1 or not len(values):
        return values, history
    if history is None:
        history = np.repeat(values[:1], k - 1, axis=0)
    if name.startswith("adaptive"):
        if values.ndim == 2 and len(values) <= _FEW:
            rows = history.tolist() + values.tolist()
            out_rows = few_adaptive_medians(rows, k, len(values))
            return np.array(out_rows, dtype=np.float64).reshape(values.shape), np.array(rows[-(k - 1) :])
        padded = np.concatenate([history, values])
        return adaptive_medians(padded, k), padded[-(k - 1) :].copy()
    if name.startswith("median") and k % 2 and values.ndim == 2 and len(values) <= _FEW:
        return _few_medians(values, history, k)
    padded = np.concatenate([history, values])
    win = sliding_window_view(padded, k, axis=0)  # (m, 2, k)
    out = np.median(win, axis=-1) if name.startswith("median") else np.mean(win, axis=-1)
    return np.asarray(out, dtype=np.float64), padded[-(k - 1) :].copy()


class CausalMedian:
    """:func:`causal_smooth` of one stream of (m, 2) positions by a median of odd length ``k``, its
    history carried between calls as Python floats: a live tick's call sorts two windows of ``k``
    floats, without NumPy's per-call cost; bit for bit the values :func:`causal_smooth` gives (an
    odd median is the middle of the sorted window).

    Examples
    --------
    >>> median = CausalMedian(3)
    >>> median(np.array([[0.0, 0.0], [9.0, 1.0]])).tolist(), median(np.array([[1.0, 1.0]])).tolist()
    ([[0.0, 0.0], [0.0, 0.0]], [[1.0, 1.0]])
    """

    def __init__(self, k: int) -> None:
        if k < 3 or k % 2 == 0:
            raise ValueError(f"k must be odd and ≥ 3, got {k!r}")
        self.k = k
        self.reset()

    def reset(self) -> None:
        """A new stream: its first position is repeated backwards."""
        self._xs: list[float] = []
        self._ys: list[float] = []

    def push(self, x: float, y: float) -> tuple[float, float]:
        """One position in, its median out: ``self(np.array([[x, y]]))`` without the arrays."""
        k = self.k
        if not self._xs:
            self._xs, self._ys = [x] * (k - 1), [y] * (k - 1)
        wx, wy = [*self._xs, x], [*self._ys, y]
        self._xs, self._ys = wx[1:], wy[1:]
        mid = k // 2
        return sorted(wx)[mid], sorted(wy)[mid]

    def __call__(self, values: _F64) -> _F64:
        m, k = len(values), self.k
        if not m:
            return values
        if m > _FEW:
            history = None if not self._xs else np.array([self._xs, self._ys], dtype=np.float64).T
            out, rest = causal_smooth(values, f"median{k}", history)
            assert rest is not None
            self._xs, self._ys = rest[:, 0].tolist(), rest[:, 1].tolist()
            return out
        xs, ys = values[:, 0].tolist(), values[:, 1].tolist()
        if not self._xs:
            self._xs, self._ys = [xs[0]] * (k - 1), [ys[0]] * (k - 1)
        wx, wy, mid = self._xs + xs, self._ys + ys, k // 2
        out = np.empty((m, 2))
        for i in range(m):
            out[i, 0] = sorted(wx[i : i + k])[mid]
            out[i, 1] = sorted(wy[i : i + k])[mid]
        self._xs, self._ys = wx[-(k - 1) :], wy[-(k - 1) :]
        return out
