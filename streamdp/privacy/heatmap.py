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

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.stats import norm

from ..errors import InputError
from .mechanisms import _check_epsilon, _check_int
from .noise import lattice_gaussian, lattice_laplace, lattice_step

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


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact δ of the Gaussian mechanism at ε (Balle & Wang 2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(math.exp(norm.logcdf(a - b)) - math.exp(epsilon + norm.logcdf(-a - b)))


def analytic_gaussian_sigma(sensitivity: float, epsilon: float, delta: float) -> float:
    """Smallest σ with ``gaussian_delta(σ) ≤ δ``, by bisection (δ decreases in σ)."""
    lo, hi = 1e-12 * sensitivity, sensitivity
    while gaussian_delta(hi, sensitivity, epsilon) > delta:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if gaussian_delta(mid, sensitivity, epsilon) > delta:
            lo = mid
        else:
            hi = mid
    return hi


def liu_gaussian_sigma(cap: int, n_observers: int, pixels: int, epsilon: float, delta: float) -> float:
    """σ of Liu et al. Theorem 3.4."""
    return cap / (n_observers * epsilon) * math.sqrt(pixels * (epsilon / 2.0 + math.log(pixels / delta)))


@dataclass(frozen=True)
class _HeatmapParams:
    epsilon: float
    cap: int
    n_observers: int
    shape: tuple[int, int]

    @property
    def pixels(self) -> int:
        return self.shape[0] * self.shape[1]


def _validate(epsilon: object, cap: object, n_observers: object, shape: object) -> _HeatmapParams:
    eps = _check_epsilon("epsilon", epsilon)
    m = _check_int("cap", cap)
    if m < 1:
        raise ValueError(f"cap must be ≥ 1, got {m}")
    n = _check_int("n_observers", n_observers)
    if n < 1:
        raise ValueError(f"n_observers must be ≥ 1, got {n}")
    if not (isinstance(shape, tuple) and len(shape) == 2 and all(isinstance(v, int) and v > 0 for v in shape)):
        raise ValueError(f"shape must be (height, width) of positive ints, got {shape!r}")
    return _HeatmapParams(eps, m, n, (int(shape[0]), int(shape[1])))


class _HeatmapMechanism:
    name = "heatmap"

    def _aggregate(self, maps: _F64) -> _F64:
        arr = np.asarray(maps, dtype=np.float64)
        p = self.params  # type: ignore[attr-defined]
        if arr.ndim != 3 or arr.shape[1:] != p.shape:
            raise InputError(
                f"{self.name}: maps have shape {arr.shape}, expected (observers, {p.shape[0]}, {p.shape[1]})"
            )
        if arr.shape[0] != p.n_observers:
            raise InputError(f"{self.name}: {arr.shape[0]} maps given, the mechanism was built for {p.n_observers}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InputError(f"{self.name}: maps must hold finite counts ≥ 0")
        return np.minimum(arr, p.cap).mean(axis=0)  # the cap is enforced here, whatever came in


class HeatmapLaplace(_HeatmapMechanism):
    """Liu et al.'s Laplace mechanism: ε-DP per observer (see the module docstring)."""

    name = "heatmap-laplace"

    def __init__(self, *, epsilon: float, cap: int, n_observers: int, shape: tuple[int, int]) -> None:
        self.params = _validate(epsilon, cap, n_observers, shape)
        p = self.params
        self.sensitivity = p.cap * p.pixels / p.n_observers
        gamma = lattice_step(self.sensitivity / p.epsilon)
        self.scale = (self.sensitivity + p.pixels * gamma) / p.epsilon
        #: the paper's "noise level": the standard deviation √2·b
        self.noise_level = math.sqrt(2.0) * self.scale

    def privatize(self, maps: _F64, rng: np.random.Generator) -> _F64:
        return lattice_laplace(rng, self._aggregate(maps), self.scale)


class HeatmapGaussian(_HeatmapMechanism):
    """Liu et al.'s Gaussian mechanism: (ε, δ)-DP per observer with σ the larger of Theorem 3.4's
    and the exact Gaussian calibration (see the module docstring)."""

    name = "heatmap-gaussian"

    def __init__(self, *, epsilon: float, delta: float, cap: int, n_observers: int, shape: tuple[int, int]) -> None:
        self.params = _validate(epsilon, cap, n_observers, shape)
        d = _check_epsilon("delta", delta)
        if not d < 1:
            raise ValueError(f"delta must be in (0, 1), got {delta!r}")
        self.delta = d
        p = self.params
        self.sensitivity = p.cap * math.sqrt(p.pixels) / p.n_observers
        self.sigma_liu = liu_gaussian_sigma(p.cap, p.n_observers, p.pixels, p.epsilon, d)
        gamma = lattice_step(self.sigma_liu)
        charged = self.sensitivity + math.sqrt(p.pixels) * gamma
        self.sigma_exact = analytic_gaussian_sigma(charged, p.epsilon, d)
        self.sigma = max(self.sigma_liu, self.sigma_exact)

    def privatize(self, maps: _F64, rng: np.random.Generator) -> _F64:
        return lattice_gaussian(rng, self._aggregate(maps), self.sigma)


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
