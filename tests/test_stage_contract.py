"""One contract suite over every streaming stage: batch-split invariance, determinism, reset."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamdp import EventDetector, FeaturePipeline, GazeBatch, WindowConfig, WindowFeatures
from streamdp.events import EventBatch
from streamdp.stages.events import EventConfig
from streamdp.synthetic import generate

SYN = generate(duration=95.0, rate=120.0, seed=11, person=4).recording.gaze


def _events_flat(out: EventBatch) -> dict[str, np.ndarray]:
    f, s, b = out.fixations, out.saccades, out.blinks
    return {
        **{f"fix.{k}": getattr(f, k) for k in ("start", "end", "x", "y", "var_x", "var_y", "pupil_mean", "pupil_var")},
        **{f"sac.{k}": getattr(s, k) for k in ("start", "end", "amplitude", "angle", "letter")},
        "blk.start": b.start,
        "blk.end": b.end,
    }


@dataclass
class StageCase:
    name: str
    make: Callable[[], Any]
    feed: Callable[[Any, GazeBatch], Any]
    finish: Callable[[Any], Any]
    flatten: Callable[[list[Any]], dict[str, np.ndarray]]


def _detector_flat(parts: list[EventBatch]) -> dict[str, np.ndarray]:
    return _events_flat(EventBatch.concat(parts))


def _rows_flat(parts: list[Any]) -> dict[str, np.ndarray]:
    parts = [p for p in parts if len(p)]
    if not parts:
        return {"t": np.empty(0), "values": np.empty((0, 52))}
    return {
        "t": np.concatenate([p.t for p in parts]),
        "values": np.concatenate([p.values for p in parts]),
    }


def _features_over_detector():
    return (EventDetector(EventConfig(segment_gap=30.0)), WindowFeatures(WindowConfig()))


CASES = [
    StageCase(
        "event-detector",
        EventDetector,
        lambda s, b: s.update(b),
        lambda s: s.flush(),
        _detector_flat,
    ),
    StageCase(
        "window-features",
        _features_over_detector,
        lambda s, b: s[1].update(s[0].update(b)),
        lambda s: s[1].update(s[0].flush()),
        _rows_flat,
    ),
    StageCase("pipeline", FeaturePipeline, lambda s, b: s.update(b), lambda s: s.flush(), _rows_flat),
]


def _run(case: StageCase, cuts: list[int], gaze: GazeBatch = SYN) -> dict[str, np.ndarray]:
    stage = case.make()
    outs = [case.feed(stage, part) for part in gaze.split(sorted(set(cuts)))]
    outs.append(case.finish(stage))
    return case.flatten(outs)


def _assert_identical(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> None:
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].shape == b[k].shape, k
        assert np.array_equal(a[k], b[k], equal_nan=True), k


WHOLE = {c.name: _run(c, []) for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.lists(st.integers(1, len(SYN) - 1), max_size=40))
def test_any_batch_split_gives_identical_output(case, cuts):
    _assert_identical(_run(case, cuts), WHOLE[case.name])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_single_sample_batches_give_identical_output(case):
    gaze = SYN.slice(0, 40 * 120)
    _assert_identical(_run(case, list(range(1, len(gaze))), gaze), _run(case, [], gaze))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_reset_forgets_everything(case):
    stage = case.make()
    case.feed(stage, SYN.slice(0, 3000))
    (stage if not isinstance(stage, tuple) else stage[0]).reset()
    if isinstance(stage, tuple):
        stage[1].reset()
    out = [case.feed(stage, SYN), case.finish(stage)]
    _assert_identical(case.flatten(out), WHOLE[case.name])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_output_is_not_empty_and_deterministic(case):
    a, b = _run(case, [500]), _run(case, [500])
    _assert_identical(a, b)
    assert any(v.size for v in a.values())
