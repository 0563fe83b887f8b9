"""The incremental features equal the full-window reference (tests/reference_features.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from streamdp import FEATURE_NAMES, FeaturePipeline, WindowConfig
from streamdp.events import EventBatch
from streamdp.gaze import Recording
from streamdp.readers import read_recording
from streamdp.synthetic import generate

from .conftest import shared
from .reference_features import reference_features


def _segments(gaze_t: np.ndarray, gap: float) -> list[tuple[float, float]]:
    cut = np.flatnonzero(np.diff(gaze_t) > gap) + 1
    bounds = [0, *cut.tolist(), gaze_t.shape[0]]
    return [(float(gaze_t[a]), float(gaze_t[b - 1])) for a, b in itertools.pairwise(bounds)]


def _compare(rec: Recording, window: WindowConfig | None = None) -> int:
    window = window or WindowConfig()
    pipe = FeaturePipeline(window=window)
    rows = pipe.run(rec)
    det = FeaturePipeline(window=window).detector
    events = EventBatch.concat([det.update(rec.gaze), det.flush()])
    t, ref = reference_features(events, _segments(rec.gaze.t, window.window), window.window, window.step)
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


def test_matches_reference_on_the_5_minute_119hz_recording():
    rec = read_recording(shared("cateyes_119hz", "test_data_full.csv"))
    assert _compare(rec) > 500


def test_matches_reference_on_pupil_core_gaze_export():
    rec = read_recording(shared("pupil_core_tutorial", "gaze_positions.csv"))
    assert _compare(rec) == 19


def test_features_are_finite_and_non_trivial_on_synthetic():
    rows = FeaturePipeline().run(generate(duration=120.0, seed=3).recording)
    assert np.all(np.isfinite(rows.values))
    # every feature varies or is a legitimately constant count; rates are positive
    assert rows.values[:, 0].min() > 1.0  # fixation rate above 1/s
    assert np.ptp(rows.values, axis=0)[FEATURE_NAMES.index("pupil_mean_mean")] > 0
