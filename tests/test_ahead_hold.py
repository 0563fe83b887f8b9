"""Live gaze far ahead of the stream's clock waits for the next datum (streamdp/stages/ahead.py):
a lone datum is dropped, a jump the next datum confirms goes through, and the decision never
depends on how the stream was split into batches."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.gaze import GazeColumns
from streamdp.stages.ahead import CLOCK_JUMP, AheadHold
from streamdp.stages.reorder import ReorderBuffer


def _cols(t: list[float]) -> GazeColumns:
    n = len(t)
    return GazeColumns.from_arrays(
        t=t, x=[0.5] * n, y=[0.5] * n, confidence=[1.0] * n, diameter_mm=[3.0] * n, diameter_px=[30.0] * n,
        eye_id=[2] * n, valid=[True] * n,
    )  # fmt: skip


def _run(batches: list[list[float]], *, end: bool = False) -> tuple[list[float], int, float]:
    hold = AheadHold()
    accepted = [t for b in batches for t in hold.update(_cols(b)).t.tolist()]
    if end:
        hold.flush()
    return accepted, hold.dropped, hold.clock


STREAM = [10.0, 10.005, 10.01]
CASES = [  # (batches, accepted, dropped, clock after)
    pytest.param([STREAM], STREAM, 0, 10.01, id="continuous"),
    pytest.param([[10.0, 10.5, 11.0, 11.5, 12.0, 12.5]], [10.0, 10.5, 11.0, 11.5, 12.0, 12.5], 0, 12.5,
                 id="continuous-over-seconds-in-one-batch"),
    pytest.param([STREAM, [110.0], [10.015]], [*STREAM, 10.015], 1, 10.015, id="stray-refuted"),
    pytest.param([[*STREAM, 110.0, 10.015]], [*STREAM, 10.015], 1, 10.015, id="stray-refuted-in-one-batch"),
    pytest.param([STREAM, [1e5 + 10.0], [10.015]], [*STREAM, 10.015], 1, 10.015, id="stray-1e5-s-ahead"),
    pytest.param([STREAM, [110.0], [110.005]], [*STREAM, 110.0, 110.005], 0, 110.005, id="pause-confirmed"),
    pytest.param([[*STREAM, 110.0, 110.005]], [*STREAM, 110.0, 110.005], 0, 110.005, id="pause-confirmed-in-one-batch"),
    pytest.param([STREAM, [110.0, 110.005]], [*STREAM, 110.0, 110.005], 0, 110.005, id="two-agreeing-in-a-row"),
    pytest.param([STREAM, [110.0], [9.95], [110.005]], [*STREAM, 9.95], 1, 10.01, id="late-gaze-between-refutes"),
    pytest.param([STREAM, [110.0], [210.0], [10.02]], [*STREAM, 10.02], 2, 10.02, id="two-strays-disagree"),
    pytest.param([STREAM, [110.0], [210.0], [210.005]], [*STREAM, 210.0, 210.005], 1, 210.005,
                 id="a-stray-then-a-pause"),
    pytest.param([STREAM, [11.0]], [*STREAM, 11.0], 0, 11.0, id="within-the-threshold"),
    pytest.param([STREAM, [11.5], [10.6]], [*STREAM, 10.6], 1, 10.6, id="near-both-clocks-is-no-confirmation"),
    pytest.param([STREAM, [5.0]], [*STREAM, 5.0], 0, 10.01, id="a-clock-going-back-passes-on"),
]  # fmt: skip


@pytest.mark.parametrize(("batches", "accepted", "dropped", "clock"), CASES)
def test_a_datum_far_ahead_waits_for_the_next(batches, accepted, dropped, clock):
    got, n, c = _run(batches)
    assert sorted(got) == sorted(accepted) and (n, c) == (dropped, clock)
    # one datum at a time, or all at once: the same decisions
    flat = [[t] for b in batches for t in b]
    assert sorted(_run(flat)[0]) == sorted(got) and _run(flat)[1:] == (n, c)
    assert sorted(_run([[t for b in batches for t in b]])[0]) == sorted(got)


@pytest.mark.parametrize(
    ("batches", "dropped"),
    [
        pytest.param([STREAM, [110.0]], 1, id="lone-datum-at-the-end"),
        pytest.param([[*STREAM, 110.0]], 1, id="lone-datum-at-the-end-of-a-batch"),
        pytest.param([STREAM], 0, id="nothing-held"),
    ],
)
def test_what_is_still_held_at_the_end_of_the_stream_is_dropped(batches, dropped):
    hold = AheadHold()
    accepted = [t for b in batches for t in hold.update(_cols(b)).t.tolist()]
    assert accepted == STREAM and hold.flush() == dropped and hold.take_dropped() == dropped
    assert hold.clock == -np.inf and hold.update(_cols([500.0])).t.tolist() == [500.0]  # a new stream


def test_a_shells_clock_moves_the_threshold():
    hold = AheadHold()
    hold.update(_cols(STREAM))
    hold.advance(109.5)  # the timer ran through a pause: the first datum after it is no jump
    assert hold.update(_cols([110.0])).t.tolist() == [110.0] and hold.dropped == 0


def test_the_threshold_is_the_restart_threshold():
    assert AheadHold().ahead == ReorderBuffer().restart_after == CLOCK_JUMP
    with pytest.raises(ValueError, match="ahead"):
        AheadHold(ahead=0.0)


def test_gaze_going_on_at_the_old_time_refutes_a_datum_ahead_of_a_shells_clock():
    """The timer's clock sets the threshold; only gaze past the newest gaze, not past the timer,
    says the stream went on at the old time."""
    hold = AheadHold()
    hold.update(_cols(STREAM))
    hold.advance(10.5)
    assert hold.update(_cols([12.0])).t.tolist() == []
    assert hold.update(_cols([10.2, 12.01])).t.tolist() == [10.2] and hold.dropped == 1  # 12.0 was refuted
    assert hold.flush() == 1  # and 12.01 waits in its place, until the end
