"""The gaze-heatmap mechanisms of Liu et al. 2019, on the validated, immutable base.

Unit of privacy: **one observer** — neighbouring datasets differ in one observer's whole map,
capped at ``m`` inside the mechanism, which moves the aggregate of ``n`` maps of ``r`` pixels by at
most ``m√r/n`` in L2 and ``m·r/n`` in L1 (see :mod:`streamdp.privacy.heatmap`).

- Laplace (Liu Theorem 3.5): Laplace scale ``b = m·r/(nε) = Δ₁/ε`` per pixel: ε-DP.
- Gaussian (Liu Theorem 3.4) checked against the exact privacy profile of the Gaussian mechanism
  (Balle & Wang 2018, Theorem 8); the larger σ is used: (ε, δ)-DP.

Noise is drawn on a power-of-two lattice ``γℤ`` with the rounding charged to the sensitivity,
per coordinate: rounding moves each of the ``r`` pixels by at most ``γ/2``, so neighbours differ
by up to ``Δ₁ + r·γ`` (``Δ₂ + √r·γ``) after it. ``γ`` is the lattice of the *final* noise scale,
the one the sampler uses: the scale solves ``b = (Δ₁ + r·γ(b))/ε``. The lattice's depth below
the scale is chosen per mechanism so that the rounding charge (which grows with ``r/ε``) and the
sampler's representation of the scale (which grows with the depth) together add as little noise
as possible: a few millionths of ``Δ₁/ε`` for maps of thousands of pixels.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ...errors import InputError
from ..exact_samplers import effective_scale
from ..noise import LATTICE_BITS, lattice_gaussian, lattice_laplace, lattice_step
from ..randomness import RandomSource
from .base import BaseMechanism
from .parameters import Parameter
from .validation import check_epsilon, check_fraction, check_positive_int

_F64 = NDArray[np.float64]


def gaussian_delta(sigma: float, sensitivity: float, epsilon: float) -> float:
    """Exact δ of the Gaussian mechanism at ε (Balle & Wang 2018, Theorem 8)."""
    # scipy.special is imported on first use: the relay's mechanisms never need it
    from scipy.special import log_ndtr

    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return float(math.exp(log_ndtr(a - b)) - math.exp(epsilon + log_ndtr(-a - b)))


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


def gaussian_calibration(cap: int, n_observers: int, pixels: int, epsilon: float, delta: float) -> dict[str, float]:
    """The L2 ``sensitivity`` ``m√r/n``, Theorem 3.4's ``sigma_liu``, the exact ``sigma_exact`` at
    the sensitivity charged with the rounding on the lattice of the final σ, and that final
    ``sigma``, the larger of the two."""
    sensitivity = cap * math.sqrt(pixels) / n_observers
    sigma_liu = liu_gaussian_sigma(cap, n_observers, pixels, epsilon, delta)
    # the lattice of the final σ: raising σ can only coarsen the lattice, so iterate to a fixed point
    sigma, sigma_exact = sigma_liu, 0.0
    while True:
        charged = sensitivity + math.sqrt(pixels) * lattice_step(sigma)
        sigma_exact = analytic_gaussian_sigma(charged, epsilon, delta)
        if lattice_step(max(sigma_liu, sigma_exact)) == lattice_step(sigma):
            break
        sigma = max(sigma_liu, sigma_exact)
    return {
        "sensitivity": sensitivity,
        "sigma_liu": sigma_liu,
        "sigma_exact": sigma_exact,
        "sigma": max(sigma_liu, sigma_exact),
    }


def charged_laplace_scale(sensitivity: float, epsilon: float, pixels: int, lattice_bits: int) -> float:
    """The smallest ``b`` with ``b ≥ (Δ₁ + r·γ(b))/ε``, ``γ(b)`` = ``lattice_step(b, lattice_bits)``.

    ``γ`` depends on ``b`` only through ``⌊log₂ b⌋``; starting from ``Δ₁/ε`` each step can only
    raise ``b``, and it stops as soon as the lattice no longer changes (at most a few steps)."""
    b = sensitivity / epsilon
    while True:
        gamma = lattice_step(b, lattice_bits)
        charged = (sensitivity + pixels * gamma) / epsilon
        if lattice_step(charged, lattice_bits) == gamma:
            return charged
        b = charged


def laplace_lattice_bits(sensitivity: float, epsilon: float, pixels: int) -> int:
    """The lattice depth (in bits below the scale) that adds the least noise: the final scale,
    as the sampler draws it (:func:`~streamdp.privacy.exact_samplers.effective_scale`)."""

    def drawn(bits: int) -> float:
        b = charged_laplace_scale(sensitivity, epsilon, pixels, bits)
        gamma = lattice_step(b, bits)
        return gamma * float(effective_scale(b / gamma))

    return min(range(LATTICE_BITS, 39), key=drawn)


def _check_shape(name: str, value: object) -> tuple[int, int]:
    if not (isinstance(value, tuple) and len(value) == 2) or any(
        isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in value
    ):
        raise TypeError(f"shape must be a (height, width) tuple of ints, got {value!r}")
    if min(value) < 1:
        raise ValueError(f"shape must be (height, width) of positive ints, got {value!r}")
    return int(value[0]), int(value[1])


class HeatmapMechanism(BaseMechanism):
    """The shared base of the heatmap mechanisms: an aggregate of ``n_observers`` gaze maps of
    ``shape`` pixels, each capped at ``cap`` inside the mechanism.

    Unit of privacy: **one observer** (their whole capped map), see the module docstring.
    """

    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("epsilon", "float", "ε, finite and > 0.", check=check_epsilon),
        Parameter("cap", "int", "m, the cap on each pixel count of one observer's map, ≥ 1.", check=check_positive_int),
        Parameter("n_observers", "int", "The number of observers (public), ≥ 1.", check=check_positive_int),
        Parameter("shape", "tuple[int, int]", "(height, width) of the maps, both ≥ 1.", check=_check_shape),
    )

    epsilon: float
    cap: int
    n_observers: int
    shape: tuple[int, int]
    sensitivity: float

    @property
    def pixels(self) -> int:
        return self.shape[0] * self.shape[1]

    def _aggregate(self, maps: _F64) -> _F64:
        arr = np.asarray(maps, dtype=np.float64)
        if arr.ndim != 3 or arr.shape[1:] != self.shape:
            raise InputError(
                f"{self.name}: maps have shape {arr.shape}, expected (observers, {self.shape[0]}, {self.shape[1]})"
            )
        if arr.shape[0] != self.n_observers:
            raise InputError(f"{self.name}: {arr.shape[0]} maps given, the mechanism was built for {self.n_observers}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise InputError(f"{self.name}: maps must hold finite counts ≥ 0")
        return np.minimum(arr, self.cap).mean(axis=0)  # the cap is enforced here, whatever came in

    @abstractmethod
    def privatize(self, maps: _F64, rng: RandomSource | np.random.Generator) -> _F64:
        """The noisy aggregate map (height, width) of ``maps`` (n_observers, height, width).

        Raises
        ------
        InputError
            ``maps`` has the wrong shape or holds a negative or non-finite count.
        """

    def describe(self) -> dict[str, Any]:
        """The public parameters."""
        return {
            "mechanism": self.name,
            **{p: list(v) if isinstance(v, tuple) else v for p, v in self.arguments().items()},
        }


class HeatmapLaplace(HeatmapMechanism):
    """Liu et al.'s Laplace mechanism (Theorem 3.5): ε-DP per observer (unit of privacy: one
    observer), discrete Laplace of scale ``b = (m·r/n + r·γ)/ε`` on every pixel, ``γ`` the
    lattice of ``b`` itself (see the module docstring).

    Examples
    --------
    >>> HeatmapLaplace(epsilon=1.0, cap=2, n_observers=100, shape=(4, 6))
    HeatmapLaplace(epsilon=1.0, cap=2, n_observers=100, shape=(4, 6))
    """

    name: ClassVar[str] = "heatmap-laplace"

    scale: float
    lattice_bits: int
    noise_level: float

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        sensitivity = self.cap * self.pixels / self.n_observers
        bits = laplace_lattice_bits(sensitivity, self.epsilon, self.pixels)
        scale = charged_laplace_scale(sensitivity, self.epsilon, self.pixels, bits)
        # noise_level: the paper's "noise level", the standard deviation √2·b
        self._set(sensitivity=sensitivity, scale=scale, lattice_bits=bits, noise_level=math.sqrt(2.0) * scale)

    @property
    def lattice(self) -> float:
        """γ, the lattice of the final scale, on which the output lies."""
        return lattice_step(self.scale, self.lattice_bits)

    def privatize(self, maps: _F64, rng: RandomSource | np.random.Generator) -> _F64:
        return lattice_laplace(rng, self._aggregate(maps), self.scale, self.lattice_bits)


class HeatmapGaussian(HeatmapMechanism):
    """Liu et al.'s Gaussian mechanism: (ε, δ)-DP per observer (unit of privacy: one observer),
    discrete Gaussian noise with σ the larger of Theorem 3.4's and the exact Gaussian calibration
    (see the module docstring).

    Examples
    --------
    >>> m = HeatmapGaussian(epsilon=1.0, delta=1e-5, cap=2, n_observers=100, shape=(4, 6))
    >>> m
    HeatmapGaussian(epsilon=1.0, delta=1e-05, cap=2, n_observers=100, shape=(4, 6))
    >>> m.sigma >= m.sigma_liu
    True
    """

    delta: float
    sigma_liu: float
    sigma_exact: float
    sigma: float

    name: ClassVar[str] = "heatmap-gaussian"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        HeatmapMechanism.parameter_table[0],
        Parameter("delta", "float", "δ, in (0, 1).", check=check_fraction),
        *HeatmapMechanism.parameter_table[1:],
    )

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        self._set(**gaussian_calibration(self.cap, self.n_observers, self.pixels, self.epsilon, self.delta))

    def privatize(self, maps: _F64, rng: RandomSource | np.random.Generator) -> _F64:
        return lattice_gaussian(rng, self._aggregate(maps), self.sigma)
