"""The relay follows the plugin's rule for Capture's clock: Time Sync's slews continue the session
and its public grid, a jump beyond the reorder window (``T``, Time Sync's jump) starts a new
segment. Read from Pupil Remote's ``t`` on the relay's heartbeats (streamdp/network/capture_clock.py)."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.network.capture_clock import CaptureClock
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

from .live_harness import ask_remote
from .pupil_standin import time_sync

THRESHOLD = 0.1  # the default reorder window


def _reads(check: CaptureClock, changes: dict[float, float], *, seconds: float = 40.0, rate: float = 1.0):
    """Reads once a second of a clock at ``rate`` that the timebase ``changes`` (time → amount
    added to Pupil time) move; gaze arrives every 0.1 s, 20 ms behind the clock, and the newest
    read is the largest (as the session's) until a jump restarts the session. The jumps the check reports."""
    shift, newest, reported = 0.0, None, []
    for step in range(int(seconds * 10) + 1):  # 0.1 s steps: Time Sync's slew interval
        wall = step / 10
        shift += changes.get(round(wall, 1), 0.0)
        pupil = 1000.0 + wall * rate + shift
        if step % 10 == 0:
            jump = check.read(wall=wall, pupil=pupil, newest_gaze=newest)
            if jump is not None:
                reported.append((wall, jump))
                newest = None  # the relay restarts the session: its gaze is forgotten
        newest = pupil - 0.02 if newest is None else max(newest, pupil - 0.02)
    return reported


def _time_sync(offset: float, at: float) -> dict[float, float]:
    """What Time Sync's follower does to Pupil time for one measured ``offset`` at ``at`` s (it
    adds to the timebase: Pupil time moves by the negative)."""
    return {round(at + after, 1): -amount for after, amount in time_sync.adjustments(offset)}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        pytest.param({}, [], id="steady"),
        pytest.param(_time_sync(0.005, 3.0), [], id="time-sync-slews-5ms"),
        pytest.param({**_time_sync(0.008, 3.0), **_time_sync(-0.009, 13.0), **_time_sync(0.004, 23.0)}, [],
                     id="time-sync-slews-every-10s"),
        pytest.param(_time_sync(0.05, 5.5), [], id="time-sync-jump-50ms-within-threshold"),
        pytest.param(_time_sync(-1.0, 5.5), [(6.0, 1.0)], id="time-sync-jump-1s-ahead"),
        pytest.param({5.5: -0.5}, [(6.0, -0.5)], id="T-back-half-a-second"),
        pytest.param({5.5: -5.0}, [(6.0, -5.0)], id="T-back-5s"),
        pytest.param({5.5: 3.0}, [(6.0, 3.0)], id="T-ahead-3s"),
        pytest.param({5.5: 0.099}, [], id="T-ahead-within-threshold"),
        pytest.param({5.5: -0.099}, [], id="T-back-within-threshold"),
    ],
)
def test_slews_continue_and_jumps_are_told(changes, expected):
    reported = _reads(CaptureClock(threshold=THRESHOLD), changes)
    assert [(w, pytest.approx(j, abs=1e-6)) for w, j in reported] == expected


@pytest.mark.parametrize("rate", [0.5, 20.0])
def test_a_clock_at_another_rate_is_checked_only_against_the_gaze_read(rate):
    assert _reads(CaptureClock(threshold=THRESHOLD), {5.5: 3.0}, rate=rate) == []  # ahead: not told
    before = 1000.0 + 5.4 * rate - 0.02  # the newest gaze read before the jump
    after = 1000.0 + 6.0 * rate - 30.0
    reported = _reads(CaptureClock(threshold=THRESHOLD), {5.5: -30.0}, rate=rate)
    assert reported == [(6.0, pytest.approx(after - before))]


@pytest.mark.parametrize("jump", [1.0, -0.5])
def test_a_jump_is_told_through_the_round_trips_of_a_loaded_machine(jump):
    """Reads every 0.2 s whose round trips take 2–30 ms (each read's wall time the middle of its
    round trip): over one interval the rate looks up to 15 % off real time, over the segment it
    does not, and a jump of Pupil time is still told at the read after it."""
    rng = np.random.default_rng(4)
    check, told, pupil_offset = CaptureClock(threshold=THRESHOLD), [], 1000.0
    for step in range(40):
        before = step * 0.2
        after = before + rng.uniform(0.002, 0.030)
        if step == 25:
            pupil_offset += jump
        pupil = pupil_offset + rng.uniform(before, after)  # Capture answered somewhere in the trip
        j = check.read(wall=(before + after) / 2, pupil=pupil, newest_gaze=None, spread=(after - before) / 2)
        if j is not None:
            told.append((step, j))
    assert len(told) == 1 and told[0][0] == 25 and told[0][1] == pytest.approx(jump, abs=0.03)


@pytest.mark.parametrize(
    ("threshold", "error"),
    [pytest.param("0.1", TypeError, id="text"), pytest.param(True, TypeError, id="bool"),
     pytest.param(-0.1, ValueError, id="negative"), pytest.param(float("nan"), ValueError, id="nan")],
)
def test_a_bad_threshold_is_refused_by_name(threshold, error):
    with pytest.raises(error, match="threshold"):
        CaptureClock(threshold=threshold)


# ---------------------------------------------------------------------------------- live


def _wait_for(condition, timeout: float) -> bool:
    # the relay runs in its thread; its counters are read, never waited on through a message
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


@pytest.mark.parametrize(
    ("moves", "restarts"),
    [
        pytest.param([0.0005] * 10, 0, id="slews"),
        pytest.param([-0.5], 1, id="T-back"),
        pytest.param([1.0], 1, id="T-ahead"),
    ],
)
def test_the_relay_restarts_on_captures_T_and_not_on_slews(moves, restarts):
    rec = generate(duration=20.0, seed=3).recording
    session = Session(SessionConfig(chunk_length=8), sinks=[CollectingSink()], seed=1, source="Capture")
    with CaptureSimulator(rec, speed=1.0) as sim:
        relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.5)
        runner = threading.Thread(target=relay.run, daemon=True)
        runner.start()
        try:
            assert _wait_for(lambda: session.newest_gaze is not None, 5.0)
            time.sleep(1.0)  # a few heartbeats' reads of the clock at real time
            for move in moves:
                now = float(ask_remote(sim.remote_address, "t", timeout_ms=2000))
                assert ask_remote(sim.remote_address, f"T {now + move!r}", timeout_ms=2000) == "Timesync successful."
                time.sleep(0.1)
            _wait_for(lambda: session.counters.restarts >= 1, 2.0)
            assert session.counters.restarts == restarts
            assert _wait_for(lambda: session.newest_gaze is not None and session.counters.received > 0, 2.0)
        finally:
            relay.stop()
            runner.join(5)


class _ChunkTimes(CollectingSink):
    """The chunks, each with the monotonic time it reached the sink."""

    def __init__(self) -> None:
        super().__init__()
        self.at: list[float] = []

    def publish(self, release) -> None:
        super().publish(release)
        self.at.append(time.monotonic())


def test_T_far_ahead_is_a_new_segment_at_its_gaze_and_no_chunk_for_each_deadline_skipped():
    """``T`` + 100,000 s while chunks are due: the gaze on the new clock leaps past a chunk's
    deadline, the session asks the relay, the relay reads ``t`` and says the clock was set. One
    restart, one status line; before, 50,000 chunks of 2 s went out at once (ε 10 each)."""
    rec = generate(duration=30.0, seed=3).recording
    config = SessionConfig(chunk_length=4, window=2.0, step=0.5)
    sink = _ChunkTimes()
    session = Session(config, sinks=[sink], seed=1, source="Capture")
    with CaptureSimulator(rec, speed=1.0) as sim:
        relay = Relay(session, remote=sim.remote_address, timeout=0.5)  # reads t every 1 s: it runs at real time
        runner = threading.Thread(target=relay.run, daemon=True)
        runner.start()
        try:
            assert _wait_for(lambda: len(sink.releases) >= 2, 20.0)
            now = float(ask_remote(sim.remote_address, "t", timeout_ms=2000))
            assert ask_remote(sim.remote_address, f"T {now + 1e5!r}", timeout_ms=2000) == "Timesync successful."
            new_segment = lambda: any(r.t[0] > now + 1e5 for r in sink.releases)  # noqa: E731
            assert _wait_for(new_segment, 20.0), (session.counters, len(sink.releases))
        finally:
            relay.stop()
            runner.join(5)
    assert session.counters.restarts == 1
    assert len(sink.releases) < 30.0 / (config.chunk_length * config.step) + 2  # one a chunk span of gaze at most
    gaps = np.diff(sink.at)  # no burst: chunks 2 s apart, but the one computed in its hold, sent at the restart
    assert np.count_nonzero(gaps < 0.5) <= 1, (gaps, [float(r.t[0]) for r in sink.releases])
