"""The mechanisms' shared base: validated keyword-only parameters, frozen arrays, immutability,
readable repr, and the read-only registry."""

from __future__ import annotations

import copy
import inspect
import math
import pickle
import re

import numpy as np
import pytest

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
    DCFPABozkir,
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
    dcfpa_bozkir,
    default_profile,
    make_mechanism,
)
from streamdp.privacy.gaze_mechanisms import GAZE_MECHANISMS
from streamdp.privacy.mechanisms import DCFPA_DEFAULT_K, DEFAULT_LEVEL_SHARE

B = default_profile()
ONE = B.select([0])


# ---------------------------------------------------------------- the shared, validated, immutable base

SHAPE = (6, 8)
# the smallest valid arguments of every mechanism class
VALID = {
    LPA: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    CFPA: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    DCFPA: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    DCFPABozkir: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    Steil: {"epsilon": 1.0, "bounds": B, "chunk_length": 32},
    FPA: {"epsilon": 1.0, "bounds": B},
    HeatmapLaplace: {"epsilon": 1.0, "cap": 2, "n_observers": 10, "shape": SHAPE},
    HeatmapGaussian: {"epsilon": 1.0, "delta": 1e-5, "cap": 2, "n_observers": 10, "shape": SHAPE},
}
FOURIER = (CFPA, DCFPA, DCFPABozkir)

# (parameter, bad value, error, classes it applies to or None for every class taking the parameter)
BAD_VALUES = [
    ("epsilon", "1", TypeError, None),
    ("epsilon", True, TypeError, None),
    ("epsilon", None, TypeError, None),
    ("epsilon", 0, ValueError, None),
    ("epsilon", -1.0, ValueError, None),
    ("epsilon", math.nan, ValueError, None),
    ("epsilon", math.inf, ValueError, None),
    # (given alone: both keywords at once are refused, see test_epsilon_keywords_are_exclusive...)
    ("epsilon_per_feature", "1", TypeError, None),
    ("epsilon_per_feature", True, TypeError, None),
    ("epsilon_per_feature", 0, ValueError, None),
    ("epsilon_per_feature", -1.0, ValueError, None),
    ("epsilon_per_feature", math.nan, ValueError, None),
    ("epsilon_per_feature", math.inf, ValueError, None),
    ("epsilon_asked", "1", TypeError, None),
    ("epsilon_asked", True, TypeError, None),
    ("epsilon_asked", math.nan, ValueError, None),
    ("epsilon_asked", 1e-3, ValueError, None),  # below the ε spent: a ceiling only ever lowers it
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
    ("level_share", "0.5", TypeError, None),
    ("level_share", True, TypeError, None),
    ("level_share", None, TypeError, None),
    ("level_share", 0.0, ValueError, None),
    ("level_share", 1.0, ValueError, None),
    ("level_share", math.nan, ValueError, None),
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
                if param == "epsilon_per_feature":
                    del kwargs["epsilon"]
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


def test_level_share_and_k_epsilon_share_must_leave_some_epsilon_for_the_coefficients():
    with pytest.raises(ValueError, match=r"level_share \+ k_epsilon_share must be < 1, got 0\.6 \+ 0\.4"):
        DCFPA(epsilon=1.0, bounds=B, chunk_length=32, k="private", k_epsilon_share=0.4, level_share=0.6)


def _inapplicable_cases():
    every = {p for cls in MECHANISMS.values() for p in cls.parameters}
    sample = {
        "transform": "dft",
        "k": 3,
        "sensitivity": "bound",
        "k_epsilon_share": 0.1,
        "window": 8,
        "level_share": 0.5,
    }
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
_FOURIER_ARRAYS = {
    "feature_epsilons",
    "sensitivities",
    "noise_scales",
    "sensitivity",
    "noise_scale",
    "k_candidates",
    "delta2",
}
ARRAYS = {
    LPA: {"feature_epsilons", "sensitivity", "noise_scale"},
    Steil: {"feature_epsilons", "sensitivity", "noise_scale"},
    CFPA: _FOURIER_ARRAYS,
    DCFPA: _FOURIER_ARRAYS | {"level_sensitivity", "level_noise_scale"},
    DCFPABozkir: _FOURIER_ARRAYS,
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
    with pytest.raises(ValueError, match="read-only"):
        m.level_noise_scale[:] = 1e-9
    with pytest.raises(ValueError, match="read-only"):
        m.feature_epsilons[:] = 1e9  # a larger ε_f would not shrink the noise, but the ledger would lie


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
            "DCFPA(epsilon=1.0, chunk_length=64, transform='dft', k=1, sensitivity='reachable', "
            "level_share=0.5, bounds=<'default', 52 features>)",
            id="dcfpa",
        ),
        pytest.param(
            DCFPA(epsilon_per_feature=1, bounds=B, chunk_length=32, level_share=0.25),
            "DCFPA(epsilon_per_feature=1.0, chunk_length=32, transform='dft', k=1, sensitivity='reachable', "
            "level_share=0.25, bounds=<'default', 52 features>)",
            id="dcfpa-per-feature",
        ),
        pytest.param(
            DCFPABozkir(epsilon=52.0, bounds=B, chunk_length=32),
            "DCFPABozkir(epsilon=52.0, chunk_length=32, transform='dft', k=1, sensitivity='bound', "
            "bounds=<'default', 52 features>)",
            id="dcfpa-bozkir",
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
    # ε is the total of a chunk; the ledger also shows what each feature got
    assert make_mechanism("dcfpa", epsilon=52.0, bounds=B, chunk_length=64, k=16, sensitivity="tight").describe() == {
        "mechanism": "dcfpa",
        "epsilon": 52.0,
        "epsilon_per_feature": 1.0,
        "weights": "equal",
        "chunk_length": 64,
        "transform": "dft",
        "k": 16,
        "k_epsilon_share": 0.0,
        "sensitivity": "tight-upper",
        "level_share": 0.5,
    }
    assert make_mechanism(
        "cfpa", epsilon_per_feature=1.0, bounds=B, chunk_length=32, transform="dct", k="private"
    ).describe() == {
        "mechanism": "cfpa",
        "epsilon": 52.0,
        "epsilon_per_feature": 1.0,
        "weights": "equal",
        "chunk_length": 32,
        "transform": "dct",
        "k": "private",
        "k_epsilon_share": 0.1,
        "sensitivity": "bound",
    }
    assert make_mechanism("lpa", epsilon=2.0, bounds=B, chunk_length=32).describe() == {
        "mechanism": "lpa",
        "epsilon": 2.0,
        "epsilon_per_feature": 2.0 / 52,
        "weights": "equal",
        "chunk_length": 32,
    }
    bozkir = make_mechanism("dcfpa-bozkir", epsilon=26.0, bounds=B, chunk_length=32, sensitivity="reachable")
    assert bozkir.describe() == {
        "mechanism": "dcfpa-bozkir",
        "epsilon": 26.0,
        "epsilon_per_feature": 0.5,
        "weights": "equal",
        "chunk_length": 32,
        "transform": "dft",
        "k": 1,
        "k_epsilon_share": 0.0,
        "sensitivity": "reachable",
    }


def test_default_k_is_public_per_mechanism_and_chunk_length():
    for n in (16, 32, 64, 128, 256):
        assert CFPA(epsilon=1.0, bounds=B, chunk_length=n).k == DEFAULT_K[n]
        assert DCFPABozkir(epsilon=1.0, bounds=B, chunk_length=n).k == DEFAULT_K[n]
        for transform in ("dft", "dct"):
            assert DCFPA(epsilon=1.0, bounds=B, chunk_length=n, transform=transform).k == DCFPA_DEFAULT_K[transform][n]
    assert DCFPA(epsilon=1.0, bounds=B, chunk_length=32).level_share == DEFAULT_LEVEL_SHARE


def test_the_fourier_base_is_abstract_and_differences_is_a_class_property():
    with pytest.raises(TypeError, match="abstract"):
        FourierPerturbation(epsilon=1.0, bounds=B, chunk_length=32)
    assert (CFPA.preparation, DCFPA.preparation, DCFPABozkir.preparation) == (
        "values",
        "differences",
        "first-and-differences",
    )
    for param in ("differences", "preparation"):
        with pytest.raises(TypeError, match=param):
            DCFPA(epsilon=1.0, bounds=B, chunk_length=32, **{param: "values"})


def test_old_names_are_the_new_classes():
    assert (LaplacePerturbation, SteilSubsampling, WholeSignalFPA) == (LPA, Steil, FPA)
    assert type(cfpa(epsilon=1.0, bounds=B, chunk_length=32)) is CFPA
    assert type(dcfpa(epsilon=1.0, bounds=B, chunk_length=32)) is DCFPA
    assert type(dcfpa_bozkir(epsilon=1.0, bounds=B, chunk_length=32)) is DCFPABozkir


# ---------------------------------------------------------------- the registry


def _concrete_subclasses(base):
    """The concrete subclasses the package ships (tests define broken variants of their own)."""
    out = set()
    for sub in base.__subclasses__():
        out |= _concrete_subclasses(sub)
        if not inspect.isabstract(sub) and sub.__module__.startswith("streamdp."):
            out.add(sub)
    return out


def test_registries_are_complete_and_named_by_the_classes():
    assert list(MECHANISMS) == ["lpa", "cfpa", "dcfpa", "dcfpa-bozkir", "steil"]
    assert all(cls.name == name for name, cls in MECHANISMS.items())
    assert set(MECHANISMS.values()) == _concrete_subclasses(Mechanism)
    assert dict(OFFLINE_MECHANISMS) == {"fpa": FPA}
    assert dict(HEATMAP_MECHANISMS) == {"gaussian": HeatmapGaussian, "laplace": HeatmapLaplace}
    assert all(cls.name == name for name, cls in GAZE_MECHANISMS.items())
    every = set(MECHANISMS.values()) | set(OFFLINE_MECHANISMS.values()) | set(HEATMAP_MECHANISMS.values())
    assert every | set(GAZE_MECHANISMS.values()) == _concrete_subclasses(BaseMechanism)


@pytest.mark.parametrize(
    "registry",
    [
        MECHANISMS,
        OFFLINE_MECHANISMS,
        HEATMAP_MECHANISMS,
        GAZE_MECHANISMS,
        DEFAULT_K,
        DCFPA_DEFAULT_K,
        DCFPA_DEFAULT_K["dft"],
    ],
)
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
            "wavelet",
            ValueError,
            "^mechanism must be one of lpa, cfpa, dcfpa, dcfpa-bozkir, steil, got 'wavelet'$",
            id="unknown",
        ),
        pytest.param("fpa", ValueError, "got 'fpa' \\(an offline mechanism", id="offline"),
        pytest.param("DCFPA", ValueError, "one of lpa, cfpa, dcfpa, dcfpa-bozkir, steil", id="case"),
        pytest.param(3, TypeError, "^mechanism must be a str, got 3$", id="not-a-str"),
    ],
)
def test_make_mechanism_refuses_an_unknown_name_listing_the_choices(name, error, message):
    with pytest.raises(error, match=message):
        make_mechanism(name, epsilon=1.0, bounds=B, chunk_length=32)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_an_epsilon_so_small_that_the_noise_scale_overflows_is_refused_naming_it(name):
    with pytest.raises(ValueError, match=r"epsilon=1e-300 is too small for .*noise scale overflows"):
        make_mechanism(name, epsilon=1e-300, bounds=B, chunk_length=32)


# ---------------------------------------------------------------- each parameter declared once


def _documented_parameters(doc):
    """The names in the numpydoc "Parameters" section of ``doc``, in order."""
    section = doc.split("Parameters\n----------\n", 1)[1].split("\n\n", 1)[0]
    return [line.split(" : ")[0] for line in section.splitlines() if line and not line.startswith(" ")]


FACTORIES = {cfpa: CFPA, dcfpa: DCFPA, dcfpa_bozkir: DCFPABozkir}


@pytest.mark.parametrize(
    "made",
    [pytest.param(c, id=c.__name__) for c in VALID] + [pytest.param(f, id=f.__name__) for f in FACTORIES],
)
def test_signature_parameters_and_docs_are_made_from_the_one_table(made):
    cls = FACTORIES.get(made, made)
    declared = [p.name for p in cls.parameter_table]
    assert list(inspect.signature(made).parameters) == declared == list(cls.parameters)
    assert _documented_parameters(made.__doc__) == declared
    assert "Raises\n------\nTypeError" in made.__doc__


@pytest.mark.parametrize(
    ("cls", "missing"),
    [(LPA, "chunk_length"), (FPA, "bounds"), (HeatmapGaussian, "delta")],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_a_missing_required_parameter_is_named(cls, missing):
    kwargs = {k: v for k, v in VALID[cls].items() if k != missing}
    with pytest.raises(TypeError, match=rf"^{cls.__name__}\(\) missing required keyword argument '{missing}'$"):
        cls(**kwargs)


def test_a_second_init_changes_nothing_not_even_what_is_set_first():
    mech = DCFPA(epsilon=1.0, bounds=B, chunk_length=32)
    with pytest.raises(AttributeError, match="immutable"):
        mech.__init__(epsilon=1.0, bounds=B, chunk_length=32, level_share=0.9)
    assert mech.level_share == DEFAULT_LEVEL_SHARE
