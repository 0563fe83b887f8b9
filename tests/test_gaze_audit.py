"""The end-to-end audit of the real-time gaze mechanisms (streamdp.privacy.audit.gaze), read from the
published tick messages: correct mechanisms pass; broken variants are caught, each by the check
meant for it. The channel's own breaks (fields, publish times, the CLI): test_gaze_audit_channel.py."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.privacy.audit.gaze import audit_gaze_mechanism, gaze_pairs
from streamdp.privacy.gaze_mechanisms import GazeBudgetDistribution, GazeUniform

from .gaze_variants import (
    BudgetHalfNoise,
    UniformCentreDiscount,
    UniformFloatPolar,
    UniformHalfNoise,
    UniformMiscounted,
    UniformNoClip,
    UniformWindowOnce,
    variant_channel,
)

#: ε_w = 4 over w = 4 ticks: 1 per degree per tick for the uniform mechanism
ARGS = {"epsilon": 4.0, "w": 4}
FAST = {"trials": 800, "alpha": 0.01, "seed": 3, "probe_runs": 16}


@pytest.mark.parametrize("cls", [GazeUniform, GazeBudgetDistribution], ids=lambda c: c.name)
def test_correct_mechanisms_pass(cls):
    report = audit_gaze_mechanism(cls(**ARGS), distance=1.0, **FAST)
    assert report.on_lattice and report.accounting_ok and report.scale_passed
    assert report.leaking_fields == () and report.epsilon_keys_ok
    assert report.epsilon_lower_bound <= report.epsilon_claimed
    assert report.verdict == "pass", report
    # the test has power: the bound comes close to the claim (the uniform mechanism's is tight)
    assert report.epsilon_lower_bound > 0.5 * report.epsilon_claimed
    # the measured noise is the declared one, within the interval's width
    assert 0.9 < report.scale_epsilon / report.scale_claimed <= 1.0
    # the ε keys: constant (uniform) or following the published positions (budget distribution)
    same_seed = report.epsilon_keys.startswith("identical")
    assert same_seed == (cls is GazeUniform), report.epsilon_keys


@pytest.mark.parametrize(
    ("cls", "distance", "trials", "caught_by"),
    [
        pytest.param(UniformHalfNoise, 1.0, 800, {"bound", "scale"}, id="half-noise"),
        pytest.param(UniformWindowOnce, 1.0, 800, {"bound", "scale"}, id="window-charged-once"),
        pytest.param(UniformNoClip, 1.0, 800, {"bound"}, id="no-clipping"),
        pytest.param(BudgetHalfNoise, 2.0, 800, {"bound", "scale"}, id="bd-half-noise"),
        pytest.param(UniformFloatPolar, 1.0, 200, {"lattice"}, id="float-planar-laplace"),
        pytest.param(UniformMiscounted, 1.0, 200, {"accounting"}, id="miscounted"),
        # it also reports less than its noise spends at the centre: the scale check sees that too
        pytest.param(UniformCentreDiscount, 1.0, 200, {"epsilon keys", "scale"}, id="epsilon-by-gap"),
    ],
)
def test_broken_variants_are_caught(cls, distance, trials, caught_by):
    """Each variant runs through the real channel (its registered parent's, the mechanism swapped)
    to the message bytes, and fails exactly the checks meant for it."""
    report = audit_gaze_mechanism(cls(**ARGS), distance=distance, channel=variant_channel, **{**FAST, "trials": trials})
    assert report.verdict == "fail"
    failed = {
        "bound": not report.bound_passed,
        "scale": not report.scale_passed,
        "lattice": not report.on_lattice,
        "accounting": not report.accounting_ok,
        "epsilon keys": not report.epsilon_keys_ok,
        "fields": bool(report.leaking_fields),
    }
    assert {name for name, hit in failed.items() if hit} == caught_by, report
    if caught_by == {"lattice"}:
        # planar Laplace satisfies the L1 claim in distribution: only the support check sees it
        assert any("low bits" in note for note in report.notes)
    if "epsilon keys" in caught_by:
        assert "DEPEND on the gaze" in report.epsilon_keys


def test_the_pairs_come_from_the_field():
    mech = GazeBudgetDistribution(epsilon=4.0, w=3, field=(20.0, 10.0))
    pairs = {p.name: p for p in gaze_pairs(mech, 2.0)}
    assert set(pairs) == {
        "centre, one tick",
        "corner, one tick",
        "diagonal, one tick",
        "beyond the edge, one tick",
        "centre, 3 ticks",
    }
    corner = pairs["corner, one tick"]
    assert np.array_equal(corner.x, [[18.0, 10.0]]) and np.array_equal(corner.y, [[20.0, 10.0]])
    # beyond the edge: 2° apart once clipped, and within 90° (a camera maps it to the scene)
    far = pairs["beyond the edge, one tick"]
    assert -90.0 < far.y[0, 0] < -20.0 and np.abs(np.clip(far.y, -20, 20) - far.x).sum() == 2.0
    # claims: d × min(ε_w, L × the per-tick maximum)
    assert pairs["centre, one tick"].claim == 2.0 * mech.epsilon_tick_max
    assert pairs["centre, 3 ticks"].claim == 2.0 * mech.epsilon
    assert len(gaze_pairs(GazeUniform(epsilon=1.0, w=1), 1.0)) == 4
    # a long window is audited over its first ticks only (a longer claim is beyond any test)
    (*_, window) = gaze_pairs(GazeUniform(epsilon=60.0, w=60), 1.0, window=16)
    assert window.name == "centre, 16 ticks" and window.claim == 16.0


@pytest.mark.parametrize(
    ("mech", "kw", "error"),
    [
        (GazeUniform(**ARGS), {"distance": 0.0}, ValueError),
        (GazeUniform(**ARGS), {"distance": 100.0}, ValueError),
        (GazeUniform(**ARGS), {"trials": 5}, ValueError),
        (GazeUniform(**ARGS), {"trials": 30}, ValueError),  # 15 selection runs
        (GazeUniform(**ARGS), {"alpha": 1.5}, ValueError),
        (GazeUniform(**ARGS, field=(95.0, 10.0)), {}, ValueError),  # no camera sees 190°
        ("geo-uniform", {}, TypeError),
    ],
    ids=["zero-distance", "distance-beyond-field", "few-trials", "few-selection-runs", "alpha", "field", "type"],
)
def test_bad_audit_arguments(mech, kw, error):
    with pytest.raises(error):
        audit_gaze_mechanism(mech, **kw)
