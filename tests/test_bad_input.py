"""Bad input: a clear error naming the input and the problem, and nothing accepted is lost."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp import FeaturePipeline, GazeBatch, TimestampOrderError
from streamdp.events import EventBatch
from streamdp.stages import EventDetector
from streamdp.synthetic import generate

GAZE = generate(duration=70.0, rate=100.0, seed=2).recording.gaze


def _rows(parts):
    parts = [p for p in parts if len(p)]
    return np.concatenate([p.values for p in parts]), np.concatenate([p.t for p in parts])


def test_batch_going_back_in_time_is_rejected_whole_and_the_stream_goes_on_unharmed():
    first, second = GAZE.slice(0, 3000), GAZE.slice(3000, len(GAZE))
    pipe = FeaturePipeline()
    out = [pipe.update(first)]
    stale = GAZE.slice(2500, 2600)  # starts before the last accepted sample
    with pytest.raises(TimestampOrderError, match=r"backwards between batches.*rejected"):
        pipe.update(stale)
    out += [pipe.update(second), pipe.flush()]
    clean = FeaturePipeline()
    want = [clean.update(GAZE), clean.flush()]
    got_v, got_t = _rows(out)
    want_v, want_t = _rows(want)
    assert np.array_equal(got_t, want_t) and np.array_equal(got_v, want_v)


def _with_gap(gap: float) -> GazeBatch:
    a = generate(duration=40.0, rate=100.0, seed=1).recording.gaze
    b = generate(duration=40.0, rate=100.0, seed=2, start_time=float(a.t[-1]) + gap).recording.gaze
    return GazeBatch.concat([a, b])


def test_a_gap_longer_than_a_window_keeps_the_public_grid_and_invents_nothing_across_it():
    gaze = _with_gap(45.0)
    rows = FeaturePipeline().run(gaze_rec(gaze))
    t_end_a, t_start_b = gaze.t[3999], gaze.t[4000]
    # steps on the public grid (multiples of the step), none missing, none moved by the gap
    assert np.all(rows.t % 0.5 == 0) and np.all(np.diff(rows.t) == 0.5)
    empty = (rows.t > t_end_a + 30.0) & (rows.t < t_start_b)
    assert empty.sum() >= 29 and not rows.values[empty].any()  # windows with no gaze: the public defaults
    # once the windows hold only the second segment, its features are those of that segment alone
    alone = FeaturePipeline().run(gaze_rec(gaze.slice(4000, len(gaze))))
    later = rows.t >= alone.t[0]
    np.testing.assert_array_equal(rows.t[later], alone.t)
    np.testing.assert_allclose(rows.values[later], alone.values, rtol=1e-9, atol=1e-12)


def test_gap_shorter_than_a_window_keeps_the_segment():
    gaze = _with_gap(5.0)
    rows = FeaturePipeline().run(gaze_rec(gaze))
    steps = np.diff(rows.t)
    np.testing.assert_allclose(steps, 0.5)


def test_restart_after_a_clock_reset_starts_a_new_segment():
    pipe = FeaturePipeline()
    a = generate(duration=40.0, rate=100.0, seed=1, start_time=5000.0).recording.gaze
    b = generate(duration=40.0, rate=100.0, seed=2, start_time=10.0).recording.gaze
    out = [pipe.update(a)]
    with pytest.raises(TimestampOrderError):
        pipe.update(b)
    out.append(pipe.restart())
    out += [pipe.update(b), pipe.flush()]
    _v, t = _rows(out)
    assert (t > 5000).sum() == 20 and (t < 100).sum() == 20


def test_empty_batches_and_an_empty_stream_produce_nothing_and_no_error():
    pipe = FeaturePipeline()
    assert len(pipe.update(GazeBatch.empty())) == 0
    assert len(pipe.flush()) == 0
    det = EventDetector()
    out = EventBatch.concat([det.update(GazeBatch.empty()), det.flush()])
    assert len(out.fixations) == 0 and len(out.saccades) == 0


def test_low_confidence_stretch_yields_no_fixations_and_no_invented_saccades():
    n = 3000
    t = np.arange(n) / 100.0
    conf = np.ones(n)
    conf[1000:1400] = 0.1  # 4 s of lost tracking
    x = 0.5 + 0.1 * (np.arange(n) // 40 % 2)
    gaze = GazeBatch.from_arrays(t=t, x=x, y=np.full(n, 0.5), confidence=conf)
    det = EventDetector()
    ev = EventBatch.concat([det.update(gaze), det.flush()])
    inside = (ev.fixations.end > 10.0) & (ev.fixations.start < 14.0)
    assert not np.any(inside)
    assert not np.any((ev.saccades.start < 14.0) & (ev.saccades.end > 10.0))


def gaze_rec(gaze: GazeBatch):
    from streamdp.gaze import Recording

    return Recording(gaze=gaze, blinks=None, name="test")
