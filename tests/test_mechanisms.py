from __future__ import annotations

import copy
import inspect
import itertools
import math
import pickle
import re

import numpy as np
import pytest

from streamdp import InputError
from streamdp.privacy import (
    CFPA,
    DCFPA,
    DEFAULT_K,
    FPA,
    HEATMAP_MECHANISMS,
    LPA,
    MECHANISMS,
    OFFLINE_MECHANISMS,
    BaseMechanism,
    FourierPerturbation,
    HeatmapGaussian,
    HeatmapLaplace,
    LaplacePerturbation,
    Mechanism,
    Steil,
    SteilSubsampling,
    WholeSignalFPA,
    cfpa,
    dcfpa,
    default_profile,
    make_mechanism,
    secure_generator,
)
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
        pytest.param({"sensitivity": "loose"}, ValueError, "sensitivity must be 'bound' or 'tight'", id="sensitivity"),
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
    m = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    x = _x()
    assert m.privatize(x, secure_generator(0)).clipped_fraction == 0.0
    x[3, 0] = B.hi[0] + 10  # out of range, and two differences beyond r
    frac = m.privatize(x, secure_generator(0)).clipped_fraction
    assert frac == pytest.approx(3 / (32 * 52 + 31 * 52))


def test_huge_epsilon_returns_the_truncated_reconstruction():
    x = _x(64)
    for transform, k in (("dft", 32), ("dct", 64), ("dct", 5)):
        for m in (
            cfpa(epsilon=1e12, bounds=B, chunk_length=64, transform=transform, k=k),
            dcfpa(epsilon=1e12, bounds=B, chunk_length=64, transform=transform, k=k),
        ):
            xh, _ = m._prepare(x)
            got = m.privatize(x, secure_generator(0)).values
            np.testing.assert_allclose(got, m.noiseless(xh), rtol=0, atol=1e-6 * B.width.max())
    lossless = dcfpa(epsilon=1e12, bounds=B, chunk_length=64, transform="dct", k=64)
    np.testing.assert_allclose(lossless.privatize(x, secure_generator(0)).values, x, atol=1e-6 * B.width.max())


def test_lpa_and_steil_scales_follow_their_documented_formulas():
    lpa = LaplacePerturbation(epsilon=2.0, bounds=B, chunk_length=32)
    # within the lattice charge of m·γ, γ ≈ 2^-20 of the scale
    np.testing.assert_allclose(lpa.noise_scale, 32 * B.width / 2.0, rtol=1e-4)
    st = SteilSubsampling(epsilon=2.0, bounds=B, chunk_length=32, window=8)
    np.testing.assert_allclose(st.noise_scale, 2 * (32 / 8) * B.width / 2.0, rtol=1e-4)


@pytest.mark.parametrize(
    ("transform", "gain"), [("dft", lambda n, k: math.sqrt(n * k)), ("dct", lambda n, k: math.sqrt(k))]
)
def test_fourier_scales_follow_the_corrected_proof(transform, gain):
    n, k, eps = 64, 3, 0.5
    m = dcfpa(epsilon=eps, bounds=B, chunk_length=n, transform=transform, k=k)
    delta2 = np.sqrt(B.width**2 + (n - 1) * (2 * B.step_bound) ** 2)
    np.testing.assert_allclose(m.noise_scale, gain(n, k) * delta2 / eps, rtol=1e-5)
    c = cfpa(epsilon=eps, bounds=B, chunk_length=n, transform=transform, k=k)
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
    bound = dcfpa(epsilon=1.0, bounds=B, chunk_length=64, k=2)
    tight = dcfpa(epsilon=1.0, bounds=B, chunk_length=64, k=2, sensitivity="tight")
    assert np.all(tight.noise_scale < bound.noise_scale)
    assert tight.describe()["sensitivity"] == "tight"
    big = dcfpa(epsilon=1.0, bounds=B, chunk_length=64, k=16, sensitivity="tight")  # 31 coefficients
    assert big.describe()["sensitivity"] == "tight-upper"
    assert np.all(big.noise_scale <= dcfpa(epsilon=1.0, bounds=B, chunk_length=64, k=16).noise_scale)


def test_private_k_spends_its_share_and_reports_the_choice():
    m = dcfpa(epsilon=2.0, bounds=B, chunk_length=32, k="private", k_epsilon_share=0.25)
    out = m.privatize(_x(), secure_generator(0))
    assert out.k.shape == (52,) and np.all((out.k >= 1) & (out.k <= 16))
    assert m.describe()["k"] == "private" and m.describe()["k_epsilon_share"] == 0.25
    # the FPA part runs at 75 % of ε
    fixed = dcfpa(epsilon=1.5, bounds=B, chunk_length=32, k=1)
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


# ---------------------------------------------------------------- the shared, validated, immutable base

SHAPE = (6, 8)
# the smallest valid arguments of every mechanism class
VALID = {
    LPA: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    CFPA: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    DCFPA: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    Steil: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    FPA: {"epsilon": 1.0, "bounds": B},
    HeatmapLaplace: {"epsilon": 1.0, "cap": 2, "n_observers": 10, "shape": SHAPE},
    HeatmapGaussian: {"epsilon": 1.0, "delta": 1e-5, "cap": 2, "n_observers": 10, "shape": SHAPE},
}
FOURIER = (CFPA, DCFPA)

# (parameter, bad value, error, classes it applies to or None for every class taking the parameter)
BAD_VALUES = [
    ("epsilon", "1", TypeError, None),
    ("epsilon", True, TypeError, None),
    ("epsilon", None, TypeError, None),
    ("epsilon", 0, ValueError, None),
    ("epsilon", -1.0, ValueError, None),
    ("epsilon", math.nan, ValueError, None),
    ("epsilon", math.inf, ValueError, None),
    ("bounds", {"lo": 0}, TypeError, None),
    ("bounds", None, TypeError, None),
    ("chunk_length", 32.0, TypeError, None),
    ("chunk_length", "32", TypeError, None),
    ("chunk_length", True, TypeError, None),
    ("chunk_length", 48, ValueError, None),
    ("chunk_length", 1, ValueError, None),
    ("chunk_length", -32, ValueError, None),
    ("transform", 5, TypeError, None),
    ("transform", None, TypeError, None),
    ("transform", "wavelet", ValueError, None),
    ("transform", "DFT", ValueError, None),
    ("k", 2.5, TypeError, None),
    ("k", True, TypeError, None),
    ("k", [3], TypeError, None),
    ("k", 0, ValueError, None),
    ("k", -1, ValueError, None),
    ("k", 17, ValueError, FOURIER),  # > n/2 for the DFT at n = 32
    ("k", "top", ValueError, FOURIER),
    ("k", "private", TypeError, (FPA,)),
    ("sensitivity", 1, TypeError, None),
    ("sensitivity", "loose", ValueError, None),
    ("k_epsilon_share", "0.1", TypeError, None),
    ("k_epsilon_share", 0.0, ValueError, None),
    ("k_epsilon_share", 1.0, ValueError, None),
    ("k_epsilon_share", math.nan, ValueError, None),
    ("window", 2.0, TypeError, None),
    ("window", 0, ValueError, None),
    ("window", 5, ValueError, None),  # does not divide n = 32
    ("cap", 1.5, TypeError, None),
    ("cap", 0, ValueError, None),
    ("n_observers", "10", TypeError, None),
    ("n_observers", 0, ValueError, None),
    ("shape", [6, 8], TypeError, None),
    ("shape", (6.0, 8), TypeError, None),
    ("shape", (6,), TypeError, None),
    ("shape", (0, 8), ValueError, None),
    ("delta", "1e-5", TypeError, None),
    ("delta", 0.0, ValueError, None),
    ("delta", 1.0, ValueError, None),
]


def _bad_value_cases():
    for cls, valid in VALID.items():
        for param, value, error, only in BAD_VALUES:
            if param in cls.parameters and (only is None or cls in only):
                extra = {"k": "private"} if param == "k_epsilon_share" else {}
                kwargs = {**valid, **extra, param: value}
                yield pytest.param(cls, kwargs, param, value, error, id=f"{cls.__name__}-{param}={value!r}")


@pytest.mark.parametrize(("cls", "kwargs", "param", "value", "error"), list(_bad_value_cases()))
def test_every_parameter_of_every_mechanism_refuses_a_bad_value_naming_it(cls, kwargs, param, value, error):
    shown = type(value).__name__ if param == "bounds" else re.escape(repr(value))
    with pytest.raises(error, match=rf"^{param} .*{shown}"):
        cls(**kwargs)


def test_the_bad_value_table_covers_every_parameter_of_every_mechanism():
    covered = {(cls, p) for cls, valid in VALID.items() for p, _, _, only in BAD_VALUES if only is None or cls in only}
    for cls in VALID:
        for param in cls.parameters:
            assert (cls, param) in covered, f"{cls.__name__}.{param} has no bad-value case"


def test_k_epsilon_share_is_refused_with_a_fixed_k():
    with pytest.raises(ValueError, match=r"k_epsilon_share applies only with k='private', got 0\.2 with k=3"):
        DCFPA(epsilon=1.0, bounds=B, chunk_length=32, k=3, k_epsilon_share=0.2)


def _inapplicable_cases():
    every = {p for cls in MECHANISMS.values() for p in cls.parameters}
    sample = {"transform": "dft", "k": 3, "sensitivity": "bound", "k_epsilon_share": 0.1, "window": 8}
    for name, cls in MECHANISMS.items():
        for param in sorted(every - set(cls.parameters)):
            for value in (sample[param], None):
                yield pytest.param(name, param, value, id=f"{name}-{param}={value!r}")


@pytest.mark.parametrize(("name", "param", "value"), list(_inapplicable_cases()))
def test_a_parameter_that_does_not_apply_is_refused_not_dropped(name, param, value):
    kwargs = {"epsilon": 1.0, "bounds": B, "chunk_length": 32, param: value}
    with pytest.raises(TypeError, match=f"^{name} does not take parameter '{param}'$"):
        make_mechanism(name, **kwargs)
    with pytest.raises(TypeError, match=param):
        MECHANISMS[name](**kwargs)


@pytest.mark.parametrize("cls", list(VALID), ids=lambda c: c.__name__)
def test_parameters_are_keyword_only_and_declared(cls):
    sig = inspect.signature(cls)
    assert tuple(sig.parameters) == cls.parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in sig.parameters.values())
    with pytest.raises(TypeError):
        cls(*VALID[cls].values())


def _instances():
    yield from (pytest.param(cls(**kw), id=cls.__name__) for cls, kw in VALID.items())
    yield pytest.param(DCFPA(epsilon=1.0, bounds=B, chunk_length=32, k="private"), id="DCFPA-private-k")
    yield pytest.param(CFPA(epsilon=1.0, bounds=B, chunk_length=32, sensitivity="tight", k=2), id="CFPA-tight")


# the public arrays each class exposes: all of them must be frozen
ARRAYS = {
    LPA: {"sensitivity", "noise_scale"},
    Steil: {"sensitivity", "noise_scale"},
    CFPA: {"sensitivities", "noise_scales", "sensitivity", "noise_scale", "k_candidates", "delta2"},
    DCFPA: {"sensitivities", "noise_scales", "sensitivity", "noise_scale", "k_candidates", "delta2"},
    FPA: set(),
    HeatmapLaplace: set(),
    HeatmapGaussian: set(),
}


@pytest.mark.parametrize("mech", list(_instances()))
def test_every_public_array_is_read_only_for_good(mech):
    arrays = {a: getattr(mech, a) for a in dir(mech) if not a.startswith("_")}
    arrays = {a: v for a, v in arrays.items() if isinstance(v, np.ndarray)}
    assert set(arrays) == ARRAYS[type(mech)]
    for name, arr in arrays.items():
        assert not arr.flags.writeable, name
        with pytest.raises(ValueError, match="cannot set WRITEABLE flag"):
            arr.setflags(write=True)
        with pytest.raises(ValueError, match="read-only"):
            arr[...] = 0


def test_noise_scales_cannot_be_shrunk_in_place():
    m = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    before = m.noise_scale.copy()
    with pytest.raises(ValueError, match="read-only"):
        m.noise_scales[:] = 1e-9
    with pytest.raises(ValueError, match="read-only"):
        m.noise_scale[:] = 1e-9
    np.testing.assert_array_equal(m.noise_scale, before)


@pytest.mark.parametrize("mech", list(_instances()))
def test_mechanisms_refuse_setattr_delattr_and_a_second_init(mech):
    eps = mech.epsilon
    with pytest.raises(AttributeError, match="immutable: cannot set epsilon"):
        mech.epsilon = 100.0
    with pytest.raises(AttributeError, match="immutable: cannot set extra"):
        mech.extra = 1
    with pytest.raises(AttributeError, match="immutable: cannot delete epsilon"):
        del mech.epsilon
    with pytest.raises(AttributeError, match="immutable"):
        mech.__init__(**{**mech.arguments(), "epsilon": 100.0})
    assert mech.epsilon == eps


@pytest.mark.parametrize("mech", list(_instances()))
def test_a_copy_is_the_same_mechanism_validated_and_frozen_again(mech):
    for twin in (pickle.loads(pickle.dumps(mech)), copy.deepcopy(mech), type(mech)(**mech.arguments())):
        assert type(twin) is type(mech) and repr(twin) == repr(mech) and twin.describe() == mech.describe()
        for name in ARRAYS[type(mech)]:
            np.testing.assert_array_equal(getattr(twin, name), getattr(mech, name))
            with pytest.raises(ValueError, match="cannot set WRITEABLE flag"):
                getattr(twin, name).setflags(write=True)


@pytest.mark.parametrize(
    ("mech", "text"),
    [
        pytest.param(
            DCFPA(epsilon=1.0, bounds=B, chunk_length=64),
            "DCFPA(epsilon=1.0, chunk_length=64, transform='dft', k=1, sensitivity='bound', "
            "bounds=<'default', 52 features>)",
            id="dcfpa",
        ),
        pytest.param(
            CFPA(epsilon=2, bounds=B, chunk_length=32, transform="dct", k="private", sensitivity="tight"),
            "CFPA(epsilon=2.0, chunk_length=32, transform='dct', k='private', sensitivity='tight', "
            "k_epsilon_share=0.1, bounds=<'default', 52 features>)",
            id="cfpa-private-k",
        ),
        pytest.param(
            LPA(epsilon=0.5, bounds=ONE, chunk_length=16),
            "LPA(epsilon=0.5, chunk_length=16, bounds=<'default[0]', 1 feature>)",
            id="lpa-one-feature",
        ),
        pytest.param(
            Steil(epsilon=1.0, bounds=B, chunk_length=32),
            "Steil(epsilon=1.0, chunk_length=32, window=8, bounds=<'default', 52 features>)",
            id="steil",
        ),
        pytest.param(
            FPA(epsilon=1.0, bounds=B),
            "FPA(epsilon=1.0, transform='dft', k=20, bounds=<'default', 52 features>)",
            id="fpa",
        ),
        pytest.param(
            HeatmapGaussian(epsilon=1.0, delta=1e-5, cap=2, n_observers=10, shape=SHAPE),
            "HeatmapGaussian(epsilon=1.0, delta=1e-05, cap=2, n_observers=10, shape=(6, 8))",
            id="heatmap-gaussian",
        ),
    ],
)
def test_repr_shows_the_public_parameters(mech, text):
    assert repr(mech) == text


def test_describe_keeps_the_ledger_entries():
    assert make_mechanism("dcfpa", epsilon=1.0, bounds=B, chunk_length=64, k=16, sensitivity="tight").describe() == {
        "mechanism": "dcfpa",
        "epsilon_per_feature": 1.0,
        "chunk_length": 64,
        "transform": "dft",
        "k": 16,
        "k_epsilon_share": 0.0,
        "sensitivity": "tight-upper",
    }
    assert make_mechanism("cfpa", epsilon=1.0, bounds=B, chunk_length=32, transform="dct", k="private").describe() == {
        "mechanism": "cfpa",
        "epsilon_per_feature": 1.0,
        "chunk_length": 32,
        "transform": "dct",
        "k": "private",
        "k_epsilon_share": 0.1,
        "sensitivity": "bound",
    }
    assert make_mechanism("lpa", epsilon=2.0, bounds=B, chunk_length=32).describe() == {
        "mechanism": "lpa",
        "epsilon_per_feature": 2.0,
        "chunk_length": 32,
    }


def test_the_fourier_base_is_abstract_and_differences_is_a_class_property():
    with pytest.raises(TypeError, match="abstract"):
        FourierPerturbation(epsilon=1.0, bounds=B, chunk_length=32)
    assert (CFPA.differences, DCFPA.differences) == (False, True)
    with pytest.raises(TypeError, match="differences"):
        DCFPA(epsilon=1.0, bounds=B, chunk_length=32, differences=False)


def test_old_names_are_the_new_classes():
    assert (LaplacePerturbation, SteilSubsampling, WholeSignalFPA) == (LPA, Steil, FPA)
    assert type(cfpa(epsilon=1.0, bounds=B, chunk_length=32)) is CFPA
    assert type(dcfpa(epsilon=1.0, bounds=B, chunk_length=32)) is DCFPA


# ---------------------------------------------------------------- the registry


def _concrete_subclasses(base):
    out = set()
    for sub in base.__subclasses__():
        out |= _concrete_subclasses(sub)
        if not inspect.isabstract(sub):
            out.add(sub)
    return out


def test_registries_are_complete_and_named_by_the_classes():
    assert list(MECHANISMS) == ["lpa", "cfpa", "dcfpa", "steil"]
    assert all(cls.name == name for name, cls in MECHANISMS.items())
    assert set(MECHANISMS.values()) == _concrete_subclasses(Mechanism)
    assert dict(OFFLINE_MECHANISMS) == {"fpa": FPA}
    assert dict(HEATMAP_MECHANISMS) == {"gaussian": HeatmapGaussian, "laplace": HeatmapLaplace}
    every = set(MECHANISMS.values()) | set(OFFLINE_MECHANISMS.values()) | set(HEATMAP_MECHANISMS.values())
    assert every == _concrete_subclasses(BaseMechanism)


@pytest.mark.parametrize("registry", [MECHANISMS, OFFLINE_MECHANISMS, HEATMAP_MECHANISMS, DEFAULT_K])
def test_registries_are_read_only(registry):
    key = next(iter(registry))
    with pytest.raises(TypeError):
        registry[key] = LPA
    with pytest.raises(TypeError):
        del registry[key]
    with pytest.raises(AttributeError):
        registry.clear()


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        pytest.param(
            "wavelet", ValueError, "^mechanism must be one of lpa, cfpa, dcfpa, steil, got 'wavelet'$", id="unknown"
        ),
        pytest.param("fpa", ValueError, "got 'fpa' \\(an offline mechanism", id="offline"),
        pytest.param("DCFPA", ValueError, "one of lpa, cfpa, dcfpa, steil", id="case"),
        pytest.param(3, TypeError, "^mechanism must be a str, got 3$", id="not-a-str"),
    ],
)
def test_make_mechanism_refuses_an_unknown_name_listing_the_choices(name, error, message):
    with pytest.raises(error, match=message):
        make_mechanism(name, epsilon=1.0, bounds=B, chunk_length=32)
