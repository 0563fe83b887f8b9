from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from streamdp import InputError
from streamdp.privacy import (
    LaplacePerturbation,
    SteilSubsampling,
    WholeSignalFPA,
    cfpa,
    dcfpa,
    default_profile,
    make_mechanism,
    secure_generator,
)
from streamdp.privacy.mechanisms import dcfpa_bozkir
from streamdp.privacy.transforms import l1_sensitivity, make_transform

B = default_profile()
ONE = B.select([0])


def _x(n=32, seed=0):
    rng = np.random.default_rng(seed)
    walk = np.cumsum(rng.uniform(-1, 1, (n, 52)) * B.step_bound * 0.5, axis=0)
    return np.clip((B.lo + B.hi) / 2 + walk, B.lo, B.hi)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        pytest.param({"epsilon": 0.0}, ValueError, "epsilon must be finite and > 0, got 0.0", id="epsilon-zero"),
        pytest.param({"epsilon": -1.0}, ValueError, "epsilon must be finite and > 0, got -1.0", id="epsilon-negative"),
        pytest.param({"epsilon": math.nan}, ValueError, "epsilon must be finite and > 0, got nan", id="epsilon-nan"),
        pytest.param({"epsilon": math.inf}, ValueError, "epsilon must be finite", id="epsilon-inf"),
        pytest.param({"epsilon": True}, TypeError, "epsilon must be a real number, got True", id="epsilon-bool"),
        pytest.param({"epsilon": "1"}, TypeError, "epsilon must be a real number, got '1'", id="epsilon-str"),
        pytest.param(
            {"chunk_length": 48}, ValueError, "chunk_length must be a power of two ≥ 2, got 48", id="n-not-power-of-two"
        ),
        pytest.param({"chunk_length": 32.0}, TypeError, "chunk_length must be an int, got 32.0", id="n-float"),
        pytest.param(
            {"k": 17},
            ValueError,
            "k must be in \\[1, 16\\] for transform 'dft' and n = 32, got 17",
            id="k-above-n-half-dft",
        ),
        pytest.param({"k": 0}, ValueError, "k must be in \\[1, 16\\]", id="k-zero"),
        pytest.param(
            {"k": 33, "transform": "dct"},
            ValueError,
            "k must be in \\[1, 32\\] for transform 'dct'",
            id="k-above-n-dct",
        ),
        pytest.param({"k": 2.5}, TypeError, "k must be an int, got 2.5", id="k-float"),
        pytest.param(
            {"transform": "wavelet"}, ValueError, "transform must be 'dft' or 'dct', got 'wavelet'", id="transform"
        ),
        pytest.param(
            {"sensitivity": "loose"},
            ValueError,
            "sensitivity must be 'bound', 'tight' or 'reachable'",
            id="sensitivity",
        ),
        pytest.param({"bounds": {"lo": 0}}, TypeError, "bounds must be a BoundsProfile", id="bounds-type"),
        pytest.param(
            {"k": "private", "k_epsilon_share": 1.0}, ValueError, "k_epsilon_share must be in \\(0, 1\\)", id="k-share"
        ),
    ],
)
def test_bad_parameters_raise_at_construction_naming_parameter_and_value(kwargs, error, message):
    base = {"epsilon": 1.0, "bounds": B, "chunk_length": 32}
    with pytest.raises(error, match=message):
        dcfpa(**{**base, **kwargs})


def test_dct_allows_k_up_to_n_and_dft_up_to_n_half():
    assert dcfpa(epsilon=1.0, bounds=B, chunk_length=32, transform="dct", k=32).k == 32
    assert dcfpa(epsilon=1.0, bounds=B, chunk_length=32, transform="dft", k=16).k == 16


@pytest.mark.parametrize(
    ("x", "message"),
    [
        pytest.param(np.zeros((31, 52)), "shape \\(31, 52\\), expected \\(32, 52\\)", id="wrong-length"),
        pytest.param(np.zeros((32, 51)), "expected \\(32, 52\\)", id="wrong-width"),
        pytest.param(
            np.where(np.eye(32, 52) > 0, np.nan, 0.0), "step 0, feature fixation_rate is not finite", id="nan"
        ),
    ],
)
@pytest.mark.parametrize("name", ["lpa", "cfpa", "dcfpa", "steil"])
def test_bad_chunks_are_refused(name, x, message):
    m = make_mechanism(name, epsilon=1.0, bounds=B, chunk_length=32)
    with pytest.raises(InputError, match=message):
        m.privatize(x, secure_generator(0))


@pytest.mark.parametrize("name", ["lpa", "cfpa", "dcfpa", "steil"])
def test_mechanisms_are_immutable(name):
    m = make_mechanism(name, epsilon=1.0, bounds=B, chunk_length=32)
    with pytest.raises(AttributeError, match="immutable"):
        m.epsilon = 100.0


@pytest.mark.parametrize("name", ["lpa", "cfpa", "dcfpa", "steil"])
def test_seeded_runs_reproduce_and_unseeded_runs_differ(name):
    m = make_mechanism(name, epsilon=1.0, bounds=B, chunk_length=32)
    x = _x()
    a = m.privatize(x, secure_generator(5)).values
    b = m.privatize(x, secure_generator(5)).values
    c = m.privatize(x, secure_generator()).values
    d = m.privatize(x, secure_generator()).values
    assert np.array_equal(a, b)
    assert not np.array_equal(c, d)


def test_clipping_is_reported():
    m = dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=32)
    x = _x()
    assert m.privatize(x, secure_generator(0)).clipped_fraction == 0.0
    x[3, 0] = B.hi[0] + 10  # out of range, and two differences beyond r
    frac = m.privatize(x, secure_generator(0)).clipped_fraction
    assert frac == pytest.approx(3 / (32 * 52 + 31 * 52))
    # the level-keeping DCFPA clamps the chunk into the reachable set: the spike, and the values
    # after it by the net correction of the two clipped steps, in that feature only
    lk = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    assert lk.privatize(_x(), secure_generator(0)).clipped_fraction == 0.0
    assert lk.privatize(x, secure_generator(0)).clipped_fraction == pytest.approx(29 / (32 * 52))


def test_huge_epsilon_returns_the_truncated_reconstruction():
    x = _x(64)
    for transform, k in (("dft", 32), ("dct", 64), ("dct", 5)):
        for m in (
            cfpa(epsilon=1e12, bounds=B, chunk_length=64, transform=transform, k=k),
            dcfpa(epsilon=1e12, bounds=B, chunk_length=64, transform=transform, k=k),
            dcfpa_bozkir(epsilon=1e12, bounds=B, chunk_length=64, transform=transform, k=k),
        ):
            xh, _ = m._prepare(x)
            got = m.privatize(x, secure_generator(0)).values
            np.testing.assert_allclose(got, m.noiseless(xh), rtol=0, atol=1e-6 * B.width.max())
    for lossless in (
        dcfpa(epsilon=1e12, bounds=B, chunk_length=64, transform="dct", k=64, sensitivity="bound"),
        dcfpa_bozkir(epsilon=1e12, bounds=B, chunk_length=64, transform="dct", k=64),
    ):
        np.testing.assert_allclose(lossless.privatize(x, secure_generator(0)).values, x, atol=1e-6 * B.width.max())


def test_lpa_and_steil_scales_follow_their_documented_formulas():
    lpa = LaplacePerturbation(epsilon_per_feature=2.0, bounds=B, chunk_length=32)
    # within the lattice charge of m·γ, γ ≈ 2^-20 of the scale
    np.testing.assert_allclose(lpa.noise_scale, 32 * B.width / 2.0, rtol=1e-4)
    # Steil at its exact scale Δu/ε (the paper's 2Δu/ε is ε/2-DP)
    st = SteilSubsampling(epsilon_per_feature=2.0, bounds=B, chunk_length=32, window=8)
    np.testing.assert_allclose(st.noise_scale, (32 / 8) * B.width / 2.0, rtol=1e-4)
    # a total ε is split over the 52 features
    total = LaplacePerturbation(epsilon=104.0, bounds=B, chunk_length=32)
    np.testing.assert_allclose(total.noise_scale, lpa.noise_scale)


@pytest.mark.parametrize(
    ("transform", "gain"), [("dft", lambda n, k: math.sqrt(n * k)), ("dct", lambda n, k: math.sqrt(k))]
)
def test_fourier_scales_follow_the_corrected_proof(transform, gain):
    n, k, eps = 64, 3, 0.5
    m = dcfpa_bozkir(epsilon_per_feature=eps, bounds=B, chunk_length=n, transform=transform, k=k)
    delta2 = np.sqrt(B.width**2 + (n - 1) * (2 * B.step_bound) ** 2)
    np.testing.assert_allclose(m.noise_scale, gain(n, k) * delta2 / eps, rtol=1e-5)
    c = cfpa(epsilon_per_feature=eps, bounds=B, chunk_length=n, transform=transform, k=k)
    np.testing.assert_allclose(c.noise_scale, gain(n, k) * math.sqrt(n) * B.width / eps, rtol=1e-5)


@pytest.mark.parametrize("transform", ["dft", "dct"])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_exact_sensitivity_is_the_maximum_over_all_vertices_and_below_the_closed_form(transform, k):
    n = 8
    w0, w = np.array([3.0]), np.array([0.5])
    exact, is_exact = l1_sensitivity(transform, n, k, w0, w, "tight")
    closed, _ = l1_sensitivity(transform, n, k, w0, w, "bound")
    a = make_transform(transform, n, k).matrix
    widths = np.array([3.0] + [0.5] * (n - 1))
    brute = max(np.abs(a @ (widths * np.array(s))).sum() for s in itertools.product((-1, 1), repeat=n))
    assert is_exact
    assert exact[0] == pytest.approx(brute, rel=1e-12)
    assert exact[0] <= closed[0] + 1e-12


def test_tight_mode_gives_less_noise_and_says_whether_it_is_exact():
    bound = dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=64, k=2)
    tight = dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=64, k=2, sensitivity="tight")
    reach = dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=64, k=2, sensitivity="reachable")
    assert np.all(tight.noise_scale < bound.noise_scale)
    assert np.all(reach.noise_scale < tight.noise_scale)
    assert tight.describe()["sensitivity"] == "tight" and reach.describe()["sensitivity"] == "reachable"
    big = dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=64, k=16, sensitivity="tight")  # 31 coefficients
    assert big.describe()["sensitivity"] == "tight-upper"
    assert np.all(big.noise_scale <= dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=64, k=16).noise_scale)


def test_private_k_spends_its_share_and_reports_the_choice():
    m = dcfpa_bozkir(epsilon=2.0, bounds=B, chunk_length=32, k="private", k_epsilon_share=0.25)
    out = m.privatize(_x(), secure_generator(0))
    assert out.k.shape == (52,) and np.all((out.k >= 1) & (out.k <= 16))
    assert m.describe()["k"] == "private" and m.describe()["k_epsilon_share"] == 0.25
    # the FPA part runs at 75 % of ε
    fixed = dcfpa_bozkir(epsilon=1.5, bounds=B, chunk_length=32, k=1)
    np.testing.assert_allclose(m.noise_scales[0], fixed.noise_scale)


def test_whole_signal_fpa_and_its_validation():
    f = WholeSignalFPA(epsilon=1.0, bounds=B, k=5)
    x = np.tile(_x(64), (3, 1))
    out = f.privatize(x, secure_generator(0))
    assert out.values.shape == x.shape
    np.testing.assert_allclose(f.noise_scale(192), math.sqrt(192 * 5) * math.sqrt(192) * B.width, rtol=1e-5)
    with pytest.raises(InputError, match="signal has shape"):
        f.privatize(np.zeros((10, 3)), secure_generator(0))
    with pytest.raises(ValueError, match="k must be ≥ 1"):
        WholeSignalFPA(epsilon=1.0, bounds=B, k=0)
