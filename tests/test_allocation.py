"""The allocation of ε fitted to a task (issue #21 item 1): the closed form is the optimum of its
objective, found again by brute force over the simplex; the objective is what the real mechanisms
spend and add; Fisher's separability on clipped values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.offline.fit_weights import unit_noise
from streamdp.postprocess import noise_model
from streamdp.privacy import make_mechanism
from streamdp.privacy.allocation import allocation_loss, separability, split_weights, usefulness


def _simplex(features: int, steps: int) -> np.ndarray:
    """Every weight vector of the simplex on a grid of 1/steps, each weight ≥ 1/steps."""
    cuts = np.array(list(itertools.combinations(range(1, steps), features - 1)))
    edges = np.hstack((np.zeros((len(cuts), 1)), cuts, np.full((len(cuts), 1), steps)))
    return np.diff(edges, axis=1) / steps


def _grid_losses(grid: np.ndarray, useful: np.ndarray, noise: np.ndarray) -> np.ndarray:
    # Σw = 1 on the grid, so εᵢ = wᵢ at ε = 1
    return ((useful * noise) / grid**2).sum(axis=1)


def _brute_force_check(weights: np.ndarray, useful: np.ndarray, noise: np.ndarray, steps: int) -> None:
    """``weights`` is the optimum: no grid point does better, and the best grid point lies within
    two grid steps of it in every coordinate."""
    grid = _simplex(len(useful), steps)
    losses = _grid_losses(grid, useful, noise)
    best = grid[np.argmin(losses)]
    loss = allocation_loss(weights, useful, noise)
    assert loss <= losses.min() * (1 + 1e-12), (loss, losses.min())
    assert np.max(np.abs(best - weights)) <= 2.0 / steps, (best, weights)


#: (usefulness, relative unit noise): three and four features, spread over orders of magnitude
CASES = {
    "three-cubes": ([1.0, 8.0, 27.0], [1.0, 1.0, 1.0]),
    "three-noise-differs": ([1.0, 1.0, 1.0], [0.5, 4.0, 40.0]),
    "three-both": ([0.3, 2.0, 9.0], [12.0, 1.5, 0.2]),
    "four-mixed": ([0.05, 1.0, 3.0, 20.0], [10.0, 11.0, 2.0, 0.5]),
    "four-wide": ([100.0, 0.1, 1.0, 10.0], [1.0, 100.0, 0.01, 3.0]),
}


@pytest.mark.parametrize(("useful", "noise"), CASES.values(), ids=CASES.keys())
def test_the_closed_form_is_the_brute_force_optimum(useful, noise):
    u, a = np.array(useful), np.array(noise)
    w = split_weights(u, a)
    assert w.sum() == pytest.approx(1.0) and np.all(w > 0)
    _brute_force_check(w, u, a, steps=300 if len(u) == 3 else 90)
    # and its value is the stated minimum, (Σ (uᵢaᵢ)^(1/3))³ / ε²
    assert allocation_loss(w, u, a, epsilon=4.0) == pytest.approx(np.cbrt(u * a).sum() ** 3 / 16.0)


@pytest.mark.parametrize("seed", range(4))
def test_random_cases_too(seed):
    rng = np.random.default_rng(seed)
    features = 3 + seed % 2
    u, a = 10.0 ** rng.uniform(-2, 2, features), 10.0 ** rng.uniform(-1, 1, features)
    _brute_force_check(split_weights(u, a), u, a, steps=300 if features == 3 else 90)


@pytest.mark.parametrize("exponent", [1 / 2, 1 / 4, 1.0])
def test_the_check_refuses_another_exponent(exponent):
    # the same check, run on the split another exponent would give: it fails, so a wrong closed
    # form in split_weights cannot pass the tests above
    u, a = np.array(CASES["three-cubes"][0]), np.array(CASES["three-cubes"][1])
    root = (u * a) ** exponent
    with pytest.raises(AssertionError):
        _brute_force_check(root / root.sum(), u, a, steps=300)


def test_a_useless_feature_gets_nothing_and_the_split_is_scale_free():
    u, a = np.array([0.0, 2.0, 5.0]), np.array([3.0, 1.0, 1.0])
    w = split_weights(u, a)
    assert w[0] == 0.0
    # the useful ones are split as if the useless one did not exist
    assert w[1:] == pytest.approx(split_weights(u[1:], a[1:]))
    # the split does not change with the scale of the usefulness or of the noise (nor with ε)
    assert split_weights(7.0 * u, 0.1 * a) == pytest.approx(w)
    assert allocation_loss(w, u, a, epsilon=10.0) == pytest.approx(allocation_loss(w, u, a) / 100.0)
    assert allocation_loss([1.0, 1.0, 0.0], u, a) == float("inf")


@pytest.mark.parametrize("mechanism", ["dcfpa", "cfpa", "lpa", "dcfpa-bozkir"])
def test_the_objective_is_what_the_real_mechanism_spends_and_adds(mechanism):
    # weights → εᵢ = ε·wᵢ/Σw → noise variance aᵢ·(hi − lo)²/εᵢ², through the mechanism itself: the
    # loss computed from the noise the mechanism really adds is the allocation's, and no other
    # split of the same ε does better
    config = SessionConfig(mechanism=mechanism, chunk_length=32)
    a, _ = unit_noise(config)
    rng = np.random.default_rng(3)
    u = np.where(rng.uniform(size=a.size) < 0.3, 0.0, 10.0 ** rng.uniform(-2, 1, a.size))
    bounds = config.bounds_profile()

    def real_loss(weights: np.ndarray, epsilon: float = 26.0) -> float:
        profile = bounds.with_weights(weights, "fitted")
        mech = make_mechanism(mechanism, epsilon=epsilon, bounds=profile, chunk_length=32)
        step = noise_model({**mech.describe(), "bounds_digest": profile.digest()}, profile).step_variance
        return float(np.sum(u * step / bounds.width**2))

    w = split_weights(u, a)
    fitted = real_loss(w)
    assert fitted == pytest.approx(allocation_loss(w, u, a, epsilon=26.0), rel=1e-4)
    for _ in range(5):
        other = np.where(u > 0, w * np.exp(rng.normal(0.0, 0.3, w.size)), 0.0)
        assert real_loss(other) > fitted
    assert real_loss(np.where(u > 0, 1.0, 0.0)) > fitted


def test_separability_is_fisher_s_ratio_on_the_clipped_values():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.3, 0.05, (200, 3)), rng.normal(0.5, 0.05, (100, 3))
    # feature 2 differs between the classes only beyond hi: clipped, it does not separate them
    a[:, 2], b[:, 2] = 2.0 + rng.uniform(size=200), 5.0 + rng.uniform(size=100)
    rows, labels = np.vstack((a, b)), ["a"] * 200 + ["b"] * 100
    s = separability(rows, labels, lo=[0.0, 0.0, 0.0], hi=[1.0, 2.0, 1.0])
    z = rows[:, 0]
    means = np.array([z[:200].mean(), z[200:].mean()])
    between = (2 / 3) * (means[0] - z.mean()) ** 2 + (1 / 3) * (means[1] - z.mean()) ** 2
    within = (200 * z[:200].var() + 100 * z[200:].var()) / 300
    assert s[0] == pytest.approx(between / within)
    assert s[1] == pytest.approx(s[0], rel=0.5) and s[0] > 2  # a wider range changes nothing
    assert s[2] == 0.0
    # the rows' order does not matter
    order = rng.permutation(300)
    assert separability(rows[order], [labels[i] for i in order], lo=[0, 0, 0], hi=[1, 2, 1]) == pytest.approx(s)


def test_usefulness_gives_nothing_to_what_separates_the_protected_classes_more():
    assert usefulness([3.0, 1.0, 2.0], [1.0, 1.5, 0.0]).tolist() == [2.0, 0.0, 2.0]
    assert usefulness([3.0, 1.0]).tolist() == [3.0, 1.0]


BAD_CALLS = {
    "split-all-useless": (lambda: split_weights([0.0, 0.0], [1.0, 1.0]), ValueError, "nothing to release"),
    "split-zero-noise": (lambda: split_weights([1.0, 1.0], [1.0, 0.0]), ValueError, "unit_noise must be > 0"),
    "split-lengths": (lambda: split_weights([1.0, 1.0], [1.0]), ValueError, "unit_noise must be 2 values"),
    "split-nan": (lambda: split_weights([1.0, np.nan], [1.0, 1.0]), ValueError, "useful must be finite"),
    "loss-epsilon": (lambda: allocation_loss([1.0], [1.0], [1.0], epsilon=0.0), ValueError, "epsilon must be"),
    "loss-all-zero": (lambda: allocation_loss([0.0], [1.0], [1.0]), ValueError, "not all 0"),
    "one-class": (lambda: separability(np.ones((2, 1)), ["a", "a"], lo=[0], hi=[1]), ValueError, "two classes"),
    "labels-count": (lambda: separability(np.ones((2, 1)), ["a"], lo=[0], hi=[1]), ValueError, "one class per row"),
    "bounds-inverted": (lambda: separability(np.ones((2, 1)), ["a", "b"], lo=[1], hi=[0]), ValueError, "lo must"),
    "protect-negative": (lambda: usefulness([1.0], [-1.0]), ValueError, "must be ≥ 0"),
}


@pytest.mark.parametrize(("call", "error", "message"), BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_arguments_are_refused_naming_them(call, error, message):
    with pytest.raises(error, match=message):
        call()
