"""Noise that resists floating-point attacks (Mironov 2012), drawn from a cryptographic generator.

Why: a textbook Laplace sample ``x + λ·log(U)`` in floating point does not have the support of
the Laplace distribution. The set of doubles it can output depends on ``x``'s low-order bits, so
one release can reveal ``x`` exactly. streamdp never outputs such a sum. Each released number is
first rounded to a lattice ``γℤ`` with ``γ`` a power of two, and then gets noise drawn *on that
lattice*: the discrete Laplace distribution (two-sided geometric) for Laplace mechanisms, the
discrete Gaussian (Canonne, Kamath and Steinke 2020) for Gaussian ones. The output is
``γ·(round(x/γ) + Z)`` with ``Z`` an integer, so its set of possible values is the same for every
input, and its distribution is that of the discrete mechanism.

The rounding moves a value by at most ``γ/2``, so two neighbouring inputs may differ by up to
``γ`` more per released number after rounding. This is charged to the sensitivity: a mechanism
releasing ``m`` numbers uses ``Δ₁ + m·γ`` (Laplace) or ``Δ₂ + √m·γ`` (Gaussian). ``γ`` is chosen as
``2^(⌊log₂ λ⌋ - 20)``, so the charge is about a millionth of the noise scale.

The discrete Laplace with parameter ``t = λ/γ`` (``P(Z = z) ∝ exp(-|z|/t)``) is ``ε``-DP for integer
sensitivity ``Δ/γ`` when ``t = Δ/(γ·ε)``, exactly as the continuous one. It is sampled as the
difference of two geometric variables; numpy's geometric sampler computes the inverse CDF in
floating point, which perturbs each probability by a relative ~1e-16 but never changes the
support, so the attack above does not apply.

Randomness: :func:`secure_generator` builds a NumPy ``Generator`` on randgen's ``AESCounter``
(AES-128 in counter mode, a cryptographically strong bit generator) seeded from the OS, or from
an explicit seed in tests.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray
from randomgen import AESCounter

#: the lattice is 2**LATTICE_BITS times finer than the noise scale
LATTICE_BITS = 20


def secure_generator(seed: int | None = None) -> np.random.Generator:
    """A NumPy ``Generator`` on AES-CTR: OS entropy when ``seed`` is None, else reproducible.

    Examples
    --------
    >>> a = secure_generator(7).integers(0, 100, 3)
    >>> b = secure_generator(7).integers(0, 100, 3)
    >>> bool((a == b).all())
    True
    """
    if seed is None:
        return np.random.Generator(AESCounter())
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {seed!r}")
    return np.random.Generator(AESCounter(seed=int(seed)))


def lattice_step(scale: float) -> float:
    """The lattice spacing ``γ`` for noise of scale ``scale``: a power of two ~1e-6 of it."""
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"noise scale must be finite and > 0, got {scale!r}")
    return math.ldexp(1.0, math.floor(math.log2(scale)) - LATTICE_BITS)


def round_to_lattice(x: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """``x`` rounded to the nearest multiple of ``gamma`` (half to even)."""
    return np.rint(x / gamma) * gamma


def discrete_laplace(
    rng: np.random.Generator, t: float | NDArray[np.float64], size: int | tuple[int, ...]
) -> NDArray[np.int64]:
    """Integers with ``P(Z = z) ∝ exp(-|z| / t)``: the difference of two geometric variables.
    ``t`` may be an array broadcast against ``size`` (e.g. one scale per column)."""
    tt = np.asarray(t, dtype=np.float64)
    if not np.all(np.isfinite(tt) & (tt > 0)):
        raise ValueError(f"discrete Laplace scale must be finite and > 0, got {t!r}")
    p = np.broadcast_to(-np.expm1(-1.0 / tt), size)  # 1 - exp(-1/t) without cancellation
    return (rng.geometric(p) - rng.geometric(p)).astype(np.int64)


def discrete_gaussian(rng: np.random.Generator, sigma: float, size: int) -> NDArray[np.int64]:
    """Integers with ``P(Z = z) ∝ exp(-z² / (2σ²))`` by rejection from a discrete Laplace
    (Canonne, Kamath and Steinke 2020, Algorithm 3), vectorized over the rejected draws."""
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"discrete Gaussian sigma must be finite and > 0, got {sigma!r}")
    t = math.floor(sigma) + 1.0
    out = np.empty(size, dtype=np.int64)
    todo = np.arange(size)
    s2 = sigma * sigma
    while todo.size:
        y = discrete_laplace(rng, t, todo.size)
        accept_p = np.exp(-((np.abs(y) - s2 / t) ** 2) / (2.0 * s2))
        ok = rng.random(todo.size) < accept_p
        out[todo[ok]] = y[ok]
        todo = todo[~ok]
    return out


def lattice_laplace(
    rng: np.random.Generator, x: NDArray[np.float64], scale: float | NDArray[np.float64]
) -> NDArray[np.float64]:
    """``x`` rounded to the lattice ``γℤ`` of its scale plus discrete Laplace noise of that scale
    on the lattice. ``scale`` may hold one value per column of ``x``."""
    sc = np.asarray(scale, dtype=np.float64)
    gamma = np.exp2(np.floor(np.log2(sc)) - LATTICE_BITS)  # lattice_step, vectorized
    z = discrete_laplace(rng, sc / gamma, x.shape)
    return np.asarray((np.rint(x / gamma) + z) * gamma, dtype=np.float64)


def lattice_gaussian(rng: np.random.Generator, x: NDArray[np.float64], sigma: float) -> NDArray[np.float64]:
    """``x`` rounded to the lattice of ``sigma`` plus discrete Gaussian noise of standard deviation
    ~``sigma`` on it."""
    gamma = lattice_step(sigma)
    z = discrete_gaussian(rng, sigma / gamma, int(np.prod(x.shape))).reshape(x.shape)
    return np.asarray((np.rint(x / gamma) + z) * gamma, dtype=np.float64)
