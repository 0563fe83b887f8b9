from __future__ import annotations

import hashlib
import math

import numpy as np
import pytest

from streamdp import InputError
from streamdp.privacy import HEATMAP_MECHANISMS, secure_generator
from streamdp.privacy.heatmap import (
    HeatmapGaussian,
    HeatmapLaplace,
    analytic_gaussian_sigma,
    expected_mse,
    gaussian_delta,
    gaze_map,
    liu_gaussian_sigma,
    optimal_cap,
)

SHAPE = (12, 16)


def _maps(n=200, seed=0):
    return np.random.default_rng(seed).poisson(0.8, (n, *SHAPE)).astype(float)


def test_gaze_map_counts_caps_and_orients():
    m = gaze_map(np.array([0.01, 0.01, 0.01, 0.99, 1.5]), np.array([0.99, 0.99, 0.99, 0.01, 0.5]), SHAPE, cap=2)
    assert m[0, 0] == 2  # top-left, three looks capped at 2
    assert m[-1, -1] == 1  # bottom-right
    assert m.sum() == 3  # the off-image point is ignored


def test_laplace_heatmap_noise_level_is_liu_theorem_3_5():
    mech = HeatmapLaplace(epsilon=1.0, cap=2, n_observers=200, shape=SHAPE)
    r = SHAPE[0] * SHAPE[1]
    assert mech.noise_level == pytest.approx(math.sqrt(2) * 2 * r / (1.0 * 200), rel=1e-4)
    maps = _maps()
    rng = secure_generator(1)
    clean = np.minimum(maps, 2).mean(axis=0)
    noise = np.array([mech.privatize(maps, rng) - clean for _ in range(200)])
    np.testing.assert_allclose(noise.std(), mech.noise_level, rtol=0.03)


def test_gaussian_heatmap_sigma_is_at_least_liu_and_exactly_private():
    mech = HeatmapGaussian(epsilon=1.0, delta=1e-5, cap=2, n_observers=200, shape=SHAPE)
    r = SHAPE[0] * SHAPE[1]
    assert mech.sigma_liu == pytest.approx(2 / 200 * math.sqrt(r * (0.5 + math.log(r / 1e-5))))
    assert mech.sigma >= mech.sigma_liu
    assert gaussian_delta(mech.sigma, 2 * math.sqrt(r) / 200, 1.0) <= 1e-5
    maps = _maps()
    rng = secure_generator(2)
    clean = np.minimum(maps, 2).mean(axis=0)
    noise = np.array([mech.privatize(maps, rng) - clean for _ in range(200)])
    np.testing.assert_allclose(noise.std(), mech.sigma, rtol=0.03)


def test_liu_sigma_reproduces_the_paper_example():
    # n = 50,000 observers, 1050 × 1680 pixels, ε = 1.5, δ = n^-3/2, m = 1: the paper reports 0.0986
    assert liu_gaussian_sigma(1, 50000, 1050 * 1680, 1.5, 50000**-1.5) == pytest.approx(0.0986, abs=6e-4)


def test_analytic_gaussian_calibration_is_tight():
    s = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    assert gaussian_delta(s, 1.0, 1.0) <= 1e-5 < gaussian_delta(s * 0.99, 1.0, 1.0)


def test_cap_is_enforced_inside_the_mechanism():
    mech = HeatmapLaplace(epsilon=1e9, cap=1, n_observers=3, shape=(1, 2))
    out = mech.privatize(np.array([[[5.0, 0.0]], [[5.0, 0.0]], [[0.0, 0.0]]]), secure_generator(0))
    np.testing.assert_allclose(out, [[2 / 3, 0.0]], atol=1e-6)


def test_optimal_cap_follows_theorem_4_1():
    maps = _maps()
    for sigma_star in (1e-4, 1e-2, 1.0):
        m = optimal_cap(maps, sigma_star)
        errs = [expected_mse(maps, c, sigma_star) for c in range(1, int(maps.max()) + 1)]
        assert m == int(np.argmin(errs)) + 1
    assert optimal_cap(maps, 1.0) == 1 and optimal_cap(maps, 1e-4) > 1


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        pytest.param({"epsilon": 0}, ValueError, "epsilon must be finite and > 0", id="epsilon"),
        pytest.param({"cap": 0}, ValueError, "cap must be ≥ 1, got 0", id="cap"),
        pytest.param({"cap": 1.5}, TypeError, "cap must be an int", id="cap-float"),
        pytest.param({"n_observers": 0}, ValueError, "n_observers must be ≥ 1", id="observers"),
        pytest.param({"shape": (0, 3)}, ValueError, "shape must be", id="shape"),
        pytest.param({"delta": 1.0}, ValueError, "delta must be in \\(0, 1\\)", id="delta"),
    ],
)
def test_bad_heatmap_parameters(kwargs, error, message):
    base = {"epsilon": 1.0, "delta": 1e-5, "cap": 1, "n_observers": 10, "shape": SHAPE}
    with pytest.raises(error, match=message):
        HeatmapGaussian(**{**base, **kwargs})


def test_wrong_maps_are_refused():
    mech = HeatmapLaplace(epsilon=1.0, cap=1, n_observers=2, shape=SHAPE)
    with pytest.raises(InputError, match="3 maps given, the mechanism was built for 2"):
        mech.privatize(np.zeros((3, *SHAPE)), secure_generator(0))
    with pytest.raises(InputError, match="finite counts"):
        mech.privatize(np.full((2, *SHAPE), -1.0), secure_generator(0))


@pytest.mark.parametrize(
    ("noise", "params", "digest"),
    [
        pytest.param(
            "gaussian",
            {"epsilon": 1.0, "delta": 1e-5, "cap": 2, "n_observers": 50, "shape": (6, 8)},
            "7474013293f99ded74785c97",
            id="gaussian",
        ),
        pytest.param(
            "laplace",
            {"epsilon": 0.5, "cap": 3, "n_observers": 50, "shape": (6, 8)},
            "a182762dab63f32c69cbd329",
            id="laplace",
        ),
    ],
)
def test_heatmaps_reproduce_their_pinned_outputs(noise, params, digest):
    # re-pinned with the exact samplers and the lattice of the final scale (issue #12.5-6)
    maps = np.random.default_rng(0).poisson(0.8, (50, 6, 8)).astype(float)
    out = HEATMAP_MECHANISMS[noise](**params).privatize(maps, secure_generator(42))
    assert hashlib.sha256(out.tobytes()).hexdigest()[:24] == digest


# ---------------------------------------------------------------- the lattice of the final scale (issue #12.5)

HEATMAP_CONFIGS = [
    (cap, n, eps, shape)
    for cap in (1, 2, 5, 10)
    for n in (1, 7, 100, 3000)
    for eps in (0.05, 0.3, 1.0, 3.7, 10.0)
    for shape in ((1, 1), (4, 6), (32, 32), (48, 64))
]


def test_heatmap_laplace_worst_case_loss_is_at_most_epsilon_and_the_noise_no_larger_than_needed():
    """Over 320 configurations: the scale the sampler really draws (``effective_scale`` on the
    lattice of the final scale) against the sensitivity charged with one lattice step per pixel."""
    from streamdp.privacy.exact_samplers import effective_scale
    from streamdp.privacy.noise import lattice_step

    worst_excess = 0.0
    for cap, n, eps, shape in HEATMAP_CONFIGS:
        mech = HeatmapLaplace(epsilon=eps, cap=cap, n_observers=n, shape=shape)
        r = shape[0] * shape[1]
        gamma = lattice_step(mech.scale, mech.lattice_bits)  # the lattice lattice_laplace draws on
        assert gamma == mech.lattice
        drawn = gamma * float(effective_scale(mech.scale / gamma))
        charged = cap * r / n + r * gamma  # per coordinate: each pixel moves by ≤ γ/2 when rounded
        assert charged / drawn <= eps, (cap, n, eps, shape)
        ideal = cap * r / n / eps
        worst_excess = max(worst_excess, drawn / ideal - 1)
    assert worst_excess < 1e-5


@pytest.mark.parametrize(("eps", "shape"), [(0.05, (48, 64)), (10.0, (1, 1)), (1.0, (4, 6))])
def test_heatmap_laplace_output_lies_on_the_charged_lattice_with_the_charged_scale(eps, shape):
    mech = HeatmapLaplace(epsilon=eps, cap=3, n_observers=50, shape=shape)
    maps = np.random.default_rng(1).poisson(1.0, (50, *shape)).astype(float)
    clean = np.minimum(maps, 3).mean(axis=0)
    out = np.array([mech.privatize(maps, secure_generator(7)) for _ in range(1)] + [
        mech.privatize(maps, secure_generator()) for _ in range(max(1, 20_000 // (shape[0] * shape[1])))
    ])
    k = out / mech.lattice
    assert np.array_equal(k, np.rint(k))  # every output is a multiple of the charged γ
    noise = (out - clean).ravel()
    np.testing.assert_allclose(np.abs(noise).mean(), mech.scale, rtol=0.05)  # E|Laplace(b)| = b


def test_heatmap_gaussian_charges_the_lattice_of_its_final_sigma():
    from streamdp.privacy.noise import lattice_step

    for cap, n, eps, shape in HEATMAP_CONFIGS[::7]:
        mech = HeatmapGaussian(epsilon=eps, delta=1e-6, cap=cap, n_observers=n, shape=shape)
        r = shape[0] * shape[1]
        charged = cap * math.sqrt(r) / n + math.sqrt(r) * lattice_step(mech.sigma)
        assert gaussian_delta(mech.sigma, charged, eps) <= 1e-6 * (1 + 1e-9), (cap, n, eps, shape)
