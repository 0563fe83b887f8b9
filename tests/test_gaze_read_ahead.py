"""The gaze channel reads each burst ahead of the paced stages (#38): a live session with the
relay's pacing, whose decoded gaze waits for the stages while the channel reads it, publishes
the very ticks, bit for bit and at the same source times, that one without pacing does (every
burst through the whole input path), with a lagging eye's late gaze and with a clock that goes back."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.live_pacing import FeedPacing
from streamdp.synthetic import generate

from .gaze_channel_driver import bursts_of, drive

CONFIG = SessionConfig(chunk_length=32, seed=0, gaze_channel=True)


def _both(bursts):
    """The ticks of a session without pacing, of one with the relay's, and how many bursts the
    latter's channel read ahead of its stages."""
    until = bursts[-1][0] + 1.0
    read = [0]

    def paced(session) -> None:
        session.pacing = FeedPacing()
        read_ahead = session._read_ahead

        def counted() -> bool:
            took = read_ahead()
            read[0] += took
            return took

        session._read_ahead = counted

    return drive(bursts, CONFIG, until=until), drive(bursts, CONFIG, until=until, patch=paced), read[0]


@pytest.mark.parametrize("eye_lag", [0.0, 1.2])
def test_ticks_read_ahead_of_the_paced_stages_are_those_of_every_burst_through_the_input(eye_lag):
    bursts = bursts_of(generate(duration=25.0, rate=200.0, seed=11).recording, eye_lag=eye_lag, seed=2)
    every, paced, read = _both(bursts)
    assert read > len(bursts) // 2  # most bursts: read by the channel alone, the stages paced
    assert len(every.messages) > 60 * 20 and paced.messages == every.messages
    assert np.array_equal(paced.at, every.at) and np.array_equal(paced.t, every.t)
    assert paced.session.counters.late == every.session.counters.late


def test_a_clock_that_goes_back_gives_the_same_ticks_paced_or_not():
    a = bursts_of(generate(duration=12.0, rate=200.0, seed=4).recording, seed=1)
    b = bursts_of(generate(duration=12.0, rate=200.0, seed=5).recording, seed=1)
    later = a[-1][0] + 0.05 - b[0][0]  # b's gaze starts its clock at 0 again, right after a's
    every, paced, read = _both(a + [(at + later, burst) for at, burst in b])
    assert read and paced.session.counters.restarts == every.session.counters.restarts == 1
    assert paced.messages == every.messages and np.array_equal(paced.at, every.at)
