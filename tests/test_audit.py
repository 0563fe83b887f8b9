"""The end-to-end audit passes the registered mechanisms and catches broken variants of them.

Each broken variant is a subclass built here and registered only for its test (the privatizer
accepts registered mechanisms only). Every audit runs raw chunks of all 52 features through the
real privatizer to msgpack bytes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import streamdp.stages.privatizer as privatizer_module
from streamdp.privacy import LPA, default_profile, make_mechanism
from streamdp.privacy.audit import (
    Channel,
    audit_mechanism,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_bound,
    laplace_scale_interval,
    neighbour_pairs,
    noise_model,
)
from streamdp.privacy.mechanisms import DCFPA, MechanismOutput

BOUNDS = default_profile()
FAST = {"runs": 400, "selection_runs": 200}


@pytest.fixture
def register(monkeypatch):
    """Let the privatizer accept ``cls`` for this test only."""

    def add(cls):
        monkeypatch.setattr(privatizer_module, "_REGISTERED", privatizer_module._REGISTERED | {cls})
        return cls

    return add


def _dcfpa(**kw):
    return make_mechanism("dcfpa", epsilon_per_feature=1.0, bounds=BOUNDS, chunk_length=32, **kw)


class DCFPAWithoutStepClamp(DCFPA):
    """Values clipped, steps not: a jump beyond r reaches the differences' coefficients whole."""

    def privatize(self, x, rng):
        arr = np.asarray(x, dtype=np.float64)
        y, ks = self.perturb(np.clip(arr, self.bounds.lo, self.bounds.hi), rng)
        return MechanismOutput(y, 0.0, ks)


class DCFPAWithoutValueClip(DCFPA):
    """Nothing clipped: the level is the raw mean."""

    def privatize(self, x, rng):
        y, ks = self.perturb(np.asarray(x, dtype=np.float64), rng)
        return MechanismOutput(y, 0.0, ks)


class DCFPAQuarterSensitivity(DCFPA):
    """Noise calibrated to a quarter of the sensitivity, for the level and the coefficients."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._set(noise_scales=self.noise_scales / 4, level_noise_scale=self.level_noise_scale / 4)


class LPAHalfNoise(LPA):
    def __init__(self, **kw):
        super().__init__(**kw)
        self._set(noise_scale=self.noise_scale / 2)


class LeakyChannel(Channel):
    """Adds a raw function of the chunk to every message's ledger."""

    def pack(self, message, raw):
        message["ledger"]["level_hint"] = round(float(np.mean(raw[:, 0])), 3)
        return super().pack(message, raw)


def _args(cls, **kw):
    return {"epsilon_per_feature": 1.0, "bounds": BOUNDS, "chunk_length": 32, **kw}


# ---------------------------------------------------------------- correct mechanisms pass


@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"name": "lpa"}, id="lpa"),
        pytest.param({"name": "dcfpa", "transform": "dct", "k": 2}, id="dcfpa-dct"),
    ],
)
def test_correct_mechanisms_pass(params):
    p = dict(params)
    mech = make_mechanism(p.pop("name"), epsilon_per_feature=1.0, bounds=BOUNDS, chunk_length=32, **p)
    report = audit_mechanism(mech, **FAST)
    assert report.leaking_fields == ()
    assert report.epsilon_lower_bound <= report.epsilon_claimed
    assert report.scale_epsilon is not None and report.scale_epsilon <= report.scale_claimed
    assert report.verdict == "pass"


@pytest.mark.slow
@pytest.mark.parametrize(
    "params",
    [
        pytest.param({"name": "steil"}, id="steil"),
        pytest.param({"name": "cfpa", "transform": "dft", "k": 2}, id="cfpa-dft"),
        pytest.param({"name": "dcfpa-bozkir", "transform": "dft", "k": 2, "sensitivity": "tight"}, id="bozkir-tight"),
        pytest.param({"name": "dcfpa", "transform": "dft", "k": "private"}, id="dcfpa-private-k"),
    ],
)
def test_every_other_correct_mechanism_passes(params):
    p = dict(params)
    mech = make_mechanism(p.pop("name"), epsilon_per_feature=1.0, bounds=BOUNDS, chunk_length=32, **p)
    report = audit_mechanism(mech, **FAST)
    assert report.verdict == "pass", report


# ---------------------------------------------------------------- broken variants fail


def test_lpa_with_half_the_noise_fails_the_scale_check(register):
    mech = register(LPAHalfNoise)(**_args(LPAHalfNoise))
    report = audit_mechanism(mech, **FAST)
    assert not report.scale_passed and report.scale_epsilon > 1.5 * report.scale_claimed
    assert report.verdict == "fail"


def test_dcfpa_without_value_clipping_fails(register):
    mech = register(DCFPAWithoutValueClip)(**_args(DCFPAWithoutValueClip, transform="dct", k=2))
    report = audit_mechanism(mech, **FAST)
    assert report.epsilon_lower_bound > 3 * report.epsilon_claimed
    assert report.verdict == "fail"


def test_dcfpa_without_step_clamping_fails(register):
    mech = register(DCFPAWithoutStepClamp)(**_args(DCFPAWithoutStepClamp, transform="dct", k=2))
    report = audit_mechanism(mech, **FAST)
    assert report.epsilon_lower_bound > report.epsilon_claimed
    assert report.verdict == "fail"


def test_dcfpa_with_a_quarter_of_the_sensitivity_fails(register):
    mech = register(DCFPAQuarterSensitivity)(**_args(DCFPAQuarterSensitivity, transform="dct", k=2))
    report = audit_mechanism(mech, **FAST)
    assert report.scale_epsilon > 2 * report.scale_claimed
    assert report.verdict == "fail"


def test_a_data_dependent_field_in_the_message_fails():
    report = audit_mechanism(_dcfpa(transform="dct", k=2), channel=LeakyChannel, runs=40, selection_runs=40)
    assert report.leaking_fields == ("ledger.level_hint",)
    assert report.verdict == "fail"


# ---------------------------------------------------------------- parts


def test_worst_pairs_reach_the_exact_sensitivity_of_the_reachable_chunks():
    mech = make_mechanism(
        "dcfpa-bozkir", epsilon_per_feature=1.0, bounds=BOUNDS, chunk_length=32, transform="dft", k=2,
        sensitivity="reachable",
    )
    reach = next(p for p in neighbour_pairs(noise_model(mech.describe()), BOUNDS) if p.family.startswith("reachable"))
    # found independently (LPs over the reachable chunks), it matches the mechanism's own exact figure
    np.testing.assert_allclose(reach.reference[0], mech.sensitivity, rtol=1e-4)
    # pushed beyond the bounds where the pair sits on them: only clipping makes it a reachable pair
    assert np.any(reach.x < BOUNDS.lo) and np.any(reach.y > BOUNDS.hi)


def test_clopper_pearson_and_epsilon_bounds():
    assert clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert clopper_pearson_upper(100, 100, 0.05) == 1.0
    assert clopper_pearson_lower(100, 100, 0.05) == pytest.approx(0.05 ** (1 / 100))
    assert 0.5 < clopper_pearson_upper(50, 100, 0.05) < 0.6
    assert epsilon_bound(0, 1000, 1000, 1000, 0.01) > 5
    assert epsilon_bound(100, 1000, 100, 1000, 0.01) == 0.0
    # the bound is below the true ratio (ln 3) with the stated confidence
    rng = np.random.default_rng(0)
    hits = [epsilon_bound(rng.binomial(2000, 0.1), 2000, rng.binomial(2000, 0.3), 2000, 0.05) for _ in range(200)]
    assert np.mean(np.array(hits) > math.log(3)) <= 0.05


def test_laplace_scale_interval_covers_the_scale():
    rng = np.random.default_rng(1)
    intervals = [laplace_scale_interval(np.abs(rng.laplace(0, 3.0, 500)), 0.05) for _ in range(300)]
    covered = [lo <= 3.0 <= hi for lo, _, hi in intervals]
    assert 0.92 <= np.mean(covered) <= 0.99


# ---------------------------------------------------------------- features of weight 0

TASK = default_profile("task")


class DCFPARawDroppedFeatures(DCFPA):
    """Features of weight 0 released as the raw (clipped) values instead of public constants."""

    def privatize(self, x, rng):
        out = super().privatize(x, rng)
        dropped = ~self.bounds.released
        y = np.array(out.values)
        y[:, dropped] = np.clip(np.asarray(x, dtype=np.float64), self.bounds.lo, self.bounds.hi)[:, dropped]
        return MechanismOutput(y, out.clipped_fraction, out.k)


def test_the_task_allocation_passes_with_its_public_constants():
    mech = make_mechanism("dcfpa", epsilon=10.0, bounds=TASK, chunk_length=32)
    assert 0 < TASK.released.sum() < TASK.released.size
    report = audit_mechanism(mech, **FAST)
    assert report.epsilon_claimed > 0 and report.verdict == "pass", report


def test_a_feature_of_weight_0_that_varies_with_the_data_fails(register):
    mech = register(DCFPARawDroppedFeatures)(epsilon=10.0, bounds=TASK, chunk_length=32)
    report = audit_mechanism(mech, **FAST)
    assert report.verdict == "fail"
    assert report.scale_epsilon == float("inf") or report.epsilon_lower_bound > report.epsilon_claimed


class DCFPASelectionAtTwiceItsShare(DCFPA):
    """The private choice of k spends twice the share of ε the ledger states for it."""

    def _choose_k(self, v, rng):
        from streamdp.privacy.selection import exponential_select

        eps_k = 2.0 * self._noise_epsilons * self.k_epsilon_share
        chosen = exponential_select(rng, self._k_utility(v), sensitivity=self.delta2, epsilon=eps_k)
        return np.asarray(self.k_candidates[chosen], dtype=np.int64)


def test_a_private_k_at_twice_its_share_fails_the_selection_check(register):
    mech = register(DCFPASelectionAtTwiceItsShare)(**_args(DCFPASelectionAtTwiceItsShare, k="private"))
    report = audit_mechanism(mech, **FAST)
    assert report.selection_rho is not None and report.selection_rho > 1.5
    assert not report.selection_passed and report.verdict == "fail"


def test_a_correct_private_k_passes_the_selection_check():
    report = audit_mechanism(_dcfpa(k="private"), **FAST)
    assert report.selection_rho is not None and 0.9 < report.selection_rho < 1.1
    assert report.selection_passed
