"""Differentially private gaze heatmaps aggregated over many observers (Liu et al. 2019).

Each observer's gaze map counts how often they looked at each of ``r`` pixels, capped at ``m``
(the map "saturates"). The aggregate ``G = (1/n) Σ G_i`` is released with noise. Unit of privacy:
**one observer** — neighbouring datasets differ in one observer's whole (capped) map, which moves
``G`` by at most ``m√r/n`` in L2 and ``m·r/n`` in L1.

- Laplace (Liu Theorem 3.5): noise level ``σ_L ≥ √2·m·r/(εn)``, i.e. Laplace scale
  ``b = m·r/(nε) = Δ₁/ε`` per pixel: ε-DP.
- Gaussian (Liu Theorem 3.4): ``σ_N ≥ (m/(nε))·√(r(ε/2 + ln(r/δ)))``. The proof bounds
  ``P(‖v‖₂ > T)`` by a union over pixels of ``P(|v_j| > T)``, which does not hold (``‖v‖₂ > T``
  only forces some ``|v_j| > T/√r``), so the theorem's σ is not always enough. streamdp checks it
  against the exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Theorem 8) for
  L2 sensitivity ``m√r/n`` and uses the larger of the two σ: (ε, δ)-DP either way.

Noise is drawn on a power-of-two lattice (discrete Laplace / discrete Gaussian) with the rounding
charged to the sensitivity, as in :mod:`streamdp.privacy.noise`.

Algorithm 1 of the paper picks the cap ``m`` minimising the expected MSE (Theorem 4.1:
``m²σ*² + (1/r)Σ(G^{(m)} − G)²``) from the observers' own maps. That choice reads the private
data and is not covered by the guarantee (as choosing k from the data is not): streamdp offers it
for offline analysis and marks a release that used it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .mechanisms.heatmap import (
    HeatmapGaussian,
    HeatmapLaplace,
    HeatmapMechanism,
    analytic_gaussian_sigma,
    gaussian_delta,
    liu_gaussian_sigma,
)

_F64 = NDArray[np.float64]


def gaze_map(x: _F64, y: _F64, shape: tuple[int, int], cap: int) -> _F64:
    """One observer's map: counts of positions per pixel (normalized x, y with origin bottom-left;
    row 0 is the top of the image), capped at ``cap``. Positions off the image are ignored."""
    h, w = shape
    ok = np.isfinite(x) & np.isfinite(y) & (x >= 0) & (x < 1) & (y > 0) & (y <= 1)
    col = np.minimum((x[ok] * w).astype(np.intp), w - 1)
    row = np.minimum(((1.0 - y[ok]) * h).astype(np.intp), h - 1)
    counts = np.zeros(h * w)
    np.add.at(counts, row * w + col, 1.0)
    return np.minimum(counts, cap).reshape(h, w)


def expected_mse(maps: _F64, cap: int, sigma_star: float) -> float:
    """Liu et al. Theorem 4.1: ``m²σ*² + (1/r) Σ_j (G^{(m)}(j) − G(j))²``."""
    arr = np.asarray(maps, dtype=np.float64)
    full = arr.mean(axis=0)
    capped = np.minimum(arr, cap).mean(axis=0)
    return float(cap * cap * sigma_star * sigma_star + np.mean((capped - full) ** 2))


def optimal_cap(maps: _F64, sigma_star: float) -> int:
    """Liu et al. Algorithm 1: the cap in ``1..g_max`` with the smallest expected MSE.

    Reads the observers' maps: the result is **not** private (see the module docstring).
    """
    arr = np.asarray(maps, dtype=np.float64)
    g_max = max(1, int(np.ceil(arr.max())))
    errors = [expected_mse(arr, m, sigma_star) for m in range(1, g_max + 1)]
    return int(np.argmin(errors)) + 1


__all__ = [
    "HeatmapGaussian",
    "HeatmapLaplace",
    "HeatmapMechanism",
    "analytic_gaussian_sigma",
    "expected_mse",
    "gaussian_delta",
    "gaze_map",
    "liu_gaussian_sigma",
    "optimal_cap",
]
