"""Empirical privacy audit: a high-confidence lower bound on the ε a mechanism really gives.

For one feature, the audit picks a worst-case pair of neighbouring chunks ``x, x'`` inside the
bounds: the vertex of the box of allowed differences that maximizes the L1 distance of the
released coefficients (the one behind the exact sensitivity). It runs the mechanism many times on
each and applies the likelihood-ratio test for the noise the mechanism *claims*: the statistic
``Σ_j (|c_j − a'_j| − |c_j − a_j|)`` over the released coefficients ``c`` (recovered from the
output), where ``a, a'`` are the noiseless coefficients. For any threshold, ε-DP implies
``FPR ≥ e^{-ε}(1 − FNR)``. Clopper–Pearson intervals (confidence ``1 − α``) turn the observed rates
into a lower bound ``ε_lb = ln((1 − FNR_upper) / FPR_upper)``; the threshold is chosen on one half
of the runs and evaluated on the other, so the choice does not bias the bound.

A correct mechanism gives ``ε_lb ≤ ε`` (with probability ``≥ 1 − α``); a broken one (noise too
small, e.g. a DFT without its √n) gives ``ε_lb`` above the claim, which the tests check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.stats import beta

from .mechanisms import FourierPerturbation, Mechanism, Steil
from .transforms import make_transform

_F64 = NDArray[np.float64]


def clopper_pearson_upper(k: int, n: int, alpha: float) -> float:
    """One-sided upper confidence bound ``1 − α`` on a binomial proportion."""
    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


@dataclass(frozen=True)
class AuditResult:
    mechanism: str
    config: dict[str, Any]
    epsilon_claimed: float
    epsilon_lower_bound: float
    runs: int
    confidence: float

    @property
    def passed(self) -> bool:
        return self.epsilon_lower_bound <= self.epsilon_claimed


def _worst_pair(mech: Mechanism) -> tuple[_F64, _F64]:
    """Two neighbouring inputs of the perturbation (n, 1), at the worst-case vertex of the box of
    allowed differences: for CFPA/DCFPA the chunk ``x̂`` the guarantee is stated on (values, or
    first value and differences), for LPA and Steil the values."""
    b = mech.bounds
    n = mech.chunk_length
    lo, hi = float(b.lo[0]), float(b.hi[0])
    if isinstance(mech, FourierPerturbation):
        t = make_transform(mech.transform, n, int(mech.k_candidates.max()))
        r = float(b.step_bound[0])
        half = np.full(n, r if mech.differences else (hi - lo) / 2)
        centre = np.zeros(n) if mech.differences else np.full(n, (lo + hi) / 2)
        half[0] = (hi - lo) / 2
        centre[0] = (lo + hi) / 2
        d = _best_vertex(t.matrix, 2 * half)  # a vertex of the box of differences
        x = centre - d / 2
        return x[:, None], (x + d)[:, None]
    return np.full((n, 1), lo), np.full((n, 1), hi)


def _best_vertex(a: _F64, widths: _F64) -> _F64:
    m = a.shape[0]
    if m <= 16:
        best, best_s = -1.0, np.ones(m)
        for code in range(1 << (m - 1)):
            signs = np.array([1.0] + [1.0 - 2.0 * ((code >> i) & 1) for i in range(m - 1)])
            v = float(np.abs(signs @ a) @ widths)
            if v > best:
                best, best_s = v, signs
        return widths * np.sign(best_s @ a + 1e-300)
    s = np.sign(a.sum(axis=1) + 1e-300)
    for _ in range(50):  # alternate: d = w·sign(Aᵀs), s = sign(A d)
        d = widths * np.sign(s @ a + 1e-300)
        s_new = np.sign(a @ d + 1e-300)
        if np.array_equal(s_new, s):
            break
        s = s_new
    return d


def _run(mech: Mechanism, x: _F64, rng: np.random.Generator) -> _F64:
    """One output of the mechanism's perturbation on ``x``, as what carries the noise: the released
    coefficients for CFPA/DCFPA, the drawn values for Steil, every value for LPA."""
    if isinstance(mech, FourierPerturbation):
        y, _ = mech.perturb(x, rng)
        return mech.coefficients(y)[:, 0]
    out = mech.privatize(x, rng).values[:, 0]
    return out[:: mech.window] if isinstance(mech, Steil) else out


def _noiseless(mech: Mechanism, x: _F64) -> _F64:
    if isinstance(mech, FourierPerturbation):
        return mech.coefficients(mech.noiseless(x))[:, 0]
    out = np.clip(x, mech.bounds.lo, mech.bounds.hi)[:, 0]
    return out[:: mech.window] if isinstance(mech, Steil) else out


def _statistic(c: _F64, a0: _F64, a1: _F64) -> _F64:
    """Laplace likelihood-ratio statistic (large: looks like ``a1``), rows are runs."""
    return np.sum(np.abs(c - a0) - np.abs(c - a1), axis=1)


def audit(mech: Mechanism, runs: int = 20000, alpha: float = 0.01, seed: int = 0) -> AuditResult:
    """Lower bound on the ε of a one-feature mechanism, with confidence ``1 − alpha``.

    Raises
    ------
    ValueError
        The mechanism has more than one feature (audit one feature at a time:
        ``bounds=profile.select([f])``), or chooses k privately (its released set varies).
    """
    from .noise import secure_generator

    if mech.n_features != 1:
        raise ValueError(f"audit needs a one-feature mechanism, got {mech.n_features} features")
    if getattr(mech, "k_private", False):
        raise ValueError("audit needs a fixed k")
    rng = secure_generator(seed)
    x, y = _worst_pair(mech)
    out_x = np.asarray([_run(mech, x, rng) for _ in range(runs)])
    out_y = np.asarray([_run(mech, y, rng) for _ in range(runs)])
    sx = _statistic(out_x, _noiseless(mech, x), _noiseless(mech, y))
    sy = _statistic(out_y, _noiseless(mech, x), _noiseless(mech, y))
    half = runs // 2
    eps_lb = _best_threshold_bound(sx[:half], sy[:half], sx[half:], sy[half:], alpha)
    return AuditResult(mech.name, mech.describe(), mech.epsilon, eps_lb, runs, 1 - alpha)


def _best_threshold_bound(sx_a: _F64, sy_a: _F64, sx_b: _F64, sy_b: _F64, alpha: float) -> float:
    """Choose the threshold on (sx_a, sy_a), report the bound on (sx_b, sy_b)."""
    cands = np.quantile(np.concatenate((sx_a, sy_a)), np.linspace(0.005, 0.995, 199))
    n = sx_a.size

    def bound(sx: _F64, sy: _F64, tau: float, nn: int) -> float:
        # test "output came from y" when statistic > tau: FPR on x-runs, FNR on y-runs
        fp = int(np.count_nonzero(sx > tau))
        fn = int(np.count_nonzero(sy <= tau))
        fpr_u = clopper_pearson_upper(fp, nn, alpha / 2)
        fnr_u = clopper_pearson_upper(fn, nn, alpha / 2)
        best = 0.0
        if fpr_u > 0 and fnr_u < 1:
            best = max(best, math.log((1 - fnr_u) / fpr_u))
        # and the mirrored test
        if fnr_u > 0 and fpr_u < 1:
            best = max(best, math.log((1 - fpr_u) / fnr_u))
        return best

    # pick the threshold by a point estimate on the first half
    def point(tau: float) -> float:
        fp = int(np.count_nonzero(sx_a > tau))
        fn = int(np.count_nonzero(sy_a <= tau))
        return max(math.log((n - fn + 0.5) / (fp + 0.5)), math.log((n - fp + 0.5) / (fn + 0.5)))

    tau = max(cands, key=point)
    return bound(sx_b, sy_b, float(tau), sx_b.size)


__all__ = ["AuditResult", "audit", "clopper_pearson_upper"]
