"""The real-time gaze mechanisms (#20): noise scale, exact lattice outputs, the metric guarantee by a
likelihood ratio, Budget Distribution's accounting and behaviour, reproducibility, validated
parameters and immutability. Each statistical check is shown to fail on a broken variant."""

from __future__ import annotations

import copy
import dataclasses
import json
import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdp.errors import InputError
from streamdp.privacy import MECHANISMS, BaseMechanism, secure_generator
from streamdp.privacy.gaze_base import MIN_DISPLACEMENT, GazeState, metric_calibration
from streamdp.privacy.gaze_budget import UNIT_BITS
from streamdp.privacy.gaze_mechanisms import GAZE_MECHANISMS, GazeBudgetDistribution, GazeMechanism, GazeUniform

from .gaze_variants import UniformFloatPolar, UniformHalfNoise

CLASSES = (GazeUniform, GazeBudgetDistribution)


def _release(mech, positions, seed=0, state=None):
    return mech.release(np.asarray(positions, dtype=np.float64), state or mech.new_state(), secure_generator(seed))


def _published(mech, out):
    """Which ticks published: the first, and those that spent more than the test."""
    return out.epsilon > mech.epsilon_test * (1 + 1e-9)


# ---------------------------------------------------------------- geo-uniform: the noise


def _scale_matches(mech, n=100_000, seed=1):
    """The mean absolute noise per axis at a fixed position equals the stated scale b within five
    standard errors (|Laplace(b)| has standard deviation b)."""
    p = np.array([7.25, -3.5])
    out = _release(mech, np.tile(p, (n, 1)), seed)
    mad = np.mean(np.abs(out.values - p), axis=0)
    b = GazeUniform(**mech.arguments()).noise_scale  # the claim, whatever the variant does
    return bool(np.all(np.abs(mad - b) < 5 * b / math.sqrt(n)))


@pytest.mark.parametrize(
    ("cls", "kw", "expected"),
    [
        pytest.param(GazeUniform, {"epsilon": 60.0, "w": 60}, True, id="uniform-1-per-degree"),
        pytest.param(GazeUniform, {"epsilon": 2.0, "w": 8}, True, id="uniform-0.25-per-degree"),
        pytest.param(UniformHalfNoise, {"epsilon": 60.0, "w": 60}, False, id="half-noise-fails"),
    ],
)
def test_noise_scale_is_the_stated_one(cls, kw, expected):
    mech = cls(**kw)
    assert mech.noise_scale >= mech.w / mech.epsilon or cls is UniformHalfNoise
    assert _scale_matches(mech) is expected


def test_the_scale_charges_the_rounding():
    b, gamma = metric_calibration(0.5)
    # two rounded axes move the L1 distance by up to 2γ: at d_min that costs (d_min + 2γ)/b ≤ ε·d_min
    assert (MIN_DISPLACEMENT + 2 * gamma) / b <= 0.5 * MIN_DISPLACEMENT
    assert b < (1 + 2.0**-18) / 0.5
    assert math.frexp(gamma)[0] == 0.5 and gamma <= 2.0**-30


# ---------------------------------------------------------------- exactness


@pytest.mark.parametrize("cls", CLASSES)
def test_outputs_lie_on_the_lattice_whatever_the_low_bits(cls):
    mech = cls(epsilon=8.0, w=4)
    rng = np.random.default_rng(0)
    base = rng.uniform(-50, 50, (400, 2))
    for tweak in (0.0, 2.0**-40, 3 * 2.0**-44, 1e-13):
        out = _release(mech, base + tweak, seed=2)
        steps = out.values / mech.lattice
        assert np.all(steps == np.rint(steps))


def test_float_planar_laplace_leaves_the_lattice():
    # the check can fail: the textbook float sampler's outputs carry the input's low bits
    mech = UniformFloatPolar(epsilon=8.0, w=4)
    out = _release(mech, np.full((200, 2), 0.1 + 2.0**-40), seed=2)
    steps = out.values / mech.lattice
    assert not np.all(steps == np.rint(steps))


def test_outputs_depend_on_the_input_only_through_its_rounding():
    # the same seed: inputs that round to the same lattice point give the same outputs, bit for bit
    mech = GazeUniform(epsilon=8.0, w=4)
    x = np.array([[1.0, -2.0]] * 50)
    a = _release(mech, x, seed=3).values
    b = _release(mech, x + mech.lattice / 4, seed=3).values
    c = _release(mech, x + mech.lattice, seed=3).values
    assert np.array_equal(a, b)
    assert np.array_equal(c - a, np.full_like(a, [mech.lattice, mech.lattice]))


# ---------------------------------------------------------------- the metric guarantee, by a likelihood ratio


def _worst_log_ratio(mech, x, y, n=200_000, bins=0.25, min_count=400):
    """The largest |log| ratio of the two output histograms over well-populated bins (x axis),
    less four standard errors of the log counts."""
    ox = _release(mech, np.tile(x, (n, 1)), seed=11).values[:, 0]
    oy = _release(mech, np.tile(y, (n, 1)), seed=12).values[:, 0]
    edges = np.arange(-6.0, 7.0 + bins, bins)
    hx, _ = np.histogram(ox, edges)
    hy, _ = np.histogram(oy, edges)
    ok = (hx >= min_count) & (hy >= min_count)
    log_ratio = np.abs(np.log(hx[ok] / hy[ok]))
    return float(np.max(log_ratio - 4 * np.sqrt(1 / hx[ok] + 1 / hy[ok]))), float(np.max(log_ratio))


@pytest.mark.parametrize(
    ("cls", "holds"), [pytest.param(GazeUniform, True, id="uniform"), pytest.param(UniformHalfNoise, False, id="half")]
)
def test_histogram_ratio_within_exp_epsilon_d(cls, holds):
    mech = cls(epsilon=4.0, w=4)  # 1 per degree per tick
    d = 1.0
    lower, raw = _worst_log_ratio(mech, [0.0, 0.0], [d, 0.0])
    assert (lower <= mech.epsilon_tick * d) is holds
    if holds:  # and the bound is tight: the tails reach it
        assert raw > 0.8 * mech.epsilon_tick * d


def test_the_two_axes_compose_in_l1():
    # (0, 0) against (d/2, d/2): L1 distance d, Euclidean d/√2. The quadrant beyond both has
    # probability 1/4 against e^(-ε·d)/4: the loss is ε per degree of L1, √2·ε per degree of Euclidean
    mech = GazeUniform(epsilon=4.0, w=4)
    n, d = 200_000, 1.0
    a = _release(mech, np.zeros((n, 2)), seed=5).values
    b = _release(mech, np.tile([d / 2, d / 2], (n, 1)), seed=6).values
    pa = np.mean(np.all(a > d / 2, axis=1))
    pb = np.mean(np.all(b > d / 2, axis=1))
    assert abs(math.log(pb / pa) - mech.epsilon_tick * d) < 0.1
    assert math.isclose(mech.describe()["epsilon_w_per_euclidean_degree"], math.sqrt(2) * mech.epsilon)


# ---------------------------------------------------------------- Budget Distribution


# fixations (a position held for a few ticks) and jumps between them, some beyond the field
fixations = st.lists(st.tuples(st.floats(-100, 100), st.floats(-100, 100), st.integers(1, 12)), min_size=1, max_size=12)


def _stream(segments):
    return np.array([(x, y) for x, y, n in segments for _ in range(n)])[:60]


@settings(max_examples=60, deadline=None)
@given(
    segments=fixations, w=st.integers(1, 8), eps=st.floats(0.5, 200.0), cut=st.integers(0, 60), seed=st.integers(0, 99)
)
def test_budget_distribution_never_overspends_a_window(segments, w, eps, cut, seed):
    mech = GazeBudgetDistribution(epsilon=eps, w=w)
    x = _stream(segments)
    state, rng = mech.new_state(), secure_generator(seed)
    parts = [mech.release(x[:cut], state, rng), mech.release(x[cut:], state, rng)]  # one stream, two calls
    values = np.concatenate([p.values for p in parts])
    spent = np.concatenate([p.epsilon for p in parts])
    assert state.ticks == len(x)
    # exactly, in the integer units the mechanism counts in
    units = np.rint(spent / mech.unit).astype(np.int64)
    assert np.array_equal(units * mech.unit, spent)
    window = np.convolve(units, np.ones(w, dtype=np.int64), mode="valid") if len(x) >= w else [units.sum()]
    assert max(window) <= 1 << (UNIT_BITS + 1)
    assert np.all(spent <= mech.epsilon_tick_max)
    # the first tick publishes, at ε_w/4
    assert spent[0] == eps / 4
    # a tick that does not publish repeats the last output; one that does spends what the public
    # history says (half of what the window has left): the spend is a function of earlier outputs
    published = _published(mech, parts[0]) if cut else np.zeros(0, bool)
    published = np.concatenate([published, _published(mech, parts[1])])
    published[0] = True
    assert np.all(values[1:][~published[1:]] == values[:-1][~published[1:]])
    history: list[int] = []
    for i in range(len(x)):
        candidate = ((1 << UNIT_BITS) - sum(history[-(w - 1) :] if w > 1 else [])) // 2
        expected = (mech.test_units if i else 0) + (candidate if published[i] else 0)
        assert units[i] == expected
        history.append(candidate if published[i] else 0)
    assert np.all(values / mech.lattice == np.rint(values / mech.lattice))


def test_a_steady_fixation_saves_budget_and_a_saccade_publishes():
    mech = GazeBudgetDistribution(epsilon=20.0, w=10)
    w = mech.w
    x = np.zeros((3 * w, 2))
    x[2 * w :, 0] = 15.0  # a 15° saccade after two windows of fixation
    rng = secure_generator(8)
    steady, at_jump = [], []
    for _ in range(200):
        out = mech.release(x, mech.new_state(), rng)
        pub = _published(mech, out)
        steady.append(np.mean(pub[1 : 2 * w]))
        at_jump.append(pub[2 * w])
    # measured: ≈ 0.28 of the fixation's ticks publish (uniform: every tick), the saccade ≈ 99.7 %
    assert np.mean(steady) < 0.4
    assert np.mean(at_jump) > 0.95


def test_budget_distribution_is_more_accurate_on_a_fixation_than_its_noise_alone():
    # a repeated position keeps the first publication's small error (ε_w/4 per degree)
    mech = GazeBudgetDistribution(epsilon=40.0, w=10)
    out = _release(mech, np.tile([3.0, 4.0], (400, 1)), seed=9)
    err = np.abs(out.values - [3.0, 4.0]).sum(axis=1)
    assert np.median(err) < 2 * 2 * mech.w / mech.epsilon  # the uniform mechanism's expected L1 error


def test_budget_state_is_its_own():
    bd = GazeBudgetDistribution(epsilon=4.0, w=4)
    with pytest.raises(ValueError, match="new_state"):
        bd.release(np.zeros((2, 2)), GazeBudgetDistribution(epsilon=4.0, w=5).new_state(), secure_generator(0))
    with pytest.raises(TypeError, match="GazeState"):
        bd.release(np.zeros((2, 2)), None, secure_generator(0))


# ---------------------------------------------------------------- reproducible, clipped, checked input


@pytest.mark.parametrize("cls", CLASSES)
def test_seeded_runs_are_reproducible(cls):
    mech = cls(epsilon=10.0, w=5)
    x = np.random.default_rng(1).uniform(-20, 20, (64, 2))
    a, b, c = _release(mech, x, seed=4), _release(mech, x, seed=4), _release(mech, x, seed=5)
    assert np.array_equal(a.values, b.values) and np.array_equal(a.epsilon, b.epsilon)
    assert not np.array_equal(a.values, c.values)


@pytest.mark.parametrize("cls", CLASSES)
def test_positions_are_clipped_to_the_field_before_noise(cls):
    mech = cls(epsilon=10.0, w=5, field=(30.0, 20.0))
    far = _release(mech, [[100.0, -500.0], [-31.0, 5.0]], seed=6)
    edge = _release(mech, [[30.0, -20.0], [-30.0, 5.0]], seed=6)
    assert np.array_equal(far.values, edge.values)
    assert far.clipped_fraction == 1.0 and edge.clipped_fraction == 0.0


@pytest.mark.parametrize("cls", CLASSES)
def test_one_tick_in_python_floats_is_the_arrays_release_bit_for_bit(cls):
    """``release_one`` (a live wake's tick) draws the same noise from the same pool and gives the bits
    ``release`` gives, tick after tick across pool refills: inside, past and on the field's edge,
    on exact halves of the lattice (ties to even), signed zeros."""
    mech = cls(epsilon=20.0, w=60, field=(30.0, 20.0))
    gamma = mech.lattice
    rows = np.random.default_rng(3).uniform(-40, 40, (150, 2))
    rows[:8] = [[0.0, -0.0], [-0.0, 0.0], [30.0, -20.0], [100.0, -500.0], [2.5 * gamma, -3.5 * gamma],
                [0.5 * gamma, -0.5 * gamma], [-31.0, 20.0], [29.999999, 19.999999]]  # fmt: skip
    one, arrays = mech.new_state(), mech.new_state()
    rng_one, rng_arrays = secure_generator(7), secure_generator(7)
    for x, y in rows.tolist():
        vx, vy, eps, clipped = mech.release_one(x, y, one, rng_one)
        ref = mech.release(np.array([[x, y]]), arrays, rng_arrays)
        assert np.array([vx, vy]).tobytes() == ref.values[0].tobytes()
        assert (eps, clipped) == (float(ref.epsilon[0]), ref.clipped_fraction == 1.0)
    assert one.ticks == arrays.ticks == len(rows)
    with pytest.raises(InputError, match=f"{mech.name}: position at tick 0 is not finite"):
        mech.release_one(math.nan, 0.0, one, rng_one)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(
    "positions",
    [np.zeros((3,)), np.zeros((3, 3)), [[0.0, math.nan]], [[math.inf, 0.0]]],
    ids=["1d", "3col", "nan", "inf"],
)
def test_bad_positions_are_refused(cls, positions):
    mech = cls(epsilon=10.0, w=5)
    with pytest.raises(InputError, match=mech.name):
        _release(mech, positions)


@pytest.mark.parametrize("cls", CLASSES)
def test_no_ticks_and_a_numpy_generator(cls):
    mech = cls(epsilon=10.0, w=5)
    out = _release(mech, np.zeros((0, 2)))
    assert out.values.shape == (0, 2) and out.epsilon.shape == (0,) and out.clipped_fraction == 0.0
    assert mech.release(np.zeros((2, 2)), mech.new_state(), np.random.default_rng(0)).values.shape == (2, 2)
    with pytest.raises(TypeError, match="rng"):
        mech.release(np.zeros((2, 2)), mech.new_state(), 42)


# ---------------------------------------------------------------- parameters, immutability, description


BAD = [
    ("epsilon", "1", TypeError),
    ("epsilon", True, TypeError),
    ("epsilon", None, TypeError),
    ("epsilon", 0, ValueError),
    ("epsilon", -1.0, ValueError),
    ("epsilon", math.nan, ValueError),
    ("epsilon", math.inf, ValueError),
    ("epsilon", 1e-4, ValueError),  # noise wider than any field
    ("epsilon", 1e300, ValueError),  # a lattice too fine for the field
    ("w", 4.0, TypeError),
    ("w", True, TypeError),
    ("w", "4", TypeError),
    ("w", 0, ValueError),
    ("w", -3, ValueError),
    ("field", "ab", TypeError),
    ("field", 5.0, TypeError),
    ("field", None, TypeError),
    ("field", ("a", 1.0), TypeError),
    ("field", (1.0,), ValueError),
    ("field", (1.0, 2.0, 3.0), ValueError),
    ("field", (0.0, 1.0), ValueError),
    ("field", (1.0, -1.0), ValueError),
    ("field", (math.inf, 1.0), ValueError),
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.name)
@pytest.mark.parametrize(("param", "value", "error"), BAD, ids=[f"{p}={v!r}" for p, v, _ in BAD])
def test_bad_parameters_are_refused_by_name(cls, param, value, error):
    with pytest.raises(error) as info:
        cls(**{"epsilon": 4.0, "w": 4, param: value})
    assert param in str(info.value)


@pytest.mark.parametrize("cls", CLASSES)
def test_keyword_only_and_complete(cls):
    with pytest.raises(TypeError):
        cls(4.0, 4)
    with pytest.raises(TypeError, match="'w'"):
        cls(epsilon=4.0)
    with pytest.raises(TypeError, match="'k'"):
        cls(epsilon=4.0, w=4, k=2)
    assert cls.parameters == ("epsilon", "w", "field")
    assert cls(epsilon=4, w=4, field=[10, 8]).field == (10.0, 8.0)


@pytest.mark.parametrize("cls", CLASSES)
def test_immutable_copyable_and_described(cls):
    mech = cls(epsilon=6.0, w=3, field=(40.0, 30.0))
    with pytest.raises(AttributeError):
        mech.epsilon = 1.0
    with pytest.raises(AttributeError):
        del mech.w
    with pytest.raises(AttributeError):
        mech.lattice = 1.0
    for clone in (copy.deepcopy(mech), pickle.loads(pickle.dumps(mech))):
        assert type(clone) is cls and clone.arguments() == mech.arguments() and clone.describe() == mech.describe()
    out = _release(mech, np.zeros((3, 2)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        out.values = out.values
    with pytest.raises(ValueError):
        out.values[0, 0] = 1.0
    d = mech.describe()
    json.dumps(d)
    assert d["mechanism"] == cls.name and d["metric"] == "L1 degrees" and d["w"] == 3
    assert d["epsilon_w_per_degree"] == 6.0 and d["field"] == [40.0, 30.0] and d["guarantee"] == mech.guarantee
    for words in ("over any 3 consecutive ticks", "L1", "exp(6·d)", "[-40°, 40°] x [-30°, 30°]", "Euclidean"):
        assert words in mech.guarantee
    assert isinstance(mech.new_state(), GazeState)


def test_uniform_states_its_tick_epsilon():
    d = GazeUniform(epsilon=6.0, w=3).describe()
    assert d["epsilon_tick_per_degree"] == d["epsilon_tick_max_per_degree"] == 2.0
    assert "every tick spends ε_w/w = 2 per degree" in d["guarantee"]


def test_the_gaze_registry_is_its_own():
    assert dict(GAZE_MECHANISMS) == {"geo-uniform": GazeUniform, "geo-bd": GazeBudgetDistribution}
    assert all(name == cls.name and issubclass(cls, GazeMechanism) for name, cls in GAZE_MECHANISMS.items())
    assert not set(GAZE_MECHANISMS) & set(MECHANISMS) and not set(GAZE_MECHANISMS.values()) & set(MECHANISMS.values())
    assert issubclass(GazeMechanism, BaseMechanism)
    with pytest.raises(TypeError):
        GAZE_MECHANISMS["geo-uniform"] = GazeUniform  # type: ignore[index]
