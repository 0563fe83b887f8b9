"""The selection check: what a privately chosen k spends, measured from the published messages.

A black-box test on ``k_chosen`` has little power: the selection's sensitivity Δ₂ is the box's
diameter, far more than any realisable pair moves the utility of one candidate, so even a
selection that spends several times its share shows a small privacy loss on real pairs. The law
of the choice is public, though: the exponential mechanism ``P(k) ∝ exp(ρ·ε_k·u_k/(2Δ₂))`` with
the mechanism's public utility ``u`` (a function of the input), its declared share ``ε_k`` and
``ρ = 1``. This check fits ``ρ`` by maximum likelihood to the k's published for known inputs, and
fails when its lower confidence bound exceeds 1: a selection that spends more than its declared
share (a missing factor 2, a halved Δ₂, ε taken whole) is found with high power, while a correct one
fails with probability about ``α``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from ..mechanisms import Mechanism
from .channel import K_CHOSEN

_F64 = NDArray[np.float64]


def _temperatures(mech: Any, x: _F64) -> _F64:
    """``ε_k·u/(2Δ₂)`` (K, F) for raw chunk ``x``: the declared law's exponents at ρ = 1."""
    xh, _ = mech._prepare(np.asarray(x, dtype=np.float64))
    u = mech._k_utility(mech._vector(xh))
    eps_k = mech._noise_epsilons * mech.k_epsilon_share
    return np.asarray(eps_k[None, :] * u / (2.0 * mech.delta2[None, :]))


def _moments(z: _F64, rho: float) -> tuple[float, float]:
    """Mean and variance, summed over columns, of the exponent ``z`` under ``P ∝ exp(ρ·z)``."""
    w = np.exp(rho * (z - z.max(axis=0)))
    p = w / w.sum(axis=0)
    mean = np.sum(p * z, axis=0)
    return float(mean.sum()), float(np.sum(p * (z - mean) ** 2))


def selection_check(
    mech: Mechanism, inputs: Sequence[_F64], fields: Sequence[list[dict[str, Any]]], alpha: float
) -> tuple[float, float, str]:
    """The selection's spend per its declared share, as ``(ρ_lower, ρ̂, note)``: ``ρ_lower > 1``
    means, with confidence ``1 − alpha``, that the choice of k spends more than its share.

    ``inputs[i]`` is a raw chunk and ``fields[i]`` the decoded fields of the messages published
    for it (each with ``ledger.k_chosen``)."""
    m: Any = mech
    candidates = np.asarray(m.k_candidates)
    released = np.asarray(m.bounds.released, dtype=bool)
    zs, chosen_z = [], 0.0
    for x, runs in zip(inputs, fields, strict=True):
        z = _temperatures(m, x)[:, released]
        ks = np.asarray([row[K_CHOSEN] for row in runs], dtype=np.int64)[:, released]  # (R, F')
        idx = np.searchsorted(candidates, ks)
        chosen_z += float(z[idx, np.arange(z.shape[1])].sum())
        zs.append((z, ks.shape[0]))

    def score(rho: float) -> tuple[float, float]:
        mean, var = 0.0, 0.0
        for z, r in zs:
            mu, v = _moments(z, rho)
            mean, var = mean + r * mu, var + r * v
        return mean, var

    lo, hi = 0.0, 1.0
    while score(hi)[0] < chosen_z and hi < 1e6:
        lo, hi = hi, hi * 2.0
    for _ in range(60):  # the expected exponent grows with ρ: bisection for the MLE
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if score(mid)[0] < chosen_z else (lo, mid)
    rho_hat = (lo + hi) / 2
    info = score(rho_hat)[1]
    se = 1.0 / np.sqrt(info) if info > 0 else np.inf
    rho_lower = max(0.0, rho_hat - float(stats.norm.ppf(1 - alpha)) * se)
    return rho_lower, rho_hat, "the selection's ρ (1: its declared share), lower bound at the audit's confidence"


__all__ = ["selection_check"]
