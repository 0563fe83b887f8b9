"""Reachable-set sensitivity (verified by brute force), the level-keeping DCFPA, ε as a total split
by weights, and statistical checks that fail if the noise were too small."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from streamdp import InputError
from streamdp.privacy import default_profile, make_mechanism, secure_generator
from streamdp.privacy.bounds import WEIGHTS_PROFILES, weights_profile
from streamdp.privacy.mechanisms import DCFPA, LPA, DCFPABozkir, Steil, dcfpa, dcfpa_bozkir
from streamdp.privacy.sensitivity import (
    MAX_ENUMERATED,
    PREPARATIONS,
    clamp_to_reachable,
    reachable_sensitivity,
    release_matrix,
    tube_maxima,
    unit_reachable_sensitivity,
)
from streamdp.privacy.transforms import l1_sensitivity
from streamdp.signals import SIGNALS

B = default_profile()


def _reachable_grid(n: int, lo: float, hi: float, r: float, step: float) -> np.ndarray:
    """Every chunk of the grid ``lo + step·ℤ`` whose values lie in [lo, hi] and steps in [-r, r]."""
    levels = np.arange(lo, hi + step / 2, step)
    pts = np.array(list(itertools.product(levels, repeat=n)))
    ok = np.all(np.abs(np.diff(pts, axis=1)) <= r + 1e-12, axis=1)
    return pts[ok]


def _brute(kind: str, n: int, k: int, prep: str, lo: float, hi: float, r: float, step: float) -> float:
    """max over pairs of grid chunks of ‖B(y − y')‖₁ = max over sign vectors of (max − min) of sᵀBy."""
    b = release_matrix(kind, n, k, prep)
    vals = _reachable_grid(n, lo, hi, r, step) @ b.T  # (P, m)
    best = 0.0
    for s in itertools.product((-1.0, 1.0), repeat=b.shape[0]):
        proj = vals @ np.array(s)
        best = max(best, float(proj.max() - proj.min()))
    return best


@pytest.mark.parametrize("prep", PREPARATIONS)
@pytest.mark.parametrize(("kind", "k"), [("dft", 1), ("dft", 2), ("dct", 1), ("dct", 2), ("dct", 3)])
@pytest.mark.parametrize(("n", "r"), [(2, 0.5), (3, 0.5), (4, 0.5), (4, 1.0), (4, 3.0)])
def test_reachable_sensitivity_equals_brute_force_on_a_grid_holding_every_vertex(prep, kind, k, n, r):
    # width 2, r a multiple of 0.5: every vertex of the reachable set lies on the 0.5-grid
    if k > make_max_k(kind, n):
        pytest.skip("k beyond the transform")
    got, exact = reachable_sensitivity(kind, n, k, prep, np.array([2.0]), np.array([r]))
    want = _brute(kind, n, k, prep, -1.0, 1.0, r, 0.5)
    assert exact
    assert got[0] == pytest.approx(want, rel=2e-6, abs=1e-9)
    assert got[0] >= want  # never below: rounded up for the solver's tolerance


def make_max_k(kind: str, n: int) -> int:
    return n // 2 if kind == "dft" else n


def _lp_max(v: np.ndarray, rho: float) -> float:
    """The reference: ``max vᵀy`` over ``|yᵢ| ≤ 1``, ``|yᵢ₊₁ − yᵢ| ≤ rho`` by HiGHS."""
    from scipy.optimize import linprog

    n = v.size
    steps = np.diff(np.eye(n), axis=0)  # row i: y_{i+1} − y_i
    res = linprog(-v, A_ub=np.vstack((steps, -steps)), b_ub=np.full(2 * (n - 1), rho), bounds=(-1, 1), method="highs")
    assert res.status == 0, res.message
    return -float(res.fun)


def _shipped_rhos() -> list[float]:
    """The normalized step bounds ``ρ = r/h`` of the shipped profiles' features (ρ < 2 binds)."""
    rhos: set[float] = set()
    for signal in SIGNALS.values():
        b = signal.bounds_profile()
        rhos.update((2.0 * b.step_bound / b.width).tolist())
    return sorted(r for r in rhos if r < 2.0)


def test_the_shipped_profiles_have_step_bounds_that_bind():
    # else the comparisons below would test the box only
    assert len(_shipped_rhos()) >= 10


@pytest.mark.parametrize("n", [2, 3, 5, 8, 17, 64])
def test_the_dynamic_programme_equals_the_linear_programme(n):
    rng = np.random.default_rng(n)
    rhos = [0.01, 0.37, 1.0, 1.99, 2.0 / (n - 1) if n > 1 else 1.0, *rng.uniform(0.001, 2.5, 4)]
    for rho in rhos:
        # dense, sparse and integer directions (ties between breakpoints and flat tops)
        v = np.vstack((rng.normal(size=(3, n)), rng.normal(size=(2, n)) * (rng.random((2, n)) < 0.3)))
        v = np.vstack((v, rng.integers(-2, 3, size=(2, n)).astype(float)))
        got = tube_maxima(v, float(rho))
        want = np.array([_lp_max(row, float(rho)) for row in v])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-8 * max(1.0, np.abs(v).sum()))


def test_the_dynamic_programme_is_refused_without_a_step_bound():
    with pytest.raises(ValueError, match=r"rho must be > 0, got 0\.0"):
        tube_maxima(np.ones((1, 4)), 0.0)
    with pytest.raises(ValueError, match="directions must be a non-empty"):
        tube_maxima(np.ones(4), 0.5)


def _lp_unit(kind: str, n: int, k: int, prep: str, rho: float) -> float:
    b = release_matrix(kind, n, k, prep)
    signs = itertools.product((1.0, -1.0), repeat=b.shape[0] - 1)
    return max(_lp_max(np.array((1.0, *s)) @ b, rho) for s in signs)


def _sample_of_settings(count: int) -> list[tuple[str, int, int, str, float]]:
    """(kind, n, k, preparation, ρ): every chunk length a mechanism takes up to 256, the k with an
    exact reachable sensitivity, the shipped profiles' ρ; a fixed pseudo-random sample."""
    rng = np.random.default_rng(2024)
    rhos = _shipped_rhos()
    out = []
    for _ in range(count):
        kind = ("dft", "dct")[rng.integers(2)]
        n = int(2 ** rng.integers(1, 9))
        k_max = min(n // 2 if kind == "dft" else n, (MAX_ENUMERATED + 1) // 2 if kind == "dft" else MAX_ENUMERATED)
        # k = 1 is every mechanism's default: half the sample
        k = 1 if rng.random() < 0.5 else int(rng.integers(1, k_max + 1))
        if n > 64:  # the reference solves 2^(m-1) programmes: keep the big ones few
            k = min(k, 2)
        out.append((kind, n, k, PREPARATIONS[rng.integers(3)], rhos[rng.integers(len(rhos))]))
    return out


#: the most released numbers with an exact sensitivity, at chunk lengths the mechanisms take
_LARGEST_EXACT = [
    ("dft", 32, 4, "differences", 0.13404444444444444),
    ("dft", 64, 3, "first-and-differences", 0.5),
    ("dct", 64, 8, "values", 0.0676923076923077),
    ("dct", 32, 5, "differences", 0.24),
]


@pytest.mark.parametrize(("kind", "n", "k", "prep", "rho"), _sample_of_settings(40) + _LARGEST_EXACT)
def test_the_unit_sensitivity_is_the_linear_programmes_rounded_up(kind, n, k, prep, rho):
    got, exact = unit_reachable_sensitivity(kind, n, k, prep, rho)
    want = _lp_unit(kind, n, k, prep, rho)
    assert exact
    assert got >= want  # never below the solver's optimum
    assert got <= want * (1 + 2e-6) + 1e-7


@pytest.mark.parametrize(
    ("kind", "prep"), [("dft", "first-and-differences"), ("dft", "differences"), ("dct", "differences")]
)
@pytest.mark.parametrize("n", [2, 8, 64, 256])
def test_k1_has_its_closed_form(kind, prep, n):
    # k = 1 releases the DC term: the last value (Algorithm 1) or last − first (DCFPA), times
    # 1/√n for the orthonormal DCT: 1 and min(2, (n − 1)·ρ)
    scale = 1.0 if kind == "dft" else 1.0 / np.sqrt(n)
    for rho in _shipped_rhos():
        got, exact = unit_reachable_sensitivity(kind, n, 1, prep, rho)
        closed = scale * (1.0 if prep == "first-and-differences" else min(2.0, (n - 1) * rho))
        assert exact and closed <= got <= closed * (1 + 2e-6) + 1e-8


@pytest.mark.parametrize(("n", "r"), [(3, 0.3), (4, 0.37)])
def test_reachable_sensitivity_bounds_a_fine_grid_for_incommensurate_steps(n, r):
    got, _ = reachable_sensitivity("dct", n, 2, "differences", np.array([2.0]), np.array([r]))
    fine = _brute("dct", n, 2, "differences", -1.0, 1.0, r, 2.0 / 40)
    assert fine <= got[0] <= fine * 1.15


@pytest.mark.parametrize("n", [32, 64])
def test_reachable_is_below_the_box_and_far_below_it_for_maxima(n):
    old, _ = l1_sensitivity("dft", n, 1, B.width, 2 * B.step_bound, "tight")
    new, exact = reachable_sensitivity("dft", n, 1, "first-and-differences", B.width, B.step_bound)
    assert exact and np.all(new <= old * (1 + 1e-6))
    i = B.names.index("saccade_amplitude_max")
    assert old[i] / new[i] == pytest.approx(2 * n - 1, rel=1e-5)  # 63× at n = 32, 127× at n = 64


def test_sensitivity_is_cached_and_scale_invariant():
    unit_reachable_sensitivity.cache_clear()
    a, _ = reachable_sensitivity("dft", 16, 2, "differences", np.array([2.0, 20.0]), np.array([0.1, 1.0]))
    assert a[1] == pytest.approx(10 * a[0], rel=1e-9)
    assert unit_reachable_sensitivity.cache_info().hits >= 1


def test_clamp_lands_in_the_reachable_set_and_keeps_reachable_chunks():
    rng = np.random.default_rng(0)
    x = rng.normal(0, 5, (64, 52)) * B.width + B.lo
    y = clamp_to_reachable(x, B.lo, B.hi, B.step_bound)
    assert np.all((y >= B.lo) & (y <= B.hi))
    assert np.all(np.abs(np.diff(y, axis=0)) <= B.step_bound * (1 + 1e-12))
    walk = np.cumsum(rng.uniform(-0.9, 0.9, (64, 52)) * B.step_bound, axis=0)
    inside = np.clip((B.lo + B.hi) / 2 + walk, B.lo, B.hi)
    np.testing.assert_array_equal(clamp_to_reachable(inside, B.lo, B.hi, B.step_bound), inside)


# ---------------------------------------------------------------- level and shape


@pytest.mark.parametrize("n", [16, 32, 64, 128])
@pytest.mark.parametrize(("transform", "k"), [("dft", 1), ("dft", 3), ("dct", 1), ("dct", 4)])
def test_a_constant_chunk_reconstructs_exactly_at_huge_epsilon_for_every_k(n, transform, k):
    level = B.lo + 0.37 * B.width
    x = np.tile(level, (n, 1))
    m = DCFPA(epsilon=1e12, bounds=B, chunk_length=n, transform=transform, k=k)
    out = m.privatize(x, secure_generator(0)).values
    np.testing.assert_allclose(out, x, rtol=0, atol=1e-6 * B.width.max())
    # Algorithm 1 at k = 1 turns it into a ramp from x/n to x
    ramp = DCFPABozkir(epsilon=1e12, bounds=B, chunk_length=n, transform="dft", k=1)
    got = ramp.privatize(x, secure_generator(0)).values
    np.testing.assert_allclose(got[0], level / n, rtol=1e-5, atol=1e-9)


def test_k1_returns_the_level_and_the_line_from_first_to_last_value():
    n = 32
    x = np.tile(B.lo, (n, 1)) + np.linspace(0, 1, n)[:, None] * B.step_bound * 10
    x = clamp_to_reachable(x, B.lo, B.hi, B.step_bound)
    out = DCFPA(epsilon=1e12, bounds=B, chunk_length=n).privatize(x, secure_generator(0)).values
    np.testing.assert_allclose(out.mean(axis=0), x.mean(axis=0), atol=1e-6 * B.width.max())
    np.testing.assert_allclose(out[-1] - out[0], (x[-1] - x[0]) * (n - 1) / n, atol=1e-6 * B.width.max())


def _spread(values: np.ndarray) -> float:
    return float(np.mean(np.abs(values - np.median(values))))


def test_the_level_share_is_charged_statistically():
    # one feature, constant chunk: the output's mean is the noisy level, Laplace of scale
    # width/(share·ε); with the share not charged (scale width/ε) the spread would be 2× smaller
    one = B.select([0])
    m = DCFPA(epsilon=2.0, bounds=one, chunk_length=32, level_share=0.5)
    rng = secure_generator(3)
    x = np.full((32, 1), 3.0)
    levels = np.array([m.privatize(x, rng).values.mean() for _ in range(4000)])
    want = one.width[0] / (0.5 * 2.0)  # E|Laplace(λ)| = λ
    assert _spread(levels) == pytest.approx(want, rel=0.08)


def test_dcfpa_coefficient_noise_matches_its_reachable_sensitivity_statistically():
    one = B.select([B.names.index("saccade_amplitude_max")])
    m = DCFPA(epsilon=1.0, bounds=one, chunk_length=64, level_share=0.5)
    # k = 1: the one coefficient is last − first, sensitivity 2·width over the reachable set
    assert m.sensitivity[0] == pytest.approx(2 * one.width[0], rel=1e-5)
    rng = secure_generator(4)
    x = np.full((64, 1), 10.0)
    slopes = np.array([np.ptp(m.privatize(x, rng).values) for _ in range(3000)])
    # the output rises by c·(n − 1)/n with c ~ Laplace(2·width/0.5): E|c| = λ
    want = 2 * one.width[0] / 0.5 * 63 / 64
    assert np.mean(slopes) == pytest.approx(want, rel=0.08)


def test_lpa_noise_has_the_sqrt_free_n_times_width_scale_statistically():
    one = B.select([0])
    m = LPA(epsilon=1.0, bounds=one, chunk_length=16)
    rng = secure_generator(5)
    x = np.full((16, 1), 3.0)
    noise = np.concatenate([m.privatize(x, rng).values.ravel() - 3.0 for _ in range(400)])
    assert np.mean(np.abs(noise)) == pytest.approx(16 * one.width[0], rel=0.06)


def test_steil_noise_is_delta_u_over_epsilon_statistically():
    one = B.select([0])
    m = Steil(epsilon=1.0, bounds=one, chunk_length=32, window=8)
    rng = secure_generator(6)
    x = np.full((32, 1), 3.0)
    drawn = np.concatenate([m.privatize(x, rng).values[::8, 0] - 3.0 for _ in range(1500)])
    assert np.mean(np.abs(drawn)) == pytest.approx(4 * one.width[0], rel=0.06)


# ---------------------------------------------------------------- ε: a total, split by weights


@pytest.mark.parametrize("name", ["lpa", "cfpa", "dcfpa", "dcfpa-bozkir", "steil"])
def test_epsilon_is_the_total_and_epsilon_per_feature_the_papers(name):
    total = make_mechanism(name, epsilon=52.0, bounds=B, chunk_length=32)
    per = make_mechanism(name, epsilon_per_feature=1.0, bounds=B, chunk_length=32)
    assert total.epsilon_chunk == per.epsilon_chunk == 52.0
    np.testing.assert_allclose(total.feature_epsilons, 1.0)
    np.testing.assert_allclose(total.noise_scale, per.noise_scale)
    d = total.describe()
    assert d["epsilon"] == 52.0 and d["epsilon_per_feature"] == 1.0 and d["weights"] == "equal"
    assert per.arguments()["epsilon_per_feature"] == 1.0 and "epsilon" not in per.arguments()
    assert repr(type(per)(**per.arguments())) == repr(per)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"epsilon": 1.0, "epsilon_per_feature": 1.0}, TypeError, "not both"),
        ({}, TypeError, "epsilon must be a real number"),
        ({"epsilon_per_feature": 0.0}, ValueError, "epsilon_per_feature must be finite and > 0, got 0.0"),
        ({"epsilon_per_feature": "1"}, TypeError, "epsilon_per_feature must be a real number"),
    ],
)
def test_epsilon_keywords_are_exclusive_and_validated(kwargs, error, message):
    with pytest.raises(error, match=message):
        dcfpa(bounds=B, chunk_length=32, **kwargs)


def test_weights_split_the_total_and_zero_drops_a_feature_to_a_public_constant():
    w = np.ones(52)
    w[0], w[1] = 3.0, 0.0
    b = B.with_weights(w, "mine")
    m = LPA(epsilon=53.0, bounds=b, chunk_length=16)
    assert m.feature_epsilons[0] == pytest.approx(3.0) and m.feature_epsilons[1] == 0.0
    assert m.feature_epsilons.sum() == pytest.approx(53.0)
    out = m.privatize(np.tile(B.lo, (16, 1)), secure_generator(0)).values
    assert np.all(out[:, 1] == (B.lo[1] + B.hi[1]) / 2)
    d = m.describe()
    assert d["weights"] == "mine" and d["dropped_features"] == ["saccade_rate"] and len(d["epsilon_per_feature"]) == 52
    assert b.digest() != B.digest() and B.with_weights(np.full(52, 2.0), "x").digest() == B.digest()
    per = LPA(epsilon_per_feature=1.0, bounds=b, chunk_length=16)
    assert per.epsilon == 51.0 and per.describe()["epsilon_per_feature"] == 1.0


def test_weights_are_validated_and_round_trip_through_a_file(tmp_path):
    with pytest.raises(InputError, match=r"weight .* must be ≥ 0"):
        B.with_weights(np.r_[-1.0, np.ones(51)], "bad")
    with pytest.raises(InputError, match="every weight is 0"):
        B.with_weights(np.zeros(52), "none")
    with pytest.raises(InputError, match="unknown feature"):
        B.with_weights({"nope": 1.0}, "bad")
    b = default_profile("task")
    import json

    path = tmp_path / "p.json"
    path.write_text(json.dumps(b.to_dict()))
    loaded = type(b).load(path)
    np.testing.assert_array_equal(loaded.feature_weights, b.feature_weights)


def test_the_shipped_allocations_cover_the_schema():
    assert "task" in WEIGHTS_PROFILES
    for name in WEIGHTS_PROFILES:
        w = weights_profile(name)
        assert set(w) == set(B.names) and all(v >= 0 for v in w.values()) and any(w.values())
    with pytest.raises(ValueError, match="weights must be one of"):
        weights_profile("mine")


def test_bozkir_factory_and_registry_name():
    m = dcfpa_bozkir(epsilon=52.0, bounds=B, chunk_length=32)
    assert make_mechanism("dcfpa-bozkir", epsilon=52.0, bounds=B, chunk_length=32).describe() == m.describe()
