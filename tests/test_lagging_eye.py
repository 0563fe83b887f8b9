"""An eye process that falls behind (streamdp/session.py, the chunk reorder window).

On the real Capture v3.6 under load (2 cores, both eyes at ~110 Hz) each eye process falls behind
on its own: 19–27 % of gaze datums arrive more than 0.15 s behind the newest gaze already
published, up to 1.3 s, almost all of it monocular gaze from the lagging eye, while the other eye's
gaze and Capture's world frames stay on time (../shared/pupil-capture/README.md). The stream here
is built the same way: binocular gaze while both eyes keep up; while one falls behind (its lag
growing as a process that runs slower than its camera, then draining as it catches up), the other
eye's samples go out on time as monocular gaze and the lagging eye's arrive late, in order among
themselves. A live session is fed in world-frame bursts with the world frame's timestamp as its
clock, as the plugin does (``advance_to`` once a deadline has passed).
"""

from __future__ import annotations

import logging
from dataclasses import replace

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.gaze import GazeColumns
from streamdp.plausibility import within_bounds
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

FRAME = 1 / 30  # the world camera's frame: Capture's gaze reaches a plugin with each frame
CONFIG = SessionConfig(chunk_length=16, seed=3)


def _lagging(seconds: float, max_lag: float, seed: int) -> tuple[GazeColumns, np.ndarray]:
    """Capture-like gaze and each datum's arrival time (source clock): episodes in which one eye
    falls behind by up to ``max_lag`` s and catches up again."""
    gaze = GazeColumns.from_batch(generate(duration=seconds, rate=120.0, seed=seed, start_time=5000.0).recording.gaze)
    t = np.asarray(gaze.t)
    rng = np.random.default_rng(seed)
    eye = np.full(len(t), 2, dtype=np.int8)
    arrival = t + rng.uniform(0.004, 0.02, len(t))  # detection and mapping of a frame on time
    start = t[0] + 5.0
    while start < t[-1] - 10.0:
        lagging, grow = int(rng.integers(0, 2)), rng.uniform(2.0, 6.0)  # which eye, s of falling behind
        # it catches up faster than it fell behind, its own gaze still in order (lag falling
        # at most 0.75 s a second)
        drain = max(grow / 4, max_lag / 0.75)
        episode = (t >= start) & (t < start + grow + drain)
        since = t[episode] - start
        lag = np.where(since < grow, since / grow, 1 - (since - grow) / drain) * max_lag
        mine = (np.arange(len(t))[episode] % 2) == lagging  # alternate samples: one eye each
        eye[episode] = np.where(mine, lagging, 1 - lagging)
        arrival[np.flatnonzero(episode)[mine]] += lag[mine]
        start += grow + drain + rng.uniform(3.0, 8.0)
    cols = GazeColumns.from_arrays(
        t=t, x=gaze.x, y=gaze.y, confidence=gaze.confidence, diameter_mm=gaze.diameter_mm,
        diameter_px=gaze.diameter_px, eye_id=eye, valid=gaze.valid,
    )  # fmt: skip
    return cols, arrival


def _live(cols: GazeColumns, arrival: np.ndarray) -> tuple[list, list[float], Session]:
    """Feed ``cols`` in arrival order, a world frame's burst at a time, the frame's timestamp as
    the clock; per release, the clock when it went out."""
    sink = CollectingSink()
    session = Session(CONFIG, sinks=[sink])
    order = np.argsort(arrival, kind="stable")
    frame_of = np.floor(arrival[order] / FRAME).astype(np.int64)
    cuts = np.flatnonzero(np.diff(frame_of)) + 1
    out_at: list[float] = []
    for part in np.split(order, cuts):
        now = (np.floor(arrival[part[0]] / FRAME) + 1) * FRAME  # the frame the burst goes out with
        n = len(sink.releases)
        session.update(cols.take(part))
        due = session.next_deadline
        if due is not None and now > due:
            session.advance_to(now)
        out_at += [now] * (len(sink.releases) - n)
    n = len(sink.releases)
    session.flush()
    out_at += [np.inf] * (len(sink.releases) - n)
    return sink.releases, out_at, session


@pytest.fixture(scope="module")
def stream() -> tuple[GazeColumns, np.ndarray]:
    return _lagging(150.0, max_lag=1.3, seed=8)


def test_a_lagging_eye_loses_no_gaze_restarts_nothing_and_changes_no_release(stream):
    cols, arrival = stream
    sent = cols.t[np.argsort(arrival, kind="stable")]
    # the stream is as late as the real Capture's: datums more than 0.15 s behind the newest gaze
    # already sent, up to 1.3 s
    lateness = np.maximum.accumulate(sent) - sent
    assert np.mean(lateness > 0.15) > 0.15 and lateness.max() == pytest.approx(1.3, abs=0.05)
    releases, out_at, session = _live(cols, arrival)
    counters = session.counters
    assert (counters.late, counters.invalid, counters.restarts) == (0, 0, 0)
    # the same chunks, bit for bit, as when every datum arrives on time
    reference, _, _ = _live(cols, cols.t + 0.01)
    assert len(releases) == len(reference) >= 8
    for got, want in zip(releases, reference, strict=True):
        np.testing.assert_array_equal(got.t, want.t)
        np.testing.assert_array_equal(got.values, want.values)
    # each went out at its public time (last step + chunk reorder window + slack), not before
    for rel, at in zip(releases, out_at, strict=True):
        assert at >= float(rel.t[-1]) + CONFIG.chunk_hold


def test_gaze_later_than_the_chunk_window_is_counted_late_by_name_and_restarts_nothing():
    # later than the window, not yet a clock that jumped back (more than 1 s beyond the window:
    # a lone datum that far is a stray timestamp, dropped as invalid; two are a restart)
    cols, arrival = _lagging(120.0, max_lag=CONFIG.chunk_reorder_window + 0.8, seed=9)
    releases, _, session = _live(cols, arrival)
    counters = session.counters
    assert counters.restarts == 0 and counters.invalid == 0
    assert 0 < counters.late < 0.1 * len(cols)
    assert session.status().late == counters.late
    assert len(releases) >= 6


def test_gaze_beyond_the_plausibility_bounds_is_invalid_live_as_in_the_replayed_recording(stream, caplog):
    # the real Capture's binocular mapper, with an eye lagging, published gaze at (6.2, 13.1) with
    # confidence 1.0; a replay of the recording holds it to the public bounds (invalid), and so
    # must the live session, or the same gaze makes other chunks live than replayed
    cols, arrival = stream
    wild = np.flatnonzero(cols.valid & (cols.t > cols.t[0] + 30.0))[::2000][:5]
    x, y, conf = cols.x.copy(), cols.y.copy(), cols.confidence.copy()
    x[wild], y[wild], conf[wild] = 6.24, 13.11, 1.0
    cols = replace(cols, x=x, y=y, confidence=conf)
    with caplog.at_level(logging.INFO, logger="streamdp.pipeline_input"):
        releases, _, session = _live(cols, arrival)
    assert session.counters.invalid == len(wild) == 5
    # said once, naming the source and the bound; the rest are counted
    told = [r.getMessage() for r in caplog.records if "plausibility bounds" in r.getMessage()]
    assert len(told) == 1 and "beyond 10 scene widths), counted as invalid" in told[0] and told[0].startswith("gaze: ")
    recorded = cols.to_batch("mm", "recording")
    kept, left_out = within_bounds(recorded)
    assert left_out.positions == len(wild)
    replayed = Session(CONFIG, reorder=False).run(kept)
    as_gaze = Session(CONFIG, reorder=False).run(recorded)  # were they gaze, the chunks would differ
    assert len(releases) == len(replayed) >= 8
    assert any(not np.array_equal(a.values, b.values) for a, b in zip(replayed, as_gaze, strict=True))
    for got, want in zip(releases, replayed, strict=True):
        np.testing.assert_array_equal(got.t, want.t)
        np.testing.assert_array_equal(got.values, want.values)
