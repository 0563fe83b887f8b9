"""Utility as Bozkir et al. define it: the inverse of the absolute normalized mean square error.

``NMSE = (1/n) Σ (X_i − X̃_i)² / (X̄ · X̃̄)`` (their Eq. 4, with the means of Eq. 5) and
``Utility = 1/|NMSE|`` (Eq. 6), per feature over a whole signal; the paper then averages the
utility over features. NMSE is undefined where the original signal's mean is zero (e.g. a
wordbook minimum that is always 0): those features are left out, as the paper does.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def nmse(original: NDArray[np.float64], noisy: NDArray[np.float64]) -> NDArray[np.float64]:
    """NMSE per column (Eq. 4–5); NaN where the original mean is 0.

    Examples
    --------
    >>> nmse(np.array([[1.0], [3.0]]), np.array([[2.0], [2.0]])).round(3).tolist()
    [0.25]
    """
    x = np.asarray(original, dtype=np.float64)
    y = np.asarray(noisy, dtype=np.float64)
    mx = x.mean(axis=0)
    my = y.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.mean((x - y) ** 2, axis=0) / (mx * my)
    return np.where(mx != 0, out, np.nan)


def utility(original: NDArray[np.float64], noisy: NDArray[np.float64]) -> NDArray[np.float64]:
    """``1/|NMSE|`` per column (Eq. 6); NaN where undefined."""
    with np.errstate(divide="ignore"):
        return 1.0 / np.abs(nmse(original, noisy))


def mean_utility(original: NDArray[np.float64], noisy: NDArray[np.float64]) -> float:
    """The paper's summary: the mean over the features where the utility is defined and finite."""
    u = utility(original, noisy)
    u = u[np.isfinite(u)]
    return float(u.mean()) if u.size else float("nan")
