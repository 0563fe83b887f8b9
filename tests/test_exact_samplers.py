"""The exact samplers and the random sources: exact laws (chi-square against the exact pmf), the
far tails by construction, the scale (a test that fails if it were halved), and the sources'
contracts (OS bits, seeds reproducible and labelled, wrong types refused)."""

from __future__ import annotations

import math
import os
import pickle
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from streamdp.privacy.exact_samplers import (
    FRACTION_BITS,
    bernoulli_exp_fraction,
    bernoulli_fraction,
    bernoulli_reciprocals,
    discrete_gaussian,
    discrete_laplace,
    effective_scale,
    geometric_exp1,
    grid_divisor,
    laplace_pairs,
    run_lengths,
)
from streamdp.privacy.noise import lattice_laplace, lattice_step, secure_generator
from streamdp.privacy.randomness import (
    CRYPTOGRAPHIC,
    REPRODUCIBLE,
    RandomSource,
    SeededRandomSource,
    SystemRandomSource,
    as_random_source,
)


def _chi_square_pvalue(z, pmf, lo, hi):
    """p-value of the counts of ``z`` in ``lo..hi`` (tails pooled into the end bins) against ``pmf``."""
    support = np.arange(lo, hi + 1)
    p = pmf(support).astype(float)
    p[0] += pmf_tail(pmf, lo, -1)
    p[-1] += pmf_tail(pmf, hi, +1)
    observed = np.bincount(np.clip(z, lo, hi) - lo, minlength=support.size)
    return stats.chisquare(observed, p / p.sum() * z.size).pvalue


def pmf_tail(pmf, edge, direction):
    far = edge + direction * np.arange(1, 4000)
    return float(pmf(far).sum())


def _laplace_pmf(t):
    q = math.exp(-1.0 / t)
    return lambda v: (1 - q) / (1 + q) * q ** np.abs(v)


def _gaussian_pmf(sigma):
    norm = np.exp(-(np.arange(-4000, 4001) ** 2) / (2 * sigma**2)).sum()
    return lambda v: np.exp(-(np.asarray(v, dtype=float) ** 2) / (2 * sigma**2)) / norm


# ---------------------------------------------------------------- exact laws


@pytest.mark.parametrize("t", [0.7, 3.0, 12.5])
def test_discrete_laplace_has_the_exact_two_sided_geometric_law(t):
    z = discrete_laplace(SeededRandomSource(1), t, 300_000)
    t_eff = float(effective_scale(t))
    assert t <= t_eff < t * (1 + 1e-12)
    lim = int(6 * t) + 2
    assert _chi_square_pvalue(z, _laplace_pmf(t_eff), -lim, lim) > 1e-4
    q = math.exp(-1 / t_eff)
    np.testing.assert_allclose(z.var(), 2 * q / (1 - q) ** 2, rtol=0.02)
    assert abs(z.mean()) < 5 * math.sqrt(2 * q / (1 - q) ** 2 / z.size)


def test_discrete_laplace_is_symmetric_and_counts_zero_once():
    z = discrete_laplace(SeededRandomSource(2), 2.0, 400_000)
    pos, neg = np.bincount(z[z > 0], minlength=12)[1:12], np.bincount(-z[z < 0], minlength=12)[1:12]
    mid = (pos + neg) / 2
    assert stats.chisquare(np.concatenate([pos, neg]), np.concatenate([mid, mid])).pvalue > 1e-4  # P(z) = P(-z)
    q = math.exp(-1 / float(effective_scale(2.0)))
    assert abs((z == 0).mean() - (1 - q) / (1 + q)) < 4e-3  # -0 is not a second zero


def test_a_halved_scale_is_detected():
    """The statistical test above can fail: at half the scale the same sample is far off."""
    z = discrete_laplace(SeededRandomSource(3), 3.0, 300_000)
    assert _chi_square_pvalue(z, _laplace_pmf(1.5), -20, 20) < 1e-12
    q = math.exp(-1 / 1.5)
    assert abs(z.var() - 2 * q / (1 - q) ** 2) > 0.5 * z.var()


def test_one_call_serves_values_of_different_scales():
    t = np.array([0.5, 4.0, 40.0])
    z = discrete_laplace(SeededRandomSource(4), t, (200_000, 3))
    for col, tc in enumerate(t):
        q = math.exp(-1 / float(effective_scale(tc)))
        np.testing.assert_allclose(np.abs(z[:, col]).mean(), 2 * q / (1 - q * q), rtol=0.02)


@pytest.mark.parametrize("sigma", [0.8, 3.0, 7.5])
def test_discrete_gaussian_has_the_exact_law(sigma):
    z = discrete_gaussian(SeededRandomSource(5), sigma, 200_000)
    lim = int(4 * sigma) + 2
    assert _chi_square_pvalue(z, _gaussian_pmf(sigma), -lim, lim) > 1e-4
    assert abs(z.mean()) < 5 * sigma / math.sqrt(z.size)


def test_discrete_gaussian_at_a_lattice_sized_sigma():
    sigma = 1_234_567.25  # σ in lattice units is between 2**20 and 2**21
    z = discrete_gaussian(SeededRandomSource(6), sigma, 100_000)
    np.testing.assert_allclose(z.std(), sigma, rtol=0.01)
    assert stats.kstest(z / sigma, "norm").pvalue > 1e-4


# ---------------------------------------------------------------- the tails, by construction and statistically


def test_the_geometric_part_is_a_run_length_with_no_upper_bound():
    """|Y| = ⌊(U + 2⁵²·V)/s⌋ with V the length of a run of Bernoulli(e⁻¹) successes: a run of 60
    gives V = 60, i.e. |Z| ≥ 60 scales, where a 53-bit float inverse CDF stops near 37."""
    stream = np.ones(200, dtype=bool)
    stream[[0, 61, 63]] = False
    assert run_lengths(np.flatnonzero(~stream)).tolist() == [0, 60, 1]
    v = geometric_exp1(SeededRandomSource(7), 3, trials=stream)
    assert v.tolist() == [0, 60, 1]
    # a float inverse CDF −t·log(u) with u ≥ 2⁻⁵³ can never exceed 53·ln 2 ≈ 36.7 scales
    assert 60 > 53 * math.log(2)


def test_run_lengths_carry_across_batches():
    stream = np.ones(500, dtype=bool)  # no failure at all in the first batch: the run carries on
    v = geometric_exp1(SeededRandomSource(8), 4, trials=stream)
    assert v[0] >= 500 and (v[1:] >= 0).all()


def test_the_geometric_count_has_the_exact_law():
    v = geometric_exp1(SeededRandomSource(9), 400_000)
    pmf = lambda k: np.where(np.asarray(k) >= 0, (1 - math.exp(-1)) * np.exp(-np.abs(k)), 0.0)  # noqa: E731
    assert _chi_square_pvalue(v, pmf, 0, 10) > 1e-4


def test_bernoulli_exp_is_exact_for_rational_gamma():
    src = SeededRandomSource(10)
    n = 400_000
    for num, den in [(1, 1), (1, 3), (7, 10)]:
        hits = bernoulli_exp_fraction(src, n, factors=((np.full(n, num, dtype=np.uint64), den),))
        p = math.exp(-num / den)
        assert abs(hits.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    half = bernoulli_exp_fraction(src, n, divisor=2)
    assert abs(half.mean() - math.exp(-0.5)) < 5 * math.sqrt(0.25 / n)


def test_bernoulli_building_blocks():
    src = SeededRandomSource(11)
    r = bernoulli_reciprocals(src, (1, 3, 7), 300_000)
    np.testing.assert_allclose(r.mean(axis=0), [1, 1 / 3, 1 / 7], atol=4e-3)
    num = np.array([3, 1 << 51, (1 << 52) - 1], dtype=np.uint64)
    f = bernoulli_fraction(src, num, 1 << 52, width=100_000)
    np.testing.assert_allclose(f.mean(axis=1), num / 2.0**52, atol=5e-3)
    g = bernoulli_fraction(src, np.array([2, 5], dtype=np.uint64), 7, width=100_000)
    np.testing.assert_allclose(g.mean(axis=1), [2 / 7, 5 / 7], atol=5e-3)


def test_the_fraction_u_has_its_truncated_exponential_law():
    u, v = laplace_pairs(SeededRandomSource(12), 200_000)
    f = u / 2.0**FRACTION_BITS  # density ∝ e^(−f) on [0, 1)
    cdf = lambda x: (1 - np.exp(-x)) / (1 - math.exp(-1))  # noqa: E731
    assert stats.kstest(f, cdf).pvalue > 1e-4
    assert abs(v.mean() - 1 / (math.e - 1)) < 0.01


def test_tail_frequency_at_nine_scales():
    """P(|Z| ≥ 9t) = 2q⁹ᵗ/(1+q): ~250 of 2·10⁶ draws, within binomial noise."""
    t = 2.0
    z = discrete_laplace(SeededRandomSource(13), t, 2_000_000)
    q = math.exp(-1 / float(effective_scale(t)))
    p = 2 * q ** math.ceil(9 * t) / (1 + q)
    count = int((np.abs(z) >= 9 * t).sum())
    assert abs(count - p * z.size) < 5 * math.sqrt(p * z.size)


def test_scales_are_rounded_up_never_down():
    t = np.exp(np.random.default_rng(0).uniform(np.log(2.0**-10), np.log(2.0**40), 10_000))
    s = grid_divisor(t)
    # exact integer check, not floating point: s·t ≤ 2⁵² ⇔ s ≤ 2⁵²/t
    assert all(int(si) * Fraction(ti) <= 2**52 for si, ti in zip(s, t, strict=True))
    assert np.all(effective_scale(t) >= t) and np.all(effective_scale(t) <= t * (1 + (t + 2) * 2.0**-50))


# ---------------------------------------------------------------- lattice output


def test_lattice_laplace_has_the_claimed_scale_and_lies_on_the_lattice():
    out = lattice_laplace(secure_generator(14), np.full(200_000, 0.3), 5.0)
    gamma = lattice_step(5.0)
    assert np.array_equal(out / gamma, np.rint(out / gamma))
    assert stats.kstest(out - 0.3, stats.laplace(scale=5.0).cdf).pvalue > 1e-4
    assert abs(np.abs(out - 0.3).mean() - 5.0) < 0.05


@pytest.mark.parametrize(("bad", "exc"), [(0.0, ValueError), (float("nan"), ValueError), (2.0**41, ValueError)])
def test_bad_scales_are_refused(bad, exc):
    with pytest.raises(exc, match="scale"):
        discrete_laplace(SeededRandomSource(0), bad, 3)
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian(SeededRandomSource(0), bad, 3)


# ---------------------------------------------------------------- sources


def test_the_os_source_is_cryptographic_and_fork_safe():
    src = secure_generator()
    assert isinstance(src, SystemRandomSource) and src.ledger_label == CRYPTOGRAPHIC and src.cryptographic
    w = src.words(100_000)
    bits = np.unpackbits(w.view(np.uint8))
    assert abs(bits.mean() - 0.5) < 0.005
    assert not np.array_equal(w[:4], secure_generator().words(4))
    if not hasattr(os, "fork"):
        return
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child must not reuse the parent's pool
        os.write(write, src.words(4).tobytes())
        os._exit(0)
    os.waitpid(pid, 0)
    child = np.frombuffer(os.read(read, 32), dtype=np.uint64)
    os.close(read)
    os.close(write)
    assert not np.array_equal(child, src.words(4))


def test_a_seeded_source_is_reproducible_and_says_it_is_not_private():
    a, b = secure_generator(5), secure_generator(5)
    assert a.ledger_label == REPRODUCIBLE and not a.cryptographic
    assert np.array_equal(discrete_laplace(a, 3.0, 50), discrete_laplace(b, 3.0, 50))
    assert not np.array_equal(discrete_laplace(secure_generator(6), 3.0, 50), discrete_laplace(a, 3.0, 50))


def test_numpy_semantics_of_the_draws_the_mechanisms_use():
    src = SeededRandomSource(15)
    ints = src.integers(0, 8, size=(20_000, 3))
    assert ints.shape == (20_000, 3) and ints.min() == 0 and ints.max() == 7
    assert stats.chisquare(np.bincount(ints.ravel(), minlength=8)).pvalue > 1e-4
    assert isinstance(src.integers(3), int) and 0 <= src.integers(3) < 3
    u = src.random(100_000)
    assert 0 <= u.min() and u.max() < 1 and stats.kstest(u, "uniform").pvalue > 1e-4
    g = src.gumbel(size=(50_000,))
    assert stats.kstest(g, stats.gumbel_r.cdf).pvalue > 1e-4
    with pytest.raises(ValueError, match="high"):
        src.integers(5, 5)


@pytest.mark.parametrize("bad", [42, "0", np.random.RandomState(0), np.random.PCG64(0), None])
def test_anything_but_a_source_or_a_numpy_generator_is_refused(bad):
    with pytest.raises(TypeError, match="random source"):
        as_random_source(bad)
    with pytest.raises(TypeError):
        discrete_laplace(bad, 1.0, 2)


def test_a_numpy_generator_is_wrapped_as_reproducible():
    src = as_random_source(np.random.default_rng(0))
    assert isinstance(src, RandomSource) and src.ledger_label == REPRODUCIBLE


@pytest.mark.parametrize("seed", [1.5, "7", True])
def test_secure_generator_refuses_a_seed_that_is_not_an_int(seed):
    with pytest.raises(TypeError, match="seed"):
        secure_generator(seed)


@pytest.mark.parametrize("seed", [-1, np.int64(-7)], ids=["int", "numpy-int"])
def test_secure_generator_refuses_a_negative_seed_by_name(seed):
    with pytest.raises(ValueError, match=r"^seed must be ≥ 0, got "):
        secure_generator(seed)


def test_the_os_source_is_not_pickled_with_its_pool():
    with pytest.raises(TypeError):
        pickle.dumps(secure_generator())  # its lock refuses: a copy would hand out the same bits


# ---------------------------------------------------------------- draws kept ahead (small calls)


def test_small_calls_cut_from_draws_kept_ahead_keep_the_exact_law():
    """A chunk's noise is ~100 values: they come from (U, V) pairs drawn 2048 at a time and kept
    by the source. Many small calls together must still have the exact law, independently."""
    src = SeededRandomSource(16)
    t = 3.0
    z = np.array([discrete_laplace(src, t, 104) for _ in range(3000)])
    t_eff = float(effective_scale(t))
    assert _chi_square_pvalue(z.ravel(), _laplace_pmf(t_eff), -20, 20) > 1e-4
    assert _chi_square_pvalue(z.ravel(), _laplace_pmf(t / 2), -20, 20) < 1e-12  # the test can fail
    # no value reused across or within calls: consecutive calls and positions are uncorrelated
    assert abs(np.corrcoef(z[:-1].ravel(), z[1:].ravel())[0, 1]) < 5 / math.sqrt(z.size)
    assert abs(np.corrcoef(z[:, :-1].ravel(), z[:, 1:].ravel())[0, 1]) < 5 / math.sqrt(z.size)


def test_draws_kept_ahead_are_handed_out_once_in_order():
    calls = []

    def draw(n):
        calls.append(n)
        start = sum(calls) - n
        return (np.arange(start, start + n),)

    src = SeededRandomSource(17)
    got = np.concatenate([src.take_ahead("rows", 300, draw, 1000)[0] for _ in range(7)])
    assert got.tolist() == list(range(2100)) and calls == [1000, 1000, 1000]
    assert src.take_ahead("rows", 5000, draw, 1000)[0].size == 5000  # larger than a batch: drawn whole
    assert not as_random_source(np.random.default_rng(0)).keeps_draws_ahead  # a wrapper built per call


def test_a_copy_of_a_seeded_source_continues_identically_with_its_draws_kept_ahead():
    seeded = secure_generator(3)
    discrete_laplace(seeded, 3e6, 10)  # leaves ~2000 pairs kept ahead
    copy = pickle.loads(pickle.dumps(seeded))
    assert np.array_equal(discrete_laplace(copy, 3e6, 3000), discrete_laplace(seeded, 3e6, 3000))
    assert np.array_equal(discrete_laplace(copy, 3e6, 104), discrete_laplace(seeded, 3e6, 104))
    with pytest.raises(TypeError):
        pickle.dumps(secure_generator())  # the OS source: never copied, its draws kept ahead neither


def test_draws_kept_ahead_are_not_shared_with_a_forked_child():
    src = secure_generator()
    discrete_laplace(src, 3e6, 104)  # leaves ~1900 pairs kept ahead
    if not hasattr(os, "fork"):
        return
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child must not add the noise the parent adds next
        os.write(write, discrete_laplace(src, 3e6, 104).tobytes())
        os._exit(0)
    os.waitpid(pid, 0)
    child = np.frombuffer(os.read(read, 8 * 104), dtype=np.int64)
    os.close(read)
    os.close(write)
    # magnitudes, not signs: the signs come from the byte pool, which the child drops anyway
    assert not np.array_equal(np.abs(child), np.abs(discrete_laplace(src, 3e6, 104)))


def test_seeded_draws_are_pinned_exactly():
    """The samplers use integers only: a seed gives the same draws on every CPU, bit for bit
    (no BLAS, no SIMD-dispatched float function decides a draw)."""
    lap = discrete_laplace(SeededRandomSource(5), np.array([0.5, 3.0, 1e6]), (4, 3))
    assert lap.tolist() == [[0, 1, -408473], [0, 0, 234510], [-1, 2, 392404], [0, 9, -879651]]
    assert discrete_gaussian(SeededRandomSource(6), 7.5, 12).tolist() == [-4, 2, 18, 2, -5, -5, 13, 3, -14, -12, 9, -3]
    kept = bernoulli_exp_fraction(SeededRandomSource(7), 40, factors=((np.full(40, 3, dtype=np.uint64), 7),))
    assert np.flatnonzero(kept).tolist() == [0, 2, 3, 4, 6, 13, 16, 17, 20, 21, 23, 24, 26, 27, 28, 30, 33, 35, 38, 39]
