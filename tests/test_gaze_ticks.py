"""GazeTicks (issue #20): one gaze position per public tick. The grid, its independence from the
gaze, the closing rule, the reach of one sample (exactly one tick, bit for bit) and the checks of
the parameters. Batch-split invariance, flush and reset are in tests/test_stage_contract.py."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdp.errors import TimestampOrderError
from streamdp.gaze import GazeBatch, GazeColumns
from streamdp.kernels.geometry import CAMERA_FOV_DEG, norm_to_degrees
from streamdp.stages.gaze_ticks import DEFAULT_TICK_RATE, GazeTicks, Ticks
from streamdp.synthetic import generate

FOV = CAMERA_FOV_DEG["pupil_core_720p"]
SYN = generate(duration=8.0, rate=200.0, seed=5, person=3, start_time=1234.5678).recording.gaze


def run(gaze: GazeBatch, cuts: list[int] | None = None, **kwargs: object) -> Ticks:
    stage = GazeTicks(**kwargs)  # type: ignore[arg-type]
    parts = gaze.split(cuts) if cuts else [gaze]
    return Ticks.concat([*(stage.update(p) for p in parts), stage.flush()])


def grid_index(t: np.ndarray, rate: float) -> np.ndarray:
    k = np.rint(t * rate).astype(np.int64)
    assert np.array_equal(t, k / rate), "tick times are not k / rate"
    return k


def lo(k, rate):
    """Where tick ``k``'s interval starts (exclusive): half a tick before it, as the stage computes it."""
    return (2.0 * k - 1.0) / (2.0 * rate)


def hi(k, rate):
    """Where tick ``k``'s interval ends (inclusive): half a tick after it."""
    return (2.0 * k + 1.0) / (2.0 * rate)


def with_rows(gaze: GazeBatch, keep: np.ndarray) -> GazeBatch:
    idx = np.flatnonzero(keep)
    return GazeBatch.from_arrays(
        t=gaze.t[idx], x=gaze.x[idx], y=gaze.y[idx], confidence=gaze.confidence[idx], valid=gaze.valid[idx]
    )


# ----------------------------------------------------------------------------- the grid


@pytest.mark.parametrize("rate", [DEFAULT_TICK_RATE, 30.0, 120.0, 7.3, 1000.0])
def test_ticks_lie_on_multiples_of_one_over_rate_from_the_first_samples_tick(rate):
    ticks = run(SYN, rate=rate)
    k = grid_index(ticks.t, rate)
    assert np.all(np.diff(k) == 1)
    first, last = SYN.t[0], SYN.t[-1]
    assert lo(k[0], rate) < first <= hi(k[0], rate)  # the first tick holds the first sample
    assert lo(k[-1], rate) < last <= hi(k[-1], rate)  # flush ends with the last sample's tick
    assert ticks.deg.shape == (len(ticks), 2) and ticks.has_gaze.dtype == bool


def test_tick_of_is_exact_on_the_grid_even_at_unix_times():
    stage = GazeTicks(rate=60.0)
    k = np.arange(102_000_000_000, 102_000_000_200, dtype=np.int64)  # UTC seconds x 60 (Neon)
    end = hi(k, 60.0)
    assert np.array_equal(stage.tick_of(end), k)
    assert np.array_equal(stage.tick_of(np.nextafter(end, np.inf)), k + 1)
    assert np.array_equal(stage.tick_of(np.nextafter(end, -np.inf)), k)
    assert np.array_equal(stage.tick_of(k / 60.0), k)  # a tick's own time is inside it


@settings(max_examples=200, deadline=None)
@given(t=st.floats(-1e9, 2e9, allow_nan=False), rate=st.floats(0.5, 2000.0))
def test_tick_of_finds_the_interval_holding_a_time(t, rate):
    k = int(GazeTicks(rate=rate).tick_of(np.array([t]))[0])
    assert lo(k, rate) < t <= hi(k, rate)


@settings(max_examples=300, deadline=None)
@given(t=st.floats(-1e9, 2e9, allow_nan=False), rate=st.floats(0.5, 2000.0), nudge=st.sampled_from([-1, 0, 1]))
def test_tick_at_a_time_is_tick_of_it(t, rate, nudge):
    """The scalar path (the clock, the grid's start) and the array path agree bit for bit, on the
    interval ends above all."""
    stage = GazeTicks(rate=rate)
    k = int(stage.tick_of(np.array([t]))[0])
    for u in (t, hi(k, rate), lo(k, rate)):
        u = float(np.nextafter(u, np.inf * nudge)) if nudge else u
        assert stage.tick_at(u) == int(stage.tick_of(np.array([u]))[0])


def test_samples_converted_from_columns_give_the_ticks_of_the_validated_batch():
    gaze = SYN.slice(0, 600)
    checked, light = GazeTicks(rate=60.0), GazeTicks(rate=60.0)
    cols = GazeColumns.from_batch(gaze)
    # converted burst by burst, as the live channel converts them: the same bits as the batch's
    bursts = [light.convert(cols.take(slice(i, i + 7)), "cols") for i in range(0, 600, 7)]
    a = Ticks.concat([checked.update(gaze), checked.flush()])
    b = Ticks.concat([light.update(burst) for burst in bursts] + [light.flush()])
    assert np.array_equal(a.t, b.t) and np.array_equal(a.deg, b.deg) and np.array_equal(a.has_gaze, b.has_gaze)


def test_samples_converted_refuse_times_not_finite_and_drop_unknown_positions():
    one = np.ones(3)

    def cols(t, x=one * 0.5):
        return GazeColumns.from_arrays(t=t, x=x, y=one * 0.5, confidence=one, diameter_mm=one, diameter_px=one,
                                       eye_id=[0] * 3, valid=[True] * 3)  # fmt: skip

    ticks = GazeTicks(rate=10.0)
    for t in ([0.0, np.nan, 0.02], [np.inf, 1.0, 2.0], [0.0, 0.01, np.inf]):
        with pytest.raises(TimestampOrderError, match="cols: the gaze channel's samples are not finite times"):
            ticks.convert(cols(t), "cols")
    samples = ticks.convert(cols([0.0, 0.01, 0.02], np.array([0.5, np.nan, 0.5])), "c")
    assert samples.use.tolist() == [True, False, True]  # a position that is not finite takes no part
    assert np.isfinite(Ticks.concat([ticks.update(samples), ticks.flush()]).deg).all()
    # nor one beyond the plausibility bounds (10 scene widths: the real Capture's binocular mapper
    # with an eye lagging), as the replay of the recording leaves it out; at the bound it is gaze
    for x, use in ((10.5, True), (np.nextafter(10.5, 11.0), False), (-9.5, True), (-9.6, False), (-np.inf, False)):
        assert ticks.convert(cols([0.0, 0.01, 0.02], np.array([0.5, x, 0.5])), "c").use.tolist() == [True, use, True]


def test_the_ticks_between_two_times_do_not_depend_on_the_gaze():
    """Same first and last sample: fixation, the synthetic gaze, blinks, lost tracking or a gap
    in the middle give the same tick times."""
    n = len(SYN)
    fixation = dataclasses.replace(SYN, x=np.full(n, 0.3), y=np.full(n, 0.6))
    blinks = dataclasses.replace(SYN, valid=SYN.valid & (np.arange(n) // 60 % 3 != 0))
    low = dataclasses.replace(SYN, confidence=np.where(np.arange(n) % 7 == 0, 0.1, SYN.confidence))
    nothing = dataclasses.replace(SYN, valid=np.zeros(n, dtype=bool))
    gap = with_rows(SYN, (SYN.t < SYN.t[0] + 2.0) | (SYN.t > SYN.t[0] + 5.3))
    sparse = with_rows(SYN, np.isin(np.arange(n), [0, n // 2, n - 1]))
    times = [run(g).t for g in (SYN, fixation, blinks, low, nothing, gap, sparse)]
    for t in times[1:]:
        assert np.array_equal(t, times[0])
    assert not run(nothing).has_gaze.any() and not run(nothing).deg.any()


def test_a_gap_gives_centre_ticks_without_gaze():
    start = SYN.t[0]
    gap = with_rows(SYN, (SYN.t < start + 2.0) | (SYN.t > start + 5.3))
    ticks = run(gap)
    inside = (ticks.t > start + 2.0 + 1 / 60) & (ticks.t < start + 5.3 - 1 / 120)
    assert inside.sum() == pytest.approx(3.3 * 60, abs=2)
    assert not ticks.has_gaze[inside].any()
    assert np.all(ticks.deg[inside] == 0.0)
    assert ticks.has_gaze[~inside].mean() > 0.8  # the synthetic person blinks now and then


@pytest.mark.parametrize("rate", [30.0, 60.0, 120.0])
@pytest.mark.parametrize("start", [0.0, 1234.5, 1.7e6])
@pytest.mark.parametrize("written", ["exact", "ms", "jitter"])
def test_a_source_on_the_tick_grid_fills_every_tick(rate, start, written):
    """Samples at the tick rate with timestamps on the grid itself (a resampled recording), as a
    writer gives them: exact floats, rounded to the millisecond (a CSV), or with ±2 ms of camera
    jitter. One sample in every tick, none empty: with intervals ending on the grid, a third of
    the ticks at 30 Hz had none (two samples in one tick, none in the next)."""
    n = int(rate * 20)
    t = start + np.arange(n) / rate
    if written == "ms":
        t = np.round(t, 3)
    elif written == "jitter":
        t = t + np.random.default_rng(0).uniform(-0.002, 0.002, n)
    ticks = run(GazeBatch.from_arrays(t=t, x=np.full(n, 0.3), y=np.full(n, 0.6)), rate=rate)
    assert len(ticks) == n and ticks.has_gaze.all()


# ----------------------------------------------------------------------------- clock jumps (live)


def test_a_jump_ahead_starts_the_grid_anew_without_covering_the_interval():
    stage = GazeTicks(rate=10.0, jump=1.0)
    g = lambda *t: GazeBatch.from_arrays(t=list(t), x=[0.5] * len(t), y=[0.5] * len(t))  # noqa: E731
    out = [stage.update(g(0.1, 0.2, 0.3)), stage.update(g(12.0, 12.1, 12.2))]  # T +12 s
    out.append(stage.advance(12.4))
    t = Ticks.concat(out).t
    assert t.tolist() == [0.1, 0.2, 0.3, 12.0, 12.1, 12.2, 12.3]  # the old stream's last tick closed
    assert np.all(np.diff(t) > 0)
    # the timer's clock jumping alone: no burst either
    assert stage.advance(100.0).t.tolist() == [12.4]
    assert stage.advance(100.2).t.tolist() == [100.0, 100.1]
    # within one batch, too, and a gap within the threshold is covered
    other = GazeTicks(rate=10.0, jump=1.0)
    got = Ticks.concat([other.update(g(0.1, 0.9, 50.0, 50.1)), other.flush()]).t.tolist()
    assert got == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 50.0, 50.1]


def test_without_jump_a_gap_is_covered_whatever_its_length():
    stage = GazeTicks(rate=10.0)
    g = lambda *t: GazeBatch.from_arrays(t=list(t), x=[0.5] * len(t), y=[0.5] * len(t))  # noqa: E731
    assert len(Ticks.concat([stage.update(g(0.1, 12.0)), stage.flush()])) == 120


def test_a_new_stream_near_the_last_tick_continues_after_it_and_one_far_back_is_a_new_segment():
    g = lambda *t: GazeBatch.from_arrays(t=list(t), x=[0.5] * len(t), y=[0.5] * len(t))  # noqa: E731
    stage = GazeTicks(rate=10.0, jump=1.0)
    first = Ticks.concat([stage.update(g(0.1, 0.2, 0.31)), stage.flush()]).t.tolist()
    assert first == [0.1, 0.2, 0.3]
    stage.restart()  # a restart whose gaze comes back on the same clock, a little earlier
    again = Ticks.concat([stage.update(g(0.22, 0.3, 0.41, 0.5)), stage.flush()])
    assert again.t.tolist() == [0.4, 0.5]  # no tick repeats; the samples before are late
    assert stage.late == 2
    stage.restart()
    back = Ticks.concat([stage.update(g(-100.0, -99.9)), stage.flush()]).t.tolist()
    assert back == [-100.0, -99.9]  # T back: the new clock's segment
    stage.reset()  # a fresh stage forgets where the ticks stopped
    assert Ticks.concat([stage.update(g(-100.0)), stage.flush()]).t.tolist() == [-100.0]


# ----------------------------------------------------------------------------- values


def reference(gaze: GazeBatch, rate: float, min_confidence: float = 0.6) -> Ticks:
    """Tick by tick, each tick's samples picked into an array of their own and summed there
    (the same summation as the stage: ``np.add.reduceat`` from 0; ``np.add.reduce`` may add in
    another order) and divided by their count."""
    stage = GazeTicks(rate=rate)
    k = stage.tick_of(gaze.t)
    ks = np.arange(k[0], k[-1] + 1)
    deg = np.zeros((len(ks), 2))
    has = np.zeros(len(ks), dtype=bool)
    use = gaze.valid & (gaze.confidence >= min_confidence)
    ax, ay = norm_to_degrees(gaze.x, gaze.y, FOV)
    for i, kk in enumerate(ks):
        mine = use & (k == kk)
        if mine.any():
            own = np.stack([ax[mine], ay[mine]])
            deg[i] = np.add.reduceat(own, [0], axis=1)[:, 0] / mine.sum()
            has[i] = True
    return Ticks(ks / rate, deg, has)


@pytest.mark.parametrize("rate", [60.0, 13.0])
def test_a_tick_is_the_mean_in_degrees_of_its_usable_samples(rate):
    gaze = SYN.slice(0, 500)
    got, want = run(gaze, rate=rate), reference(gaze, rate)
    assert np.array_equal(got.t, want.t)
    assert np.array_equal(got.has_gaze, want.has_gaze)
    assert np.array_equal(got.deg, want.deg)
    for i in np.flatnonzero(got.has_gaze)[:50]:  # and it is the mean
        k = np.rint(got.t[i] * rate)
        mine = (lo(k, rate) < gaze.t) & (gaze.t <= hi(k, rate)) & gaze.valid & (gaze.confidence >= 0.6)
        assert got.deg[i] == pytest.approx(np.mean(norm_to_degrees(gaze.x[mine], gaze.y[mine], FOV), axis=1))


def test_low_confidence_and_invalid_samples_take_no_part():
    t = [0.006, 0.012, 0.016, 0.021, 0.026]
    gaze = GazeBatch.from_arrays(
        t=t, x=[0.5, 0.9, 0.5, 0.1, 0.5], y=[0.5] * 5, confidence=[1.0, 0.59, 1.0, 1.0, 0.2], valid=[1, 1, 1, 0, 1]
    )
    ticks = run(gaze, rate=100.0)  # ticks 0.01 (samples 0, 1), 0.02 (2, 3), 0.03 (4)
    assert ticks.t.tolist() == [0.01, 0.02, 0.03]
    assert ticks.deg.tolist() == [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    assert ticks.has_gaze.tolist() == [True, True, False]
    assert run(gaze, rate=100.0, min_confidence=0.5).deg[0, 0] > 10.0  # 0.59 counts at 0.5


# ----------------------------------------------------------------------------- reach


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_sample_nudged_changes_exactly_its_tick_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    usable = np.flatnonzero(SYN.valid & (SYN.confidence >= 0.6))
    cuts = sorted(rng.integers(0, len(SYN), 12).tolist())
    before = run(SYN)
    stage = GazeTicks()
    for i in rng.choice(usable, 8, replace=False):
        x = SYN.x.copy()
        x[i] = np.nextafter(x[i], np.inf) + rng.normal(0.0, 1e-3)
        after = run(dataclasses.replace(SYN, x=x), cuts)  # another batching, too
        assert np.array_equal(after.t, before.t) and np.array_equal(after.has_gaze, before.has_gaze)
        changed = np.flatnonzero(np.any(after.deg != before.deg, axis=1))
        assert changed.tolist() == [int(np.searchsorted(before.t, stage.tick_of(SYN.t[i : i + 1])[0] / 60.0))]
        assert np.array_equal(after.deg[changed, 1], before.deg[changed, 1])


def test_one_sample_lost_changes_at_most_its_tick():
    i = int(np.flatnonzero(SYN.valid & (SYN.confidence >= 0.6))[len(SYN) // 3])
    before = run(SYN)
    after = run(dataclasses.replace(SYN, valid=np.arange(len(SYN)) != i))
    changed = np.flatnonzero(np.any(after.deg != before.deg, axis=1) | (after.has_gaze != before.has_gaze))
    k = np.rint(before.t[changed[0]] * 60.0)
    assert len(changed) == 1 and lo(k, 60.0) < SYN.t[i] <= hi(k, 60.0)


# ----------------------------------------------------------------------------- closing


def test_a_tick_at_the_newest_sample_stays_open_until_the_clock_passes_it():
    one = lambda t, x: GazeBatch.from_arrays(t=[t], x=[x], y=[0.5])  # noqa: E731
    stage = GazeTicks(rate=10.0)
    end = hi(1, 10.0)  # tick 1 (0.1) ends at 0.15
    assert stage.update(one(0.1, 0.5)).t.tolist() == []
    assert stage.update(one(end, 0.5)).t.tolist() == []  # a sample at its end may follow
    assert stage.update(one(end, 0.7)).t.tolist() == []
    assert stage.advance(end).t.tolist() == []  # advance(t): no sample at or before t remains...
    out = stage.advance(float(np.nextafter(end, 1.0)))  # ...but the end itself is not past
    assert out.t.tolist() == [0.1] and out.deg[0, 0] > 0.0  # both samples at the end are in
    assert stage.flush().t.tolist() == []


def test_flush_closes_the_last_samples_tick_once():
    stage = GazeTicks(rate=10.0)
    assert stage.update(GazeBatch.from_arrays(t=[0.07, 0.18], x=[0.5, 0.5], y=[0.5, 0.5])).t.tolist() == [0.1]
    assert stage.flush().t.tolist() == [0.2]
    assert len(stage.flush()) == 0 and len(stage.advance(5.0)) == 0  # no stream: no grid


def test_advance_emits_centre_ticks_and_any_interleaving_gives_the_same_ticks():
    rng = np.random.default_rng(4)
    gaze = with_rows(SYN, (SYN.t < SYN.t[0] + 2.0) | (SYN.t > SYN.t[0] + 5.3))
    cuts = sorted(rng.integers(1, len(gaze), 20).tolist())
    stage = GazeTicks()
    out = []
    for part in gaze.split(cuts):
        if len(part):  # the live clock may reach the next sample's time before it arrives
            out.append(stage.advance(float(part.t[0]) - rng.uniform(0.0, 0.05)))
            out.append(stage.advance(float(part.t[0])))
        out.append(stage.update(part))
    got = Ticks.concat([*out, stage.flush()])
    want = run(gaze)
    assert np.array_equal(got.t, want.t) and np.array_equal(got.deg, want.deg)
    assert np.array_equal(got.has_gaze, want.has_gaze) and stage.late == 0
    # the clock moving alone: ticks at the centre, without gaze
    stage.update(gaze.slice(0, 10))
    live = stage.advance(float(gaze.t[9]) + 1.0)
    assert len(live) >= 59 and not live.has_gaze[1:].any() and not live.deg[1:].any()


def test_samples_in_ticks_advance_closed_are_dropped_and_counted():
    stage = GazeTicks(rate=10.0)
    stage.update(GazeBatch.from_arrays(t=[0.1], x=[0.5], y=[0.5]))
    assert stage.advance(0.3).t.tolist() == [0.1, 0.2]
    out = stage.update(GazeBatch.from_arrays(t=[0.2, 0.25, 0.26, 0.36], x=[0.9] * 4, y=[0.5] * 4))
    assert stage.late == 2 and out.t.tolist() == [0.3] and out.has_gaze.tolist() == [True]
    stage.flush()
    assert stage.late == 2
    stage.reset()
    assert stage.late == 0


def test_a_batch_going_back_in_time_is_rejected_whole():
    stage = GazeTicks(rate=10.0)
    stage.update(GazeBatch.from_arrays(t=[0.05, 0.3], x=[0.5, 0.5], y=[0.5, 0.5]))
    with pytest.raises(TimestampOrderError, match="backwards"):
        stage.update(GazeBatch.from_arrays(t=[0.29, 0.5], x=[0.5, 0.5], y=[0.5, 0.5]))
    assert stage.flush().t.tolist() == [0.3]  # the rejected batch left nothing behind


# ----------------------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        pytest.param({"rate": "60"}, TypeError, "rate", id="rate-str"),
        pytest.param({"rate": True}, TypeError, "rate", id="rate-bool"),
        pytest.param({"rate": None}, TypeError, "rate", id="rate-none"),
        pytest.param({"rate": 0.0}, ValueError, "rate", id="rate-zero"),
        pytest.param({"rate": -60.0}, ValueError, "rate", id="rate-negative"),
        pytest.param({"rate": float("inf")}, ValueError, "rate", id="rate-inf"),
        pytest.param({"rate": float("nan")}, ValueError, "rate", id="rate-nan"),
        pytest.param({"fov_deg": 99.0}, TypeError, "fov_deg", id="fov-scalar"),
        pytest.param({"fov_deg": (99.0,)}, TypeError, "fov_deg", id="fov-one"),
        pytest.param({"fov_deg": (99.0, 53.0, 1.0)}, TypeError, "fov_deg", id="fov-three"),
        pytest.param({"fov_deg": ("99", 53.0)}, TypeError, "fov_deg", id="fov-str"),
        pytest.param({"fov_deg": (0.0, 53.0)}, ValueError, "fov_deg", id="fov-zero"),
        pytest.param({"fov_deg": (99.0, 180.0)}, ValueError, "fov_deg", id="fov-180"),
        pytest.param({"fov_deg": (float("nan"), 53.0)}, ValueError, "fov_deg", id="fov-nan"),
        pytest.param({"min_confidence": "0.6"}, TypeError, "min_confidence", id="conf-str"),
        pytest.param({"min_confidence": None}, TypeError, "min_confidence", id="conf-none"),
        pytest.param({"min_confidence": -0.1}, ValueError, "min_confidence", id="conf-negative"),
        pytest.param({"min_confidence": 1.5}, ValueError, "min_confidence", id="conf-above-one"),
        pytest.param({"min_confidence": float("nan")}, ValueError, "min_confidence", id="conf-nan"),
        pytest.param({"jump": "1"}, TypeError, "jump", id="jump-str"),
        pytest.param({"jump": 0.0}, ValueError, "jump", id="jump-zero"),
        pytest.param({"jump": float("inf")}, ValueError, "jump", id="jump-inf"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs, error, name):
    with pytest.raises(error, match=name):
        GazeTicks(**kwargs)


def test_parameters_are_keyword_only_and_defaults_follow_the_project():
    with pytest.raises(TypeError):
        GazeTicks(60.0)  # type: ignore[misc]
    stage = GazeTicks()
    assert (stage.rate, stage.fov_deg, stage.min_confidence) == (60.0, FOV, 0.6)
    assert GazeTicks(rate=30, fov_deg=[82, 82]).fov_deg == (82.0, 82.0)


@pytest.mark.parametrize(("clock", "error"), [("1.0", TypeError), (None, TypeError), (float("nan"), ValueError)])
def test_advance_refuses_a_bad_clock(clock, error):
    with pytest.raises(error, match="clock"):
        GazeTicks().advance(clock)
