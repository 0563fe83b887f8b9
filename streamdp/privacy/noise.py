"""Noise that resists floating-point attacks (Mironov 2012), drawn exactly from random bits.

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
releasing ``m`` numbers uses ``Δ₁ + m·γ`` (Laplace) or ``Δ₂ + √m·γ`` (Gaussian), with ``γ`` the
lattice of the scale the noise is finally drawn at. ``γ`` is ``2^(⌊log₂ λ⌋ - 20)``, so the charge
is about a millionth of the noise scale.

``Z`` is drawn by :mod:`streamdp.privacy.exact_samplers`: integer-only algorithms (no logarithm,
no inverse CDF), so every integer has exactly its probability, the far tails included; the scale
in lattice units (between 2²⁰ and 2²¹) is rounded up by at most 2⁻²⁹ of itself to a form the
sampler represents exactly, σ by at most 2⁻²⁰. Both only add noise.

Randomness: :func:`secure_generator` returns a :class:`~streamdp.privacy.randomness.RandomSource`:
the operating system's CSPRNG (``os.urandom``) by default, or, given a seed, NumPy's PCG64 —
reproducible, and so labelled ``"reproducible, not private"`` in every release made with it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .exact_samplers import discrete_gaussian, discrete_laplace
from .randomness import RandomSource, SeededRandomSource, SystemRandomSource

__all__ = [
    "LATTICE_BITS",
    "RandomSource",
    "discrete_gaussian",
    "discrete_laplace",
    "lattice_gaussian",
    "lattice_laplace",
    "lattice_step",
    "round_to_lattice",
    "secure_generator",
]

#: the lattice is 2**LATTICE_BITS times finer than the noise scale
LATTICE_BITS = 20


def secure_generator(seed: int | None = None) -> RandomSource:
    """The noise's random source: the OS's CSPRNG when ``seed`` is None (``"cryptographic"``),
    else NumPy's PCG64 under ``seed`` (``"reproducible, not private"``: for tests and research;
    network sinks refuse its releases).

    Raises
    ------
    TypeError
        ``seed`` is neither None nor an int.
    ValueError
        ``seed`` is negative (NumPy's seeds are non-negative).

    Examples
    --------
    >>> a = secure_generator(7).integers(0, 100, 3)
    >>> b = secure_generator(7).integers(0, 100, 3)
    >>> bool((a == b).all()), secure_generator(7).ledger_label, secure_generator().ledger_label
    (True, 'reproducible, not private', 'cryptographic')
    """
    if seed is None:
        return SystemRandomSource()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be ≥ 0, got {seed!r}")
    return SeededRandomSource(int(seed))


def lattice_step(scale: float, lattice_bits: int = LATTICE_BITS) -> float:
    """The lattice spacing ``γ`` for noise of scale ``scale``: a power of two ~1e-6 of it.

    Raises
    ------
    ValueError
        ``scale`` is not finite and > 0.

    Examples
    --------
    >>> lattice_step(1.0) == 2.0**-20, lattice_step(3.0) == 2.0**-19
    (True, True)
    """
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"noise scale must be finite and > 0, got {scale!r}")
    return math.ldexp(1.0, math.floor(math.log2(scale)) - lattice_bits)


def round_to_lattice(x: NDArray[np.float64], gamma: float) -> NDArray[np.float64]:
    """``x`` rounded to the nearest multiple of ``gamma`` (half to even)."""
    return np.rint(x / gamma) * gamma


def lattice_laplace(
    rng: RandomSource | np.random.Generator,
    x: NDArray[np.float64],
    scale: float | NDArray[np.float64],
    lattice_bits: int = LATTICE_BITS,
) -> NDArray[np.float64]:
    """``x`` rounded to the lattice ``γℤ`` of its scale (``γ = 2^(⌊log₂ scale⌋ - lattice_bits)``)
    plus exact discrete Laplace noise of that scale on the lattice. ``scale`` may hold one value
    per column of ``x``.

    Examples
    --------
    >>> out = lattice_laplace(secure_generator(0), np.zeros((2, 3)), np.array([1.0, 2.0, 3.0]))
    >>> bool(np.all(out / np.array([2.0**-20, 2.0**-19, 2.0**-19]) % 1 == 0))
    True
    """
    sc = np.asarray(scale, dtype=np.float64)
    gamma = np.exp2(np.floor(np.log2(sc)) - lattice_bits)  # lattice_step, vectorized
    z = discrete_laplace(rng, sc / gamma, x.shape)
    return np.asarray((np.rint(x / gamma) + z) * gamma, dtype=np.float64)


def lattice_gaussian(
    rng: RandomSource | np.random.Generator, x: NDArray[np.float64], sigma: float
) -> NDArray[np.float64]:
    """``x`` rounded to the lattice of ``sigma`` plus exact discrete Gaussian noise of standard
    deviation ~``sigma`` (never less) on it."""
    gamma = lattice_step(sigma)
    z = discrete_gaussian(rng, sigma / gamma, x.shape)
    return np.asarray((np.rint(x / gamma) + z) * gamma, dtype=np.float64)
