"""Capture's clock set far ahead (``T`` from any app) and back again, as a live session meets it
(streamdp/stages/ahead.py ``leap_past``): the gaze on the new clock arrives some milliseconds
after the old, long before any timer could have reached the deadlines in between.

Before, the session released (and charged) a chunk for every deadline the gaze leapt over: 3,125
chunks at once, ε 31,250, for ``T`` + 100,000 s. Now a leap past a chunk's deadline starts a new
segment as a clock gone back does: no chunk for the skipped interval, none released before its
time on either clock. A pause in the gaze is no leap: the shell's timer reaches each deadline
while the gaze pauses (tests/test_gaze_channel_fields.py, ``test_a_pause_in_the_gaze_…``).
"""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.privacy.audit.gaze_timing import ClockedSink
from streamdp.session import Session
from streamdp.stages.ahead import leap_past
from streamdp.synthetic import generate

from .gaze_channel_driver import bursts_of


class ChunkClock(ClockedSink):
    """Notes the source clock each chunk went out at, and its last step."""

    def __init__(self) -> None:
        super().__init__()
        self.chunks: list[tuple[float, float]] = []

    def publish(self, release) -> None:
        super().publish(release)
        if release.ledger.get("channel") != "gaze":
            self.chunks.append((self.now, float(release.t[-1])))


def live(
    segments: list[tuple[float, float]], config: SessionConfig, clock_was_set: bool | None = True
) -> tuple[Session, ChunkClock]:
    """Gaze in ``(start, seconds)`` segments, each straight after the last in wall time (the clock
    set between them), delivered as the relay does: the timer runs on the newest gaze read plus
    the wall time since (``Relay.schedule_now``: the session's newest gaze, which a new segment
    sets again) and releases what is due between bursts. ``clock_was_set``: what the relay's
    read of Capture's clock says when the session asks at a leap (None: a shell that cannot tell)."""
    sink = ChunkClock()
    session = Session(config, sinks=[sink], seed=3, source="leap")
    asked: list[int] = []
    if clock_was_set is not None:
        session.clock_was_set = lambda: asked.append(1) is None and clock_was_set
    session.asked = asked  # type: ignore[attr-defined]
    wall_shift, newest, newest_wall = 0.0, -np.inf, 0.0
    for i, (start, seconds) in enumerate(segments):
        bursts = bursts_of(generate(duration=seconds, rate=120.0, seed=i, start_time=start).recording, seed=i)
        for at, burst in bursts:
            wall = at - start + wall_shift
            while (due := session.next_deadline) is not None and due <= newest + (wall - newest_wall):
                sink.now = due
                session.advance_to(due)
            sink.now = at
            session.receive_frames(burst)
            if session.newest_gaze is not None:
                newest, newest_wall = session.newest_gaze, wall
        wall_shift += seconds
    return session, sink


CONFIG = SessionConfig(seed=1, chunk_length=16)
SPAN = CONFIG.chunk_length * CONFIG.step  # s a chunk covers


@pytest.mark.parametrize("leap", [1e5, 3.0 * SPAN], ids=["T+1e5-s", "T+3-chunks"])
def test_a_clock_set_ahead_and_back_starts_new_segments_and_releases_no_chunk_for_the_skipped_time(leap):
    segments = [(1000.0, 80.0), (1080.0 + leap, 70.0), (1150.0, 80.0)]
    session, sink = live(segments, CONFIG)
    at = np.array([a for a, _ in sink.chunks])
    last_step = np.array([t for _, t in sink.chunks])
    assert session.counters.restarts == 2  # once at each jump, whoever tells it
    assert len(session.asked) == 1  # the clock read at the leap ahead only (the jump back is its gaze's)
    # 230 s of gaze: at most one chunk per chunk span of it; before, one per deadline leapt over
    assert 10 <= len(sink.chunks) <= 230.0 / SPAN
    assert np.all(at >= last_step + CONFIG.chunk_hold - 1e-9)  # none before its public time
    # each segment's chunks lie within its gaze: none for the interval the clock skipped
    inside = np.zeros(len(sink.chunks), dtype=bool)
    for start, seconds in segments:
        inside |= (last_step > start) & (last_step <= start + seconds)
    assert inside.all(), last_step[~inside]
    # no burst: in release order, the next chunk a chunk span later, or on a clock gone back (its
    # grid is the same public grid: its first chunk may go out at the time the last one did)
    steps = np.diff(at)
    assert np.all((steps >= SPAN - 1e-9) | (steps <= 0)), steps


@pytest.mark.parametrize("clock_was_set", [False, None], ids=["clock-not-set", "no-clock-to-read"])
def test_a_leap_on_a_clock_nobody_set_keeps_the_schedule(clock_was_set):
    """A source played faster than real time (the simulator, ``demo``) leaps over a pause in its
    gaze on a clock no app set: the relay's read of ``t`` says so, and every deadline of the
    pause releases its chunk as in a replay of the recording. Without a clock to read, the same."""
    segments = [(1000.0, 80.0), (1080.0 + 600.0, 70.0)]
    session, sink = live(segments, CONFIG, clock_was_set=clock_was_set)
    assert session.counters.restarts == 0
    assert len(session.asked) == (1 if clock_was_set is False else 0)  # asked at the leap only
    last_step = np.array([t for _, t in sink.chunks])
    assert np.count_nonzero((last_step > 1080.0) & (last_step < 1680.0)) >= 600.0 / SPAN - 1


def test_the_budget_is_charged_for_the_gaze_not_for_the_time_skipped():
    config = SessionConfig(seed=1, chunk_length=16, epsilon=10.0)
    session, sink = live([(1000.0, 80.0), (1080.0 + 1e5, 70.0)], config)
    status = session.status()
    assert status.released == len(sink.chunks) <= 150.0 / SPAN  # before: 12,500 chunks, ε 125,000
    assert status.epsilon_spent == pytest.approx(10.0 * len(sink.chunks))


@pytest.mark.parametrize(
    ("t", "clock", "deadline", "expected"),
    [
        pytest.param([10.0, 10.01, 1e5, 1e5 + 0.01], 9.99, 40.0, 2, id="leap"),
        pytest.param([39.99, 40.0, 40.01, 45.0], 39.98, 40.0, None, id="gaze-passes-the-deadline-itself"),
        pytest.param([50.0, 50.01], 39.0, 40.0, 0, id="leap-at-the-batch-start"),
        pytest.param([50.0, 50.01], 40.5, 40.0, None, id="the-timer-reached-the-deadline"),
        pytest.param([41.5, 41.51], 39.0, 40.0, None, id="within-the-margin"),
        pytest.param([50.0, 50.01], 39.0, None, None, id="no-deadline-yet"),
        pytest.param([], 39.0, 40.0, None, id="no-gaze"),
    ],
)
def test_leap_past(t, clock, deadline, expected):
    assert leap_past(np.array(t, dtype=np.float64), clock, deadline, 2.0) == expected
