"""The exact exponential mechanism: its law (χ² over ≥ 10⁵ draws), its guarantee, its exactness."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from streamdp.privacy import default_profile, make_mechanism
from streamdp.privacy.randomness import SeededRandomSource, SystemRandomSource
from streamdp.privacy.selection import (
    exponential_select,
    selection_exponents,
    selection_probabilities,
    utility_grid,
)

DRAWS = 120_000


def _counts(utility, *, sensitivity, epsilon, draws=DRAWS, rng=None):
    """Selections of one column repeated ``draws`` times (columns are independent selections).

    Seeded by default: integers alone decide a selection, so a seed gives the same counts on every
    machine and a χ² test at p > 0.01 cannot fail one run in a hundred by chance alone.
    """
    u = np.repeat(np.asarray(utility, dtype=np.float64)[:, None], draws, axis=1)
    src = SeededRandomSource(2019) if rng is None else rng
    picked = exponential_select(src, u, sensitivity=sensitivity, epsilon=epsilon)
    return np.bincount(picked, minlength=u.shape[0])


def _float_law(utility, sensitivity, epsilon):
    """The textbook exponential mechanism in floating point: P ∝ exp(ε·u/(2Δ))."""
    z = epsilon * np.asarray(utility, dtype=np.float64) / (2 * sensitivity)
    w = np.exp(z - z.max())
    return w / w.sum()


# two candidates closer than the grid (g = 2**-20 for Δ = 1) share one grid value
NEAR_TIE = [0.0, -0.4, -1.0, -1.0 - 2.0**-23, -2.5, -6.0]


@pytest.mark.parametrize(
    ("utility", "sensitivity", "epsilon"),
    [
        pytest.param(NEAR_TIE, 1.0, 2.0, id="near-tie-below-the-grid"),
        pytest.param([-3.0, 0.0, -1.5, -0.2], 0.7, 5.0, id="peaked"),
        pytest.param(list(-np.arange(32) * 0.37), 3.2, 0.4, id="32-candidates-flat"),
        pytest.param([5.0e6, 5.0e6 - 3.0, 5.0e6 - 40.0], 10.0, 9.0, id="large-utilities"),
    ],
)
def test_the_sampled_law_is_the_exact_one_and_the_float_one(utility, sensitivity, epsilon):
    counts = _counts(utility, sensitivity=sensitivity, epsilon=epsilon)
    exact = selection_probabilities(np.asarray(utility)[:, None], sensitivity=sensitivity, epsilon=epsilon)[:, 0]
    seen = exact * DRAWS > 0
    assert counts[~seen].sum() == 0
    assert stats.chisquare(counts[seen], exact[seen] * DRAWS).pvalue > 0.01
    # the float exponential mechanism's law (what the Gumbel argmax sampled) agrees within sampling error
    floating = _float_law(utility, sensitivity, epsilon)
    np.testing.assert_allclose(exact, floating, rtol=1e-4, atol=1e-12)  # the grid costs ~2⁻¹⁹ of ε
    assert stats.chisquare(counts[seen], floating[seen] / floating[seen].sum() * DRAWS).pvalue > 0.01


def test_the_cryptographic_source_selects_by_the_same_law():
    """The release path (operating-system bits) draws from the law too; unseeded, so its χ² bar is
    set where a correct sampler fails once in a million runs, and a wrong law still fails it."""
    utility = [-3.0, 0.0, -1.5, -0.2]
    counts = _counts(utility, sensitivity=0.7, epsilon=5.0, rng=SystemRandomSource())
    exact = selection_probabilities(np.asarray(utility)[:, None], sensitivity=0.7, epsilon=5.0)[:, 0]
    assert stats.chisquare(counts, exact * DRAWS).pvalue > 1e-6
    halved = selection_probabilities(np.asarray(utility)[:, None], sensitivity=0.7, epsilon=2.5)[:, 0]
    assert stats.chisquare(counts, halved * DRAWS).pvalue < 1e-6


def test_candidates_closer_than_the_grid_are_equally_likely():
    whole, frac = selection_exponents(np.asarray(NEAR_TIE)[:, None], sensitivity=1.0, epsilon=2.0)
    assert whole[2, 0] == whole[3, 0] and frac[2, 0] == frac[3, 0]
    assert utility_grid(1.0) == 2.0**-20


def test_the_guarantee_holds_on_every_pair_of_neighbouring_utilities():
    """ln P(j|u)/P(j|u') ≤ ε for utilities that differ by at most Δ in every entry: over random
    worst-case shifts (every entry moved ±Δ, the direction that helps one candidate most)."""
    rng = np.random.default_rng(5)
    eps, delta = 1.3, 0.8
    worst = 0.0
    for _ in range(300):
        u = rng.normal(0, 2, size=6)
        for j in range(6):
            v = u - delta
            v[j] = u[j] + delta
            p = selection_probabilities(u[:, None], sensitivity=delta, epsilon=eps)[:, 0]
            q = selection_probabilities(v[:, None], sensitivity=delta, epsilon=eps)[:, 0]
            worst = max(worst, float(np.max(np.abs(np.log(q / p)))))
    assert worst <= eps
    assert worst > 0.9 * eps  # the pairs reach the bound: this test could fail


def test_a_selection_spending_twice_its_epsilon_is_told_apart():
    """The χ² test above has the power to see a missing factor 2 (ε spent twice over)."""
    u = [0.0, -0.5, -1.0, -2.0]
    counts = _counts(u, sensitivity=1.0, epsilon=4.0)
    declared = selection_probabilities(np.asarray(u)[:, None], sensitivity=1.0, epsilon=2.0)[:, 0]
    assert stats.chisquare(counts, declared * DRAWS).pvalue < 1e-6


def test_seeded_selections_are_pinned_exactly():
    """Integers only decide: the same seed gives the same choices on every machine."""
    u = -np.random.default_rng(0).integers(0, 3000, size=(16, 52)) / 1000  # exact inputs
    picked = exponential_select(SeededRandomSource(11), u, sensitivity=1.0, epsilon=3.0)
    assert picked.tolist()[:20] == PINNED_SELECTION
    assert np.bincount(picked, minlength=16).tolist() == PINNED_SELECTION_COUNTS


PINNED_SELECTION = [9, 8, 2, 2, 12, 0, 0, 0, 14, 4, 12, 14, 8, 6, 11, 0, 9, 11, 6, 5]
PINNED_SELECTION_COUNTS = [5, 2, 5, 3, 3, 7, 2, 2, 5, 4, 1, 5, 4, 1, 2, 1]


def test_the_exponents_are_exact_integers_and_fractions():
    whole, frac = selection_exponents([[0.0], [-1.0], [-100.0]], sensitivity=1.0, epsilon=1.0)
    assert whole.dtype == np.int64 and frac.dtype == np.uint64
    e = whole[:, 0] + frac[:, 0].astype(float) * 2.0**-62
    # ε·d/(2Δ') with Δ' = Δ + 2g, rounded down by at most 2**-20 of itself
    expected = np.array([0.0, 1.0, 100.0]) / (2 * (1 + 2 * 2.0**-20))
    assert np.all(e <= expected) and np.all(e >= expected * (1 - 2.0**-19))


def test_private_k_is_chosen_by_the_exact_selection():
    m = make_mechanism("dcfpa", epsilon=52.0, bounds=default_profile(), chunk_length=16, k="private")
    x = np.tile((default_profile().lo + default_profile().hi) / 2, (16, 1))
    ks = np.array([m.privatize(x, SeededRandomSource(s)).k for s in range(400)])
    assert ks.min() >= 1 and ks.max() <= 8
    # feature 0's k follows the declared law of its utility
    v = m._vector(m._prepare(x)[0])
    law = selection_probabilities(m._k_utility(v), sensitivity=m.delta2, epsilon=m._noise_epsilons * m.k_epsilon_share)
    counts = np.bincount(ks[:, 0] - 1, minlength=8)
    seen = law[:, 0] * 400 > 5
    assert stats.chisquare(counts[seen], law[seen, 0] / law[seen, 0].sum() * counts[seen].sum()).pvalue > 0.001


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        pytest.param({"utility": [[np.nan], [0.0]]}, ValueError, "utility must be finite", id="nan-utility"),
        pytest.param({"utility": [0.0, 1.0]}, ValueError, "utility must be a", id="one-dimensional"),
        pytest.param({"utility": np.zeros((0, 3))}, ValueError, "at least one candidate", id="no-candidate"),
        pytest.param({"sensitivity": 0.0}, ValueError, "sensitivity must be finite and > 0", id="zero-sensitivity"),
        pytest.param({"sensitivity": np.inf}, ValueError, "sensitivity must be finite", id="inf-sensitivity"),
        pytest.param({"epsilon": -1.0}, ValueError, "epsilon must be finite and > 0", id="negative-epsilon"),
        pytest.param({"epsilon": [1.0, 2.0]}, ValueError, "broadcast", id="epsilon-of-other-width"),
        pytest.param({"rng": 42}, TypeError, "rng must be a random source", id="seed-instead-of-source"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, error, match):
    args = {"rng": SeededRandomSource(0), "utility": [[0.0], [-1.0]], "sensitivity": 1.0, "epsilon": 1.0, **kwargs}
    rng = args.pop("rng")
    utility = args.pop("utility")
    with pytest.raises(error, match=match):
        exponential_select(rng, utility, **args)


def test_a_feature_of_weight_0_has_a_public_k():
    """A dropped feature's values are a public constant: its k must not come from its data."""
    bounds = default_profile("task")
    dropped = ~bounds.released
    assert dropped.any()
    m = make_mechanism("dcfpa", epsilon=52.0, bounds=bounds, chunk_length=16, k="private")
    rng = np.random.default_rng(4)
    ks = []
    for seed in range(40):
        x = bounds.lo + rng.uniform(0, 1, (16, 52)) * bounds.width
        ks.append(m.privatize(x, SeededRandomSource(seed)).k)
    ks = np.array(ks)
    assert np.all(ks[:, dropped] == m.k_candidates[0])
    assert len(np.unique(ks[:, bounds.released])) > 1  # the released ones are chosen (the test can fail)
