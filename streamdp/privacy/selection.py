"""The exponential mechanism, sampled exactly from random integers.

Guarantee: :func:`exponential_select` is ε-DP for each column (one selection per column), for
utilities whose every entry moves by at most the column's ``sensitivity`` Δ between neighbouring
inputs (McSherry and Talwar 2007). The selection probabilities are those of the exponential
mechanism ``P(j) ∝ exp(ε'·ũ_j/(2Δ'))`` with

- ``ũ`` the utility clipped to ``±2⁴⁰·g`` and rounded to the public grid ``g = 2^(⌊log₂ Δ⌋ − 20)``
  (clipping is 1-Lipschitz, rounding moves a value by at most ``g/2``; dividing by a power of two
  is exact in floating point);
- ``Δ' = Δ + 2g``: one ``g`` for the rounding of the two neighbours, one for the floating-point
  rounding of the utility's own computation, which the caller must keep below ``g/2 ≈ 2⁻²²·Δ``
  (the Fourier mechanisms centre the chunk first, so their residual norm does not cancel);
- ``ε' ≤ ε``: ``ε'·g/(2Δ')`` is ``ε·g/(2Δ')`` rounded down to a dyadic rational ``a/2ᴮ`` with 21
  significant bits, so the spend never exceeds ε (at most ``2⁻²⁰`` of it is left unspent while
  that coefficient lies in ``[2⁻⁴¹, 2²⁰]``; beyond, the choice is flatter than asked, never
  sharper).

Why exact: a float sample (Gumbel noise through ``log``, then an argmax) decides the choice by
comparing floats whose low bits depend on the CPU's SIMD code path and on the input's low-order
bits, the attack of Mironov (2012) on a selection. Here the exponents are integers
``a·d_j/2ᴮ`` (``d_j`` the grid distance to the best candidate), and the choice is rejection
sampling: a candidate proposed uniformly is kept with probability ``exp(−a·d_j/2ᴮ)``, drawn by the
integer-exact ``Bernoulli(exp(−γ))`` of :mod:`~streamdp.privacy.exact_samplers` (Canonne, Kamath
and Steinke 2020, Algorithm 1, split into a geometric count for the integer part and a rational
fraction below 1). The first kept candidate of an i.i.d. sequence has exactly the exponential
mechanism's law; the best candidate is always kept, so each proposal succeeds with probability at
least ``1/K``. Proposals are drawn ``K`` per column and round, vectorized over the columns still
open.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .exact_samplers import bernoulli_exp_fraction, bernoulli_exp_int
from .randomness import as_random_source

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]
_U64 = NDArray[np.uint64]

#: the utility grid is 2**GRID_BITS to 2**(GRID_BITS+1) times finer than the sensitivity
GRID_BITS = 20
#: utilities are clipped to ±2**CLIP_BITS grid steps (1-Lipschitz: the sensitivity holds)
CLIP_BITS = 40
#: the fraction of an exponent is a numerator over 2**FRACTION_BITS
FRACTION_BITS = 62
#: significant bits of the exponent's coefficient a/2**B (rounded down)
COEFFICIENT_BITS = 21
_MAX_COEFFICIENT = 2.0**20


def _columns(name: str, value: ArrayLike, width: int) -> _F64:
    arr = np.broadcast_to(np.asarray(value, dtype=np.float64), (width,))
    if not np.all(np.isfinite(arr) & (arr > 0)):
        raise ValueError(f"{name} must be finite and > 0 in every column, got {value!r}")
    return arr


def utility_grid(sensitivity: ArrayLike) -> _F64:
    """The public grid ``g = 2^(⌊log₂ Δ⌋ − 20)`` of each column, from the exact binary exponent.

    Examples
    --------
    >>> utility_grid([1.0, 3.0]).tolist() == [2.0**-20, 2.0**-19]
    True
    """
    _, e = np.frexp(np.asarray(sensitivity, dtype=np.float64))
    return np.asarray(np.ldexp(1.0, e - 1 - GRID_BITS), dtype=np.float64)


def selection_exponents(utility: ArrayLike, *, sensitivity: ArrayLike, epsilon: ArrayLike) -> tuple[_I64, _U64]:
    """The exact exponent ``E = a·d/2ᴮ ≥ 0`` of every candidate (rows) of every column, as an
    integer part and a fraction's numerator over ``2⁶²``: candidate ``j`` is selected with
    probability ``∝ exp(−E_j)``, the best candidates (``E = 0``) always kept.

    Parameters
    ----------
    utility : array_like, shape (K, F)
        The candidates' utilities, finite, higher is better.
    sensitivity : array_like, shape (F,) or scalar
        Δ per column, finite and > 0.
    epsilon : array_like, shape (F,) or scalar
        ε per column, finite and > 0.

    Raises
    ------
    ValueError
        ``utility`` not two-dimensional with at least one row, or not finite; ``sensitivity`` or
        ``epsilon`` not finite and > 0.

    Examples
    --------
    >>> whole, frac = selection_exponents([[0.0], [-1.0]], sensitivity=1.0, epsilon=2.0)
    >>> whole.ravel().tolist(), bool(frac[0, 0] == 0 and frac[1, 0] > 0)
    ([0, 0], True)
    """
    u = np.asarray(utility, dtype=np.float64)
    if u.ndim != 2 or u.shape[0] < 1:
        raise ValueError(f"utility must be a (candidates, columns) array with at least one candidate, got {u.shape}")
    if not np.all(np.isfinite(u)):
        raise ValueError("utility must be finite")
    f = u.shape[1]
    delta = _columns("sensitivity", sensitivity, f)
    eps = _columns("epsilon", epsilon, f)
    g = utility_grid(delta)
    limit = 2.0**CLIP_BITS
    steps = np.rint(np.clip(u / g, -limit, limit))  # exact integers below 2**41
    d = (steps.max(axis=0) - steps).astype(np.uint64)
    charged = delta + 2.0 * g
    # the coefficient ε·g/(2Δ'), shrunk before the floor so that a/2**B never exceeds it
    c = np.minimum(eps * g / (2.0 * charged) * (1.0 - 2.0**-50), _MAX_COEFFICIENT)
    _, ec = np.frexp(c)
    b = np.clip(COEFFICIENT_BITS - ec, 0, FRACTION_BITS).astype(np.int64)
    a = np.floor(np.ldexp(c, b)).astype(np.uint64)  # < 2**21
    prod = a[None, :] * d  # < 2**21 · 2**41
    bu = b.astype(np.uint64)[None, :]
    whole = (prod >> bu).astype(np.int64)
    frac = (prod & ((np.uint64(1) << bu) - np.uint64(1))) << (np.uint64(FRACTION_BITS) - bu)
    return whole, frac


def selection_probabilities(utility: ArrayLike, *, sensitivity: ArrayLike, epsilon: ArrayLike) -> _F64:
    """The law :func:`exponential_select` samples, evaluated in floating point (for tests and
    reports; the sampler itself never computes it): shape (K, F), columns summing to 1.

    Examples
    --------
    >>> p = selection_probabilities([[0.0], [0.0], [-1e9]], sensitivity=1.0, epsilon=1.0)
    >>> p.ravel().round(6).tolist()
    [0.5, 0.5, 0.0]
    """
    whole, frac = selection_exponents(utility, sensitivity=sensitivity, epsilon=epsilon)
    w = np.exp(-(whole + np.ldexp(frac.astype(np.float64), -FRACTION_BITS)))
    return np.asarray(w / w.sum(axis=0), dtype=np.float64)


def exponential_select(rng: object, utility: ArrayLike, *, sensitivity: ArrayLike, epsilon: ArrayLike) -> _I64:
    """One candidate (row index) per column, by the exponential mechanism sampled exactly.

    Parameters
    ----------
    rng : RandomSource or numpy.random.Generator
        The random bits (:func:`~streamdp.privacy.noise.secure_generator`).
    utility : array_like, shape (K, F)
        The candidates' utilities, higher is better; each entry moves by at most ``sensitivity``
        between neighbouring inputs.
    sensitivity, epsilon : array_like, shape (F,) or scalar
        Δ and ε per column, finite and > 0.

    Returns
    -------
    ndarray of int64, shape (F,)
        The selected row of each column.

    Raises
    ------
    ValueError
        As :func:`selection_exponents`.
    TypeError
        ``rng`` is not a random source or a NumPy ``Generator``.

    Examples
    --------
    >>> from streamdp.privacy.randomness import SeededRandomSource
    >>> u = [[0.0, -50.0], [-50.0, 0.0]]
    >>> exponential_select(SeededRandomSource(3), u, sensitivity=1.0, epsilon=10.0).tolist()
    [0, 1]
    """
    src = as_random_source(rng)
    whole, frac = selection_exponents(utility, sensitivity=sensitivity, epsilon=epsilon)
    k, f = whole.shape
    out = np.empty(f, dtype=np.int64)
    pending = np.arange(f)
    while pending.size:
        m = pending.size
        proposed = src.below(k, m * k).astype(np.intp)
        column = np.repeat(pending, k)
        n_int, n_frac = whole[proposed, column], frac[proposed, column]
        kept = np.ones(m * k, dtype=bool)
        hard = np.flatnonzero(n_int > 0)
        if hard.size:
            kept[hard] = bernoulli_exp_int(src, n_int[hard])
        soft = np.flatnonzero(kept & (n_frac > 0))
        if soft.size:
            kept[soft] = bernoulli_exp_fraction(src, soft.size, factors=((n_frac[soft], 1 << FRACTION_BITS),))
        kept2 = kept.reshape(m, k)
        done = kept2.any(axis=1)
        first = np.argmax(kept2, axis=1)
        out[pending[done]] = proposed.reshape(m, k)[done, first[done]]
        pending = pending[~done]
    return out


__all__ = [
    "GRID_BITS",
    "exponential_select",
    "selection_exponents",
    "selection_probabilities",
    "utility_grid",
]
