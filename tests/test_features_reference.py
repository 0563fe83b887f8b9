"""The incremental features equal the full-window reference (tests/reference_features.py).

Steps lie on the public grid (multiples of the step of the source clock), not on the first
sample: a recording starting at 1216.22 s has its first step at 1246.5 s, not 1246.22 s, and so
one step fewer when its last sample is less than a step after a grid time. Gaps restart nothing."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp import FEATURE_NAMES, FeaturePipeline, WindowConfig
from streamdp.events import EventBatch
from streamdp.gaze import GazeBatch, Recording
from streamdp.readers import read_recording
from streamdp.synthetic import generate

from .conftest import shared
from .reference_features import reference_features


def _compare(rec: Recording, window: WindowConfig | None = None) -> int:
    window = window or WindowConfig()
    pipe = FeaturePipeline(window=window)
    rows = pipe.run(rec)
    det = FeaturePipeline(window=window).detector
    events = EventBatch.concat([det.update(rec.gaze), det.flush()])
    t, ref = reference_features(events, float(rec.gaze.t[0]), float(rec.gaze.t[-1]), window.window, window.step)
    np.testing.assert_array_equal(rows.t, t)
    for j, name in enumerate(FEATURE_NAMES):
        np.testing.assert_allclose(rows.values[:, j], ref[:, j], rtol=1e-9, atol=1e-12, err_msg=name)
    return len(rows)


@pytest.mark.parametrize("person", [0, 1, 2])
@pytest.mark.parametrize("task", ["reading", "search"])
def test_matches_reference_on_synthetic_people(person, task):
    rec = generate(duration=150.0, rate=200.0, seed=person, person=person, task=task).recording
    assert _compare(rec) == 240  # steps at 30.0, 30.5, ..., 149.5 s


def test_matches_reference_with_one_second_steps_and_a_short_window():
    rec = generate(duration=90.0, rate=90.0, seed=5).recording
    assert _compare(rec, WindowConfig(window=10.0, step=1.0)) == 80


def test_matches_reference_with_a_window_shorter_than_a_group_and_not_a_multiple_of_the_step():
    # 1.3 s: no window holds a whole public group of 8 steps (2 s), and its start is off the grid
    rec = generate(duration=40.0, rate=120.0, seed=9).recording
    assert _compare(rec, WindowConfig(window=1.3, step=0.25)) == 154  # 1001.5 .. 1039.75


def test_matches_reference_through_a_gap_longer_than_the_window():
    a = generate(duration=60.0, rate=120.0, seed=7).recording.gaze
    b = generate(duration=60.0, rate=120.0, seed=8, start_time=float(a.t[-1]) + 45.3).recording.gaze
    rec = Recording(GazeBatch.concat([a, b]), None, name="gap")
    n = _compare(rec)
    # steps 1030.0 .. 1164.5: the 45 s gap neither restarts the windows nor removes steps
    assert n == int((float(b.t[-1]) - 1030.0) // 0.5) + 1


def test_matches_reference_on_the_5_minute_119hz_recording():
    rec = read_recording(shared("cateyes_119hz", "test_data_full.csv"))
    assert _compare(rec) == 535  # grid steps 188.0 .. 455.0 s


def test_matches_reference_on_pupil_core_gaze_export():
    rec = read_recording(shared("pupil_core_tutorial", "gaze_positions.csv"))
    # first sample 1216.22 s: grid steps 1246.5 .. 1255.0 (last sample 1255.41 s)
    assert _compare(rec) == 18


def test_features_are_finite_and_non_trivial_on_synthetic():
    rows = FeaturePipeline().run(generate(duration=120.0, seed=3).recording)
    assert np.all(np.isfinite(rows.values))
    # every feature varies or is a legitimately constant count; rates are positive
    assert rows.values[:, 0].min() > 1.0  # fixation rate above 1/s
    assert np.ptp(rows.values, axis=0)[FEATURE_NAMES.index("pupil_mean_mean")] > 0
