"""The statistics of the audit: Clopper–Pearson bounds, the ε bound of a threshold test chosen on one
sample and measured on another, and a confidence interval on a Laplace noise scale.

ε-DP implies, for any event ``S`` of the output and neighbouring inputs ``x, x'``,
``P(S | x) ≤ e^ε P(S | x')``. Observed frequencies of ``S`` under each input turn, with one-sided
Clopper–Pearson bounds, into a lower bound on ε that holds with confidence ``1 − α``. The event is
chosen on a *selection* sample and counted on an independent *evaluation* sample, so the choice
does not bias the bound (Jagielski et al. 2020; Nasr et al. 2021).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta, gamma

_F64 = NDArray[np.float64]

#: quantiles of the pooled selection statistic tried as thresholds
THRESHOLD_QUANTILES = np.linspace(0.002, 0.998, 250)


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided upper confidence bound ``1 − α`` on a binomial proportion seen ``k`` times in ``n``.

    Examples
    --------
    >>> round(clopper_pearson_upper(0, 100, 0.05), 4)
    0.0295
    >>> clopper_pearson_upper(100, 100, 0.05)
    1.0
    """
    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


def clopper_pearson_lower(k: int, n: int, alpha: float) -> float:
    """One-sided lower confidence bound ``1 − α`` on a binomial proportion seen ``k`` times in ``n``.

    Examples
    --------
    >>> clopper_pearson_lower(0, 100, 0.05)
    0.0
    """
    if k <= 0:
        return 0.0
    return float(beta.ppf(alpha, k, n - k + 1))


def epsilon_bound(hits_x: int, n_x: int, hits_y: int, n_y: int, alpha: float) -> float:
    """Lower bound ``1 − α`` on ε from an event seen ``hits_x`` times in ``n_x`` runs on ``x`` and
    ``hits_y`` times in ``n_y`` runs on ``x'``: ``ln(p_y,lower / p_x,upper)``, at least 0.

    Examples
    --------
    >>> epsilon_bound(0, 1000, 1000, 1000, 0.05) > 5
    True
    >>> epsilon_bound(500, 1000, 500, 1000, 0.05)
    0.0
    """
    lower = clopper_pearson_lower(hits_y, n_y, alpha / 2)
    upper = clopper_pearson_upper(hits_x, n_x, alpha / 2)
    if lower <= 0.0:
        return 0.0
    return max(0.0, math.log(lower / upper))


def epsilon_estimate(hits_x: int, n_x: int, hits_y: int, n_y: int) -> float:
    """Point estimate ``ln(p_y / p_x)`` of the same event, with half a count added to each side."""
    return max(0.0, math.log(((hits_y + 0.5) / (n_y + 1)) / ((hits_x + 0.5) / (n_x + 1))))


@dataclass(frozen=True)
class ThresholdTest:
    """The event ``statistic > threshold`` (or ``≤`` when ``above`` is false), and which input's runs
    it favours: the bound compares its frequency under ``x'`` with that under ``x`` (``towards_y``)
    or the reverse."""

    threshold: float
    above: bool
    towards_y: bool

    def hits(self, s: _F64) -> int:
        return int(np.count_nonzero(s > self.threshold if self.above else s <= self.threshold))


def best_test(sx: _F64, sy: _F64, alpha: float) -> tuple[ThresholdTest, float]:
    """The threshold test with the highest ε bound on this (selection) sample, and that bound.

    ``sx`` and ``sy`` are one statistic on the runs of ``x`` and of ``x'``; both tails and both
    directions are tried, at quantiles of the pooled values (and at the midpoint of two values
    when the statistic takes only a few, e.g. an exactly reproduced field).
    """
    pooled = np.concatenate((sx, sy))
    cands = np.unique(np.quantile(pooled, THRESHOLD_QUANTILES))
    values = np.unique(pooled)
    if values.size <= 64:
        cands = np.unique(np.concatenate((cands, (values[:-1] + values[1:]) / 2)))
    sx_sorted, sy_sorted = np.sort(sx), np.sort(sy)
    above_x = sx.size - np.searchsorted(sx_sorted, cands, side="right")
    above_y = sy.size - np.searchsorted(sy_sorted, cands, side="right")
    best, best_eps = ThresholdTest(float(cands[0]), True, True), -1.0
    # rank by the point estimate, then bound only the best few (beta quantiles are slow-ish)
    options = []
    for above, hx_all, hy_all in ((True, above_x, above_y), (False, sx.size - above_x, sy.size - above_y)):
        for towards_y in (True, False):
            a, b = (hx_all, hy_all) if towards_y else (hy_all, hx_all)
            na, nb = (sx.size, sy.size) if towards_y else (sy.size, sx.size)
            # Clopper–Pearson-like shrinkage: rank by the bound's own shape, not a raw ratio
            score = np.log((b + 0.5) / (nb + 1)) - np.log((a + 2.0) / (na + 1))
            for i in np.argsort(score)[-2:]:
                options.append((ThresholdTest(float(cands[i]), above, towards_y), int(a[i]), na, int(b[i]), nb))
    for test, a_hits, na, b_hits, nb in options:
        eps = epsilon_bound(a_hits, na, b_hits, nb, alpha)
        if eps > best_eps:
            best, best_eps = test, eps
    return best, max(best_eps, 0.0)


def evaluate_test(test: ThresholdTest, sx: _F64, sy: _F64, alpha: float) -> tuple[float, float]:
    """The ε lower bound (confidence ``1 − α``) and point estimate of ``test`` on an evaluation sample."""
    hx, hy = test.hits(sx), test.hits(sy)
    if not test.towards_y:
        hx, hy = hy, hx
        nx, ny = sy.size, sx.size
    else:
        nx, ny = sx.size, sy.size
    return epsilon_bound(hx, nx, hy, ny, alpha), epsilon_estimate(hx, nx, hy, ny)


def laplace_scale_interval(abs_residuals: _F64, alpha: float) -> tuple[float, float, float]:
    """Maximum-likelihood Laplace scale from absolute deviations about a known centre, with its
    two-sided ``1 − α`` interval: ``Σ|z|/λ`` is Gamma(N, 1) for N Laplace draws of scale λ.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> lo, mle, hi = laplace_scale_interval(np.abs(rng.laplace(0, 2.0, 20000)), 0.01)
    >>> lo < 2.0 < hi and abs(mle - 2.0) < 0.05
    True
    """
    z = np.asarray(abs_residuals, dtype=np.float64).ravel()
    n = z.size
    total = float(z.sum())
    if n == 0:
        raise ValueError("laplace_scale_interval needs at least one residual")
    return (
        total / float(gamma.ppf(1.0 - alpha / 2, n)),
        total / n,
        total / float(gamma.ppf(alpha / 2, n)),
    )


__all__ = [
    "ThresholdTest",
    "best_test",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "epsilon_bound",
    "epsilon_estimate",
    "evaluate_test",
    "laplace_scale_interval",
]
