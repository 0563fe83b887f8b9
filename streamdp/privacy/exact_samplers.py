"""Exact discrete Laplace and discrete Gaussian samplers from random integers, vectorized.

Canonne, Kamath and Steinke (2020), "The Discrete Gaussian for Differential Privacy",
Algorithms 1-3, with integer arithmetic only: no floating-point logarithm or inverse CDF, so every
integer keeps its exact probability, far tails included (a float inverse CDF cuts the support near
37 scales and leaves holes beyond ~22).

- ``Bernoulli(exp(-γ))`` for a rational ``γ ∈ [0, 1]`` (Algorithm 1): ``K`` is the first ``k``
  with ``Bernoulli(γ/k) = 0``; the answer is ``K`` odd. Every ``γ`` here is a product of fractions
  ``num/den`` over a small integer ``c``, so ``Bernoulli(γ/k)`` is the AND of independent
  ``Bernoulli(1/(c·k))`` and ``Bernoulli(num/den)``, each a uniform integer compared with a bound
  (uniform integers come from 32/64-bit words by rejection, never by modulo).
- Discrete Laplace (Algorithm 2): ``|Y| = ⌊X/s⌋`` with ``X = U + 2⁵²·V`` geometric of ratio
  ``exp(-2⁻⁵²)``: ``U`` uniform on ``[0, 2⁵²)`` kept with probability ``exp(-U/2⁵²)``, ``V`` the
  number of successes of ``Bernoulli(e⁻¹)`` before the first failure. Then
  ``P(Y = y) ∝ exp(-|y|·s/2⁵²)``: the scale is ``2⁵²/s``. A requested scale ``t`` is rounded up
  to that form (``s = ⌊2⁵²/t⌋`` or one less: at most ``(t + 2)·2⁻⁵⁰`` relatively more noise, ``2⁻²⁹``
  for ``t ≤ 2²¹``), so the noise is never smaller than asked. Because ``U`` and ``V`` do not
  depend on the scale, one flat batch of attempts serves values of different scales, and the
  rejection loops run over what is still pending, never per value. For the same reason a small
  request (a chunk's ~100 released numbers) is cut from pairs drawn :data:`AHEAD_PAIRS` at a time
  and kept by the random source (:meth:`~streamdp.privacy.randomness.RandomSource.take_ahead`:
  each pair handed out once, dropped by a forked child): NumPy's per-call cost, not arithmetic,
  dominates a small draw.
- Discrete Gaussian (Algorithm 3): a discrete Laplace proposal of scale ``2ʲ ≈ σ`` kept with
  probability ``exp(-(|y| - σ²/2ʲ)²/(2σ²))``; ``σ`` is rounded up to 21 significant bits so that
  every quantity fits in 64-bit integers, and the exponent is split into an integer part (a
  geometric count) and fractions below 1 (Algorithm 1).

Numbers stay in 64-bit integers; values whose exact computation would overflow have probability
below ``e^(-2000)`` and are computed with Python integers or refused (``OverflowError``).
"""

from __future__ import annotations

import functools
import math
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .randomness import RandomSource, as_random_source

_U64 = NDArray[np.uint64]
_I64 = NDArray[np.int64]
_BOOL = NDArray[np.bool_]
#: the fractional part U of the geometric X has this many bits
FRACTION_BITS = 52
_ONE = 1 << FRACTION_BITS
#: scales (discrete Laplace) and σ (discrete Gaussian) accepted, in units of the integer lattice
MIN_SCALE, MAX_SCALE = 2.0**-10, 2.0**40
MIN_SIGMA, MAX_SIGMA = 2.0**-8, 2.0**24
#: (U, V) pairs drawn at once for small requests and kept by the source for the next ones: they do
#: not depend on the scale, and NumPy's per-call cost dominates below a few hundred values
AHEAD_PAIRS = 2048


def _count(n: float) -> int:
    """How many attempts to draw for ``n`` wanted ones: the expectation and a margin, so that
    one pass nearly always suffices (the loops stay exact whatever this returns)."""
    return int(1.6 * n + 3.0 * math.sqrt(n) + 4)


def _block_width(alive: int) -> int:
    """How many steps of Algorithm 1 to draw at once: wide for few draws (fewer NumPy passes),
    one for many (fewer random bits; the passes are then amortized)."""
    return 6 if alive <= 512 else 3 if alive <= 2048 else 1


@functools.lru_cache(maxsize=256)
def _reciprocal_bounds(ns: tuple[int, ...]) -> tuple[NDArray[np.uint32], NDArray[np.uint32], bool]:
    q = np.array([(1 << 16) // n for n in ns], dtype=np.uint32)
    limit = q * np.array(ns, dtype=np.uint32)
    return q, limit, bool(np.all(limit == 1 << 16))


def bernoulli_reciprocals(src: RandomSource, ns: tuple[int, ...], count: int) -> _BOOL:
    """``(count, len(ns))`` draws of ``Bernoulli(1/n)``, one column per ``n`` (``n < 2¹⁶``): a
    16-bit word below ``⌊2¹⁶/n⌋``, among the words below the largest multiple of ``n`` (the
    others, rarer than ``n/2¹⁶``, are drawn again)."""
    q, limit, exact = _reciprocal_bounds(ns)
    w = src.words16(count * len(ns)).reshape(count, len(ns)).astype(np.uint32)
    if not exact and np.any(w >= limit):
        bad = np.argwhere(w >= limit)
        while bad.size:
            rows, cols = bad[:, 0], bad[:, 1]
            w[rows, cols] = src.words16(rows.size)
            bad = bad[w[rows, cols] >= limit[cols]]
    return np.asarray(w < q)


def bernoulli_fraction(src: RandomSource, num: _U64, den: int | _U64, width: int = 1) -> _BOOL:
    """``(num.size, width)`` independent draws of ``Bernoulli(num/den)`` (``0 ≤ num ≤ den ≤ 2⁶³``,
    ``den`` a scalar or one per element): a uniform integer on ``[0, den)`` below ``num``. For a
    power-of-two ``den = 2ᵇ`` the uniform integer's bits are drawn 16 at a time from the top,
    the next ones only on a tie with ``num``'s (probability 2⁻¹⁶)."""
    m = num.size
    if not (isinstance(den, int) and den & (den - 1) == 0 and den <= 1 << 63):
        d = den if isinstance(den, int) else np.repeat(den, width)
        return np.asarray(src.below(d, m * width).reshape(m, width) < num[:, None])
    bits = den.bit_length() - 1
    w = src.words16(m * width).reshape(m, width)
    if bits <= 16:
        return np.asarray((w >> np.uint16(16 - bits)) < num[:, None])
    low_bits = bits - 16
    high = (num >> np.uint64(low_bits))[:, None]
    out = np.asarray(w < high)
    tie = w == high
    if tie.any():
        rows, cols = np.nonzero(tie)
        low = num[rows] & np.uint64((1 << low_bits) - 1)
        out[rows, cols] = bernoulli_fraction(src, low, 1 << low_bits)[:, 0]
    return out


def _first_failures(a: _BOOL, k: int) -> tuple[_BOOL, _I64]:
    """Algorithm 1's answer for each row of ``a`` (cells ``Bernoulli(γ/k)``, ``k`` onwards), and
    the rows without a failure: their answer is not known yet (they go on at ``k + a.shape[1]``)."""
    if a.shape[1] == 1:
        return np.full(a.shape[0], k % 2 == 1), np.flatnonzero(a[:, 0])
    answer = (np.argmin(a, axis=1) + k) % 2 == 1
    return answer, np.flatnonzero(a.all(axis=1))


def bernoulli_exp_fraction(
    src: RandomSource,
    count: int,
    divisor: int = 1,
    factors: tuple[tuple[_U64, int | _U64], ...] = (),
    first_k: int = 1,
) -> _BOOL:
    """``Bernoulli(exp(-γ))`` with ``γ = Π(num/den) / divisor ∈ [0, 1]`` (CKS Algorithm 1):
    ``K`` is the first ``k`` with ``Bernoulli(γ/k) = 0``, the answer ``K`` odd (``first_k > 1``:
    the steps before it are known to have succeeded). Vectorized over the draws still running, a
    block of consecutive ``k`` per pass, each cell the AND of independent ``Bernoulli(1/(divisor·k))``
    and ``Bernoulli(num/den)`` (cells past a row's first failure are drawn and ignored)."""
    result = np.empty(count, dtype=bool)
    alive = np.arange(count)
    k = first_k
    while alive.size:
        width = _block_width(alive.size)
        a = bernoulli_reciprocals(src, tuple(divisor * i for i in range(k, k + width)), alive.size)
        full = alive.size == count
        for num, den in factors:
            d = den if isinstance(den, int) or full else den[alive]
            a &= bernoulli_fraction(src, num if full else num[alive], d, width)
        answer, going_on = _first_failures(a, k)
        result[alive] = answer  # the rows going on are overwritten on a later pass
        alive = alive[going_on]
        k += width
    return result


def geometric_exp1(src: RandomSource, count: int, trials: _BOOL | None = None) -> _I64:
    """``count`` integers with ``P(V = v) = (1 - e⁻¹)·e⁻ᵛ``: the lengths of the runs of
    successes of one stream of ``Bernoulli(e⁻¹)`` draws (starting with ``trials`` if given), cut
    at each failure. The support is every natural number: nothing bounds a run."""
    out = np.empty(count, dtype=np.int64)
    have, carry = 0, 0
    while have < count:
        need = count - have
        if trials is None:
            trials = bernoulli_exp_fraction(src, _count(need))
        fails = np.flatnonzero(~trials)[:need]
        if fails.size:
            runs = run_lengths(fails)
            runs[0] += carry
            out[have : have + fails.size] = runs
            have += fails.size
            carry = trials.size - 1 - int(fails[-1])
        else:
            carry += trials.size
        trials = None
    return out


def run_lengths(failures: _I64) -> _I64:
    """Successes before each failure, from the positions of the failures in a stream.

    Examples
    --------
    >>> run_lengths(np.array([0, 3, 60])).tolist()
    [0, 2, 56]
    """
    runs = np.empty(failures.size, dtype=np.int64)
    runs[0] = failures[0]
    np.subtract(failures[1:], failures[:-1] + 1, out=runs[1:])
    return runs


def bernoulli_exp_int(src: RandomSource, n: _I64) -> _BOOL:
    """``Bernoulli(exp(-n))`` for integers ``n ≥ 0``: a geometric count reaching ``n``."""
    out = np.ones(n.size, dtype=bool)
    pos = np.flatnonzero(n > 0)
    if pos.size:
        out[pos] = geometric_exp1(src, pos.size) >= n[pos]
    return out


def laplace_fractions(src: RandomSource, count: int) -> _U64:
    """``count`` integers ``U`` on ``[0, 2⁵²)`` with ``P(U = u) ∝ exp(-u/2⁵²)``: uniform
    attempts kept with that probability, the first ``count`` kept ones."""
    parts: list[_U64] = []
    need = count
    while need:
        u = src.words(_count(need)) >> np.uint64(64 - FRACTION_BITS)
        kept = u[bernoulli_exp_fraction(src, u.size, factors=((u, _ONE),))][:need]
        parts.append(kept)
        need -= kept.size
    return np.concatenate(parts) if len(parts) > 1 else parts[0]


def laplace_pairs(src: RandomSource, count: int) -> tuple[_U64, _I64]:
    """``count`` pairs ``(U, V)`` as :func:`laplace_fractions` and :func:`geometric_exp1` draw
    them, with the first steps of Algorithm 1 for ``U``'s attempts and for the stream of
    ``Bernoulli(e⁻¹)`` of ``V`` drawn in one block (for ``V``'s rows ``γ = 1``)."""
    n_att, n_trials = _count(count), _count(count)
    u = src.words(n_att) >> np.uint64(64 - FRACTION_BITS)
    width = _block_width(n_att + n_trials)
    a = bernoulli_reciprocals(src, tuple(range(1, width + 1)), n_att + n_trials)
    a[:n_att] &= bernoulli_fraction(src, u, _ONE, width)
    drawn, going_on = _first_failures(a, 1)
    if going_on.size:  # rows whose first `width` steps all succeeded
        num = np.concatenate((u, np.full(n_trials, _ONE, dtype=np.uint64)))[going_on]
        drawn[going_on] = bernoulli_exp_fraction(src, going_on.size, factors=((num, _ONE),), first_k=width + 1)
    kept = u[drawn[:n_att]][:count]
    if kept.size < count:
        kept = np.concatenate((kept, laplace_fractions(src, count - kept.size)))
    return kept, geometric_exp1(src, count, drawn[n_att:])


def grid_divisor(scale: NDArray[np.float64]) -> _U64:
    """``s = ⌊2⁵²/scale⌋`` or one less, never more, from floating point: the quotient is
    correctly rounded and then shrunk by 2⁻⁵⁰ before the floor, so ``2⁵²/s ≥ scale``."""
    shrunk = (float(_ONE) / scale) * (1.0 - 2.0**-50)
    return np.floor(shrunk).astype(np.uint64)


def effective_scale(scale: ArrayLike) -> NDArray[np.float64]:
    """The scale the discrete Laplace sampler uses for a requested ``scale``: ``2⁵²/s ≥ scale``.

    Examples
    --------
    >>> s = float(effective_scale(3.0))
    >>> 3.0 <= s < 3.0 * (1 + 2**-40)
    True
    """
    sc = np.asarray(scale, dtype=np.float64)
    return np.asarray(float(_ONE) / grid_divisor(sc).astype(np.float64))


def _magnitudes(u: _U64, v: _I64, s: _U64) -> _I64:
    """``⌊(u + 2⁵²·v)/s⌋`` without overflow: split as ``v·⌊2⁵²/s⌋ + ⌊(u + v·(2⁵² mod s))/s⌋``,
    which fits 64 bits while ``v < 2¹¹``; larger ``v`` (probability ``e^(-2048)``) in Python ints."""
    vu = v.astype(np.uint64)
    quotient, remainder = np.divmod(np.uint64(_ONE), s)
    out = (vu * quotient + (u + vu * remainder) // s).astype(np.int64)
    if v.max(initial=0) < 1 << 11:
        return out
    for i in np.flatnonzero(v >= 1 << 11):
        big = (int(u[i]) + _ONE * int(v[i])) // int(s[i])
        if big >= 1 << 63:
            raise OverflowError("a discrete Laplace value beyond 2⁶³ (probability below e^(-2000))")
        out[i] = big
    return out


def laplace_on_grid(src: RandomSource, s: _U64) -> _I64:
    """One integer per element with ``P(Y = y) ∝ exp(-|y|·s/2⁵²)`` (CKS Algorithm 2)."""
    out = np.empty(s.size, dtype=np.int64)
    pending: _I64 | None = None  # None: every element
    while pending is None or pending.size:
        m = s.size if pending is None else pending.size
        u, v = cast(
            "tuple[_U64, _I64]", src.take_ahead("laplace-pairs", m, functools.partial(laplace_pairs, src), AHEAD_PAIRS)
        )
        mag = _magnitudes(u, v, s if pending is None else s[pending])
        negative = np.unpackbits(src.words((m + 63) // 64).view(np.uint8), count=m).view(bool)
        signed = np.where(negative, -mag, mag)
        redo = negative & (mag == 0)  # -0 would count zero twice: drawn again
        if pending is None:
            out[:] = signed
            pending = np.flatnonzero(redo)
        else:
            out[pending] = signed
            pending = pending[redo]
    return out


def discrete_laplace(rng: object, t: ArrayLike, size: int | tuple[int, ...]) -> _I64:
    """Integers with ``P(Z = z) ∝ exp(-|z|/t')``, ``t'`` = :func:`effective_scale` of ``t``
    (``t ≤ t' ≤ t·(1 + (t + 2)·2⁻⁵⁰)``), drawn exactly from ``rng``'s bits. ``t`` may be an array
    broadcast against ``size`` (e.g. one scale per column).

    Raises
    ------
    ValueError
        ``t`` is not finite or outside ``[2⁻¹⁰, 2⁴⁰]``.
    TypeError
        ``rng`` is not a random source or a NumPy ``Generator``.

    Examples
    --------
    >>> from streamdp.privacy.randomness import SeededRandomSource
    >>> z = discrete_laplace(SeededRandomSource(1), 4.0, (2, 3))
    >>> z.shape, z.dtype
    ((2, 3), dtype('int64'))
    """
    src = as_random_source(rng)
    tt = np.asarray(t, dtype=np.float64)
    if not np.all(np.isfinite(tt) & (tt >= MIN_SCALE) & (tt <= MAX_SCALE)):
        raise ValueError(f"discrete Laplace scale must be finite and in [2**-10, 2**40], got {t!r}")
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    s = grid_divisor(np.broadcast_to(tt, shape).ravel())
    return laplace_on_grid(src, s).reshape(shape)


def dyadic_sigma(sigma: float) -> tuple[int, int]:
    """``(n, f)`` with ``n/2ᶠ ≥ sigma`` the nearest such number with ``n < 2²¹`` (or ``f = 0``)."""
    f = max(0, 20 - math.floor(math.log2(sigma)))
    n = math.ceil(math.ldexp(sigma, f))
    while f and n % 2 == 0:
        n, f = n // 2, f - 1
    return n, f


def discrete_gaussian(rng: object, sigma: float, size: int | tuple[int, ...]) -> _I64:
    """Integers with ``P(Z = z) ∝ exp(-z²/(2σ'²))``, ``σ'`` = ``sigma`` rounded up to 21
    significant bits (CKS Algorithm 3, exact).

    Raises
    ------
    ValueError
        ``sigma`` is not finite or outside ``[2⁻⁸, 2²⁴]``.

    Examples
    --------
    >>> from streamdp.privacy.randomness import SeededRandomSource
    >>> discrete_gaussian(SeededRandomSource(1), 7.5, 4).shape
    (4,)
    """
    if not (isinstance(sigma, (int, float)) and math.isfinite(sigma) and MIN_SIGMA <= sigma <= MAX_SIGMA):
        raise ValueError(f"discrete Gaussian sigma must be finite and in [2**-8, 2**24], got {sigma!r}")
    src = as_random_source(rng)
    shape = (size,) if isinstance(size, (int, np.integer)) else tuple(size)
    count = math.prod(shape)
    sig_n, f = dyadic_sigma(float(sigma))
    j = round(math.log2(sig_n) - f)  # proposal scale 2**j, within √2 of σ'
    e = 2 * f + j  # |y| - σ'²/2**j = (|y|·2**e - sig_n²) / 2**e
    radius = sig_n << (f + j)  # the exponent is d²/(2·radius²), d = |y|·2**e - sig_n²
    a_max = min((1 << (62 - e)) - 1, (1 << 31) * radius >> e)
    out = np.empty(count, dtype=np.int64)
    pending = np.arange(count)
    while pending.size:
        y = laplace_on_grid(src, np.full(pending.size, 1 << (FRACTION_BITS - j), dtype=np.uint64))
        a = np.abs(y)
        if np.any(a > a_max):
            raise OverflowError("a discrete Gaussian proposal beyond 2¹³σ (probability below e^(-2000))")
        q, r = np.divmod(np.abs((a << e) - sig_n * sig_n), radius)
        # exp(-(q + r/R)²/2) = exp(-⌊q²/2⌋ - ⌊qr/R⌋) · exp(-½)^(q odd) · exp(-frac(qr/R)) · exp(-(r/R)²/2)
        qr_int, qr_frac = np.divmod(q * r, radius)
        ok = bernoulli_exp_int(src, q * q // 2 + qr_int)
        for divisor, fracs, need in (
            (2, (), q % 2 == 1),
            (1, (qr_frac,), qr_frac > 0),
            (2, (r, r), r > 0),
        ):
            idx = np.flatnonzero(ok & need)
            if idx.size:
                parts = tuple((np.asarray(x[idx], dtype=np.uint64), radius) for x in fracs)
                ok[idx] = bernoulli_exp_fraction(src, idx.size, divisor, parts)
        out[pending[ok]] = y[ok]
        pending = pending[~ok]
    return out.reshape(shape)
