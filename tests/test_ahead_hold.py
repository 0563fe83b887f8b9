"""Live gaze far ahead of the stream's clock, or far back, waits for the next datum
(streamdp/stages/ahead.py): a lone datum is dropped, a jump the next datum confirms goes through
(back: a restart), and the decision never depends on how the stream was split into batches."""

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
    pytest.param([STREAM, [5.0]], STREAM, 0, 10.01, id="a-clock-going-back-waits-too"),
    # the stream's first datum waits too: a stray there would start the clock in the future (or
    # the past) and the gaze after it would restart the session
    pytest.param([[110.0], STREAM], STREAM, 1, 10.01, id="stray-first-datum-ahead"),
    pytest.param([[1e5 + 10.0, *STREAM]], STREAM, 1, 10.01, id="stray-1e5-s-as-first-datum"),
    pytest.param([[-50.0], STREAM], STREAM, 1, 10.01, id="stray-first-datum-back"),
    pytest.param([[10.0], [10.005, 10.01]], STREAM, 0, 10.01, id="first-datum-confirmed-by-the-next-batch"),
    pytest.param([[10.0, 110.0, 10.005, 10.01]], STREAM, 1, 10.01, id="stray-second-datum"),
    pytest.param([[10.0, 110.0, -50.0, 10.005, 10.01]], [10.005, 10.01], 3, 10.01,
                 id="two-strays-after-the-first-datum-outwait-it"),
    pytest.param([[10.0, 10.005, 110.0, 10.01]], STREAM, 1, 10.01, id="stray-third-datum"),
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
    assert hold.clock == -np.inf and hold.update(_cols([500.0])).t.tolist() == []  # a new stream: its first datum
    assert hold.update(_cols([500.005])).t.tolist() == [500.0, 500.005]  # waits for the next near it
    assert hold.flush() == 0


def test_a_stream_of_one_datum_is_dropped():
    hold = AheadHold()
    assert hold.update(_cols([10.0])).t.tolist() == [] and hold.flush() == 1


def test_a_shells_timer_while_the_first_datum_waits_changes_nothing():
    hold = AheadHold()
    assert hold.update(_cols([10.0])).t.tolist() == []
    hold.advance(10.2)  # the timer moves the clock before two data agree
    assert hold.update(_cols([10.01, 10.02])).t.tolist() == [10.0, 10.01, 10.02] and hold.dropped == 0
    assert hold.clock == 10.2


def test_two_waiting_at_the_end_are_both_dropped():
    hold = AheadHold()
    assert hold.update(_cols([10.0, 110.0])).t.tolist() == [] and hold.flush() == 2


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


# -- back: a datum far behind the newest gaze waits too; confirmed, the source restarted


def _run_back(batches: list[list[float]], hold: AheadHold | None = None) -> tuple[list[float], int, int, float]:
    """What the hold accepted, dropped, how many restarts it confirmed, and its clock after."""
    hold = hold or AheadHold()
    accepted, restarts = [], 0
    for b in batches:
        accepted += hold.update(_cols(b)).t.tolist()
        restarts += hold.went_back is not None
    return accepted, hold.dropped, restarts, hold.clock


BACK = [  # (batches, accepted, dropped, restarts, clock after)
    pytest.param([STREAM, [5.0], [10.015]], [*STREAM, 10.015], 1, 0, 10.015, id="stray-refuted"),
    pytest.param([[*STREAM, 5.0, 10.015]], [*STREAM, 10.015], 1, 0, 10.015, id="stray-refuted-in-one-batch"),
    pytest.param([STREAM, [10.0 - 1e5], [10.015]], [*STREAM, 10.015], 1, 0, 10.015, id="stray-1e5-s-back"),
    pytest.param([STREAM, [0.0], [0.005]], [*STREAM, 0.0, 0.005], 0, 1, 0.005, id="restart-confirmed"),
    pytest.param([[*STREAM, 0.0, 0.005, 0.01]], [*STREAM, 0.0, 0.005, 0.01], 0, 1, 0.01,
                 id="restart-confirmed-in-one-batch"),
    pytest.param([STREAM, [-90.0, -89.995]], [*STREAM, -90.0, -89.995], 0, 1, -89.995, id="restart-100-s-back"),
    pytest.param([STREAM, [9.5]], [*STREAM, 9.5], 0, 0, 10.01, id="late-within-the-threshold"),
    pytest.param([STREAM, [8.9], [9.5]], [*STREAM, 9.5], 1, 0, 10.01, id="near-both-clocks-is-no-confirmation"),
    pytest.param([STREAM, [5.0], [3.0], [10.02]], [*STREAM, 10.02], 2, 0, 10.02, id="two-strays-disagree"),
    pytest.param([STREAM, [5.0], [110.0], [10.02]], [*STREAM, 10.02], 2, 0, 10.02, id="back-then-ahead"),
    pytest.param([STREAM, [110.0], [5.0], [10.02]], [*STREAM, 10.02], 2, 0, 10.02, id="ahead-then-back"),
    pytest.param([STREAM, [5.0], [0.0], [0.005]], [*STREAM, 0.0, 0.005], 1, 1, 0.005, id="a-stray-then-a-restart"),
    pytest.param([STREAM, [0.0, 0.005], [-50.0], [0.01]], [*STREAM, 0.0, 0.005, 0.01], 1, 1, 0.01,
                 id="a-restart-then-a-stray-on-the-new-clock"),
    pytest.param([STREAM, [0.0, 0.005], [10.02], [0.01]], [*STREAM, 0.0, 0.005, 0.01], 1, 1, 0.01,
                 id="the-old-time-once-after-a-restart"),
]  # fmt: skip


@pytest.mark.parametrize(("batches", "accepted", "dropped", "restarts", "clock"), BACK)
def test_a_datum_far_back_waits_for_the_next(batches, accepted, dropped, restarts, clock):
    got = _run_back(batches)
    assert got == (accepted, dropped, restarts, clock)  # arrival order: the new segment after the old
    # one datum at a time, or all at once: the same decisions
    assert _run_back([[t] for b in batches for t in b]) == got
    assert _run_back([[t for b in batches for t in b]])[:2] == got[:2]


def test_a_restart_starts_its_segment_where_the_held_datum_is():
    hold = AheadHold()
    assert hold.update(_cols([*STREAM, 10.015, 0.0])).t.tolist() == [*STREAM, 10.015] and hold.went_back is None
    assert hold.update(_cols([0.005, 0.01])).t.tolist() == [0.0, 0.005, 0.01] and hold.went_back == 0
    assert hold.update(_cols([0.015])).t.tolist() == [0.015] and hold.went_back is None
    assert hold.update(_cols([10.02, 10.03, -5.0, -4.99])).t.tolist() == [10.02, 10.03, -5.0, -4.99]
    assert hold.went_back == 2 and hold.dropped == 0  # a jump ahead (confirmed), then back


def test_gaze_late_by_the_reorder_window_is_no_jump_back():
    hold = AheadHold(window=0.1)
    assert hold.update(_cols([*STREAM, 8.95])).t.tolist() == [*STREAM, 8.95]  # 1.06 s: within 1 s + the window
    assert hold.update(_cols([8.9])).t.tolist() == [] and hold.update(_cols([10.02])).t.tolist() == [10.02]
    assert hold.dropped == 1


def test_a_shells_clock_makes_no_gaze_far_back():
    """The timer runs ahead of gaze read late (a stalled relay): the gaze is late, not a jump back."""
    hold = AheadHold()
    hold.update(_cols(STREAM))
    hold.advance(20.0)
    assert hold.update(_cols([10.02])).t.tolist() == [10.02] and hold.dropped == 0


def test_gaze_below_the_floor_is_back():
    """The floor given (the reorder buffer's: what it released, less a second) counts as well."""
    hold = AheadHold()
    hold.update(_cols(STREAM))
    assert hold.update(_cols([9.5]), floor=9.6).t.tolist() == []
    assert hold.update(_cols([9.505, 9.51]), floor=9.6).t.tolist() == [9.5, 9.505, 9.51] and hold.went_back == 0
    assert AheadHold().update(_cols(STREAM), floor=9.0).t.tolist() == STREAM  # the first datum starts the clock


@pytest.mark.parametrize("held", [0.0, 110.0], ids=["back", "ahead"])
def test_a_datum_held_when_the_source_restarts_waits_on(held):
    """A shell restarts the session (it saw the clock jump) while the new clock's first datum waits:
    the next datum near it confirms it, with no restart of its own; far from it, it is dropped."""
    hold = AheadHold()
    hold.update(_cols([*STREAM, held]))
    assert hold.restart() == 0 and hold.clock == -np.inf
    assert hold.update(_cols([held + 0.005])).t.tolist() == [held, held + 0.005]
    assert (hold.went_back, hold.dropped, hold.clock) == (None, 0, held + 0.005)
    hold = AheadHold()
    hold.update(_cols([*STREAM, held]))
    hold.restart()
    assert hold.update(_cols([50.0])).t.tolist() == [] and hold.dropped == 0  # no clock: which one is astray?
    assert hold.update(_cols([50.005])).t.tolist() == [50.0, 50.005] and (hold.went_back, hold.dropped) == (None, 1)
