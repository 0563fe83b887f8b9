"""Issue #20: the real-time gaze channel's schedule is public and one raw sample reaches one tick.

A live session (reorder window, Capture's bursts, the shell's deadline timer:
:mod:`tests.gaze_channel_driver`) is fed several gaze streams over the same span. Every tick
``t_k = k / rate`` goes out at source time ``t_k + tick_offset`` exactly (the end of its interval + the hold),
whatever the gaze did (fixations, saccades, blinks, a 2 s gap, monocular gaze up to 90 ms late,
arrivals shuffled). Then one raw sample is nudged, deleted or inserted on the wire (every other
message and arrival unchanged): the ticks given to the privatizer change in exactly the tick whose
interval holds the sample, for both mechanisms; the published bytes of geo-uniform (seeded) change
in exactly that tick too. Geo-bd's later decisions depend on its earlier outputs, so there the
published reach runs from that tick on (measured here: it never changes an earlier tick).
Broken variants (a tick published as computed, a tick without gaze skipped) are caught.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import msgpack
import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.gaze import Recording
from streamdp.stages.gaze_ticks import GazeTicks, Ticks
from streamdp.stages.hold import ReleaseHold
from streamdp.synthetic import generate

from .gaze_channel_driver import Burst, LiveRun, bursts_of, drive, edit_gaze, select

RATE = 60.0
# a tick reorder window wider than the default's 34 ms: the Capture-style bursts' monocular gaze,
# up to 90 ms late, is all waited for, so reach and batching are tested on all of the gaze (the
# default's window is tested in tests/test_fast_ticks.py)
CONFIG = SessionConfig(gaze_channel=True, seed=3, gaze_rate=RATE, reorder_window=0.1)
HOLD = CONFIG.tick_offset
START, SPAN, UNTIL = 1000.0, 6.0, 1008.0  # ticks go on after the gaze stops: 2 s of them


def _with_gaze(rec: Recording, **columns: Any) -> Recording:
    return dataclasses.replace(rec, gaze=dataclasses.replace(rec.gaze, **columns))


@pytest.fixture(scope="module")
def reading() -> Recording:
    rec = generate(duration=SPAN, rate=200.0, seed=1, start_time=START).recording
    assert rec.gaze.t[0] == START
    return rec


def _fixations(rec: Recording) -> Recording:
    """The same clock, gaze held still for 0.4 s at a time (jitter 0.0005)."""
    g, rng = rec.gaze, np.random.default_rng(2)
    where = rng.uniform(0.2, 0.8, (int(SPAN / 0.4) + 1, 2))[((g.t - START) / 0.4).astype(int)]
    jitter = rng.normal(0.0, 0.0005, (len(g), 2))
    ones = np.ones(len(g))
    return _with_gaze(rec, x=where[:, 0] + jitter[:, 0], y=where[:, 1] + jitter[:, 1], confidence=ones,
                      valid=np.ones(len(g), dtype=bool))  # fmt: skip


def _saccades(rec: Recording) -> Recording:
    """The same clock, a new position every 30 ms (faster than the ticks)."""
    g, rng = rec.gaze, np.random.default_rng(3)
    where = rng.uniform(0.0, 1.0, (int(SPAN / 0.03) + 1, 2))[((g.t - START) / 0.03).astype(int)]
    return _with_gaze(rec, x=where[:, 0], y=where[:, 1], confidence=np.ones(len(g)), valid=np.ones(len(g), dtype=bool))


def _blinks(rec: Recording) -> Recording:
    """Three blinks: no usable gaze (confidence 0) for 0.2–0.3 s each."""
    t, conf = rec.gaze.t, rec.gaze.confidence.copy()
    for a, b in ((1001.0, 1001.2), (1002.5, 1002.8), (1004.1, 1004.3)):
        conf[(t >= a) & (t < b)] = 0.0
    return _with_gaze(rec, confidence=conf)


def _gap(rec: Recording, a: float, b: float) -> Recording:
    return dataclasses.replace(rec, gaze=select(rec.gaze, (rec.gaze.t < a) | (rec.gaze.t >= b)))


def _shuffled(rec: Recording, late: float = 0.09) -> list[Burst]:
    """Each gaze datum sent on its own, up to ``late`` s after its timestamp, in arrival order."""
    rng = np.random.default_rng(4)
    out = []
    for _, burst in bursts_of(rec, monocular_share=0.0):
        for topic, payload in burst:
            t = msgpack.unpackb(payload, raw=False)["timestamp"]
            out.append((t + rng.uniform(0.0, late), [[topic, payload]]))
    return sorted(out, key=lambda b: b[0])


STREAMS = {
    "fixations": lambda rec: bursts_of(_fixations(rec)),
    "saccades": lambda rec: bursts_of(_saccades(rec)),
    "blinks": lambda rec: bursts_of(_blinks(rec)),
    "gap-2s": lambda rec: bursts_of(_gap(rec, 1002.0, 1004.0)),
    "all-monocular-late": lambda rec: bursts_of(rec, monocular_share=1.0, seed=5),
    "shuffled-90ms": _shuffled,
}
#: the reference's gaze, arriving otherwise
SAME_GAZE = {"all-monocular-late", "shuffled-90ms"}


@pytest.fixture(scope="module")
def reference(reading) -> LiveRun:
    return drive(bursts_of(reading), CONFIG, until=UNTIL)


def _on_the_schedule(run: LiveRun) -> None:
    """Every tick of the grid from the first sample's on, each out at its public time exactly."""
    k = np.rint(run.t * RATE)
    assert np.array_equal(run.t, k / RATE), "a tick off the 1/rate grid"
    assert np.array_equal(np.diff(k), np.ones(len(k) - 1)), "a tick missing or repeated"
    assert k[0] == GazeTicks(rate=RATE).tick_of(np.array([START]))[0]
    assert np.array_equal(run.at, run.t + HOLD), "a tick out before or after its public time"
    for a, b in ((1000.5, 1002.5), (1002.0, 1004.0), (1003.25, 1007.75)):  # on the grid
        assert np.count_nonzero((run.t > a) & (run.t <= b)) == round((b - a) * RATE)


def test_the_reference_run_keeps_the_schedule(reference):
    _on_the_schedule(reference)
    assert reference.t[-1] + HOLD <= UNTIL < reference.t[-1] + 1 / RATE + HOLD
    assert len(reference.t) == round((UNTIL - HOLD - START) * RATE) + 1  # ticks after the gaze, too


@pytest.mark.parametrize("name", list(STREAMS))
def test_release_times_never_depend_on_the_gaze(reading, reference, name):
    run = drive(STREAMS[name](reading), CONFIG, until=UNTIL)
    _on_the_schedule(run)
    assert np.array_equal(run.t, reference.t) and np.array_equal(run.at, reference.at)
    assert run.session.counters.late == 0  # nothing arrived later than the reorder window
    if name in SAME_GAZE:
        assert run.messages == reference.messages  # only the arrival differs: the bytes do not
    else:
        assert run.messages != reference.messages  # the gaze did differ


def test_gaze_that_stops_within_the_first_reorder_window_keeps_the_schedule(reading, reference):
    run = drive(bursts_of(_gap(reading, START + 0.05, START + 2.05)), CONFIG, until=UNTIL)
    assert np.array_equal(run.t, reference.t) and np.array_equal(run.at, reference.at)


# -- broken variants: the checks above catch them


def _published_as_computed(session) -> None:
    session.gaze._hold = ReleaseHold(0.0)  # a tick goes out when the ordered gaze passes it


def _skipping_ticks_without_gaze(session) -> None:
    release = session.gaze._release

    def skip(ticks: Ticks):
        h = ticks.has_gaze
        return release(Ticks(ticks.t[h], ticks.deg[h], h[h]))

    session.gaze._release = skip


@pytest.mark.parametrize("broken", [_published_as_computed, _skipping_ticks_without_gaze])
def test_a_schedule_that_depends_on_the_gaze_is_caught(reading, reference, broken):
    names = ("gap-2s", "blinks") if broken is _skipping_ticks_without_gaze else ("gap-2s", "shuffled-90ms")
    caught = []
    for name in names:
        try:
            run = drive(STREAMS[name](reading), CONFIG, until=UNTIL, patch=broken)
            _on_the_schedule(run)
            assert np.array_equal(run.t, reference.t) and np.array_equal(run.at, reference.at)
        except AssertionError as exc:
            caught.append(str(exc))
    assert len(caught) == len(names)


# -- one raw sample's reach, bit for bit

REACH_SPAN, REACH_UNTIL = 4.0, 1005.0


@pytest.fixture(scope="module")
def reach_stream():
    rec = generate(duration=REACH_SPAN, rate=200.0, seed=7, start_time=START).recording
    g = rec.gaze
    usable = np.flatnonzero(g.valid & (g.confidence >= CONFIG.min_confidence))
    # samples inside fixations and saccades, one 0.3 ms after a tick, one right at the start
    picks = [int(usable[j]) for j in (3, 150, 333, 512, 700)]
    picks.append(int(usable[np.argmin(np.abs(((g.t[usable] * RATE) % 1.0) - 0.02))]))
    return bursts_of(rec), g, sorted(set(picks))


def _edit(kind: str, t: float):
    def edit(d: dict) -> list[dict]:
        if d["timestamp"] != t:
            return [d]
        if kind == "nudge":
            return [{**d, "norm_pos": [d["norm_pos"][0] + 1e-6, d["norm_pos"][1]]}]
        if kind == "delete":
            return []
        return [d, {**d, "timestamp": t + 0.001, "norm_pos": [0.9, 0.1]}]  # inserted: a glance elsewhere

    return edit


def _in_published_ticks(run: LiveRun, g, count: int = 3) -> list[int]:
    """Usable samples in ticks where geo-bd published a new position (not its first tick)."""
    values = np.array([m["values"][0][:2] for m in run.decoded()])
    fresh = np.flatnonzero(np.any(values[1:] != values[:-1], axis=1)) + 1
    k = GazeTicks(rate=RATE).tick_of(g.t)
    usable = g.valid & (g.confidence >= CONFIG.min_confidence)
    out = [int(np.flatnonzero(usable & (k == round(run.t[j] * RATE)))[0]) for j in fresh[1 : count + 1]]
    assert len(out) == count
    return out


def _changed_ticks(a: Ticks, b: Ticks) -> list[int]:
    assert np.array_equal(a.t, b.t)
    return np.flatnonzero(np.any(a.deg != b.deg, axis=1)).tolist()


def _changed_messages(a: LiveRun, b: LiveRun) -> list[int]:
    assert np.array_equal(a.t, b.t) and np.array_equal(a.at, b.at)
    return [i for i, (p, q) in enumerate(zip(a.messages, b.messages, strict=True)) if p != q]


def _reach(run: LiveRun) -> int:
    """The published ticks one raw sample may change, as the ledger states it (0: any later)."""
    return int(run.decoded()[0]["ledger"]["raw_gaze_reach_ticks"])


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
@pytest.mark.parametrize(
    ("kind", "smoothing"), [("nudge", "none"), ("delete", "none"), ("insert", "none"), ("insert", "median9")]
)
def test_one_raw_sample_reaches_exactly_its_tick(reach_stream, mechanism, kind, smoothing):
    bursts, g, picks = reach_stream
    config = dataclasses.replace(CONFIG, gaze_mechanism=mechanism, gaze_smoothing=smoothing)
    ref = drive(bursts, config, until=REACH_UNTIL)
    stated = _reach(ref)
    ticks = GazeTicks(rate=RATE)
    reach: dict[str, list[int]] = {kind: []}
    if mechanism == "geo-bd":
        picks = [*picks, *_in_published_ticks(ref, g)]
    for i in picks:
        t = float(g.t[i])
        run = drive(edit_gaze(bursts, _edit(kind, t)), config, until=REACH_UNTIL)
        k = int(ticks.tick_of(np.array([t + (0.001 if kind == "insert" else 0.0)]))[0])
        own = int(np.flatnonzero(np.rint(ref.t * RATE) == k)[0])
        # the privatizer's input: exactly the tick whose interval holds the sample, bit for bit
        assert _changed_ticks(run.ticks, ref.ticks) == [own], (i, kind)
        changed = _changed_messages(run, ref)
        reach[kind].append(len(changed))
        if mechanism == "geo-uniform" and smoothing == "none":
            assert stated == 1 and changed == [own], (i, kind)  # the published bytes: that tick only
        elif mechanism == "geo-uniform":
            # the median of the last 9 outputs: that tick and the 8 after it, never another
            assert stated == 9 and set(changed) <= set(range(own, own + stated)), (i, kind, changed)
        else:
            # geo-bd: a tick that repeats the last output in both runs hides the change; a tick that
            # publishes moves the later decisions and the noise they draw: from that tick on,
            # never before it
            assert stated == 0 and (not changed or changed[0] >= own), (i, kind)
            assert smoothing != "none" or not changed or changed[0] == own, (i, kind)
    assert any(reach[kind]), "no edit changed anything published: the checks above could not fail"


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_one_second_of_samples_reaches_at_most_rate_plus_one_ticks(reach_stream, mechanism):
    bursts, g, _ = reach_stream
    config = dataclasses.replace(CONFIG, gaze_mechanism=mechanism)
    ref = drive(bursts, config, until=REACH_UNTIL)
    a, b = 1001.37, 1002.37
    inside = set(g.t[(g.t >= a) & (g.t < b)].tolist())

    def shift(d: dict) -> list[dict]:
        return [{**d, "norm_pos": [d["norm_pos"][0] + 0.01, d["norm_pos"][1]]} if d["timestamp"] in inside else d]

    run = drive(edit_gaze(bursts, shift), config, until=REACH_UNTIL)
    ticks = _changed_ticks(run.ticks, ref.ticks)
    assert RATE - 1 <= len(ticks) <= RATE + 1
    assert a - 0.5 / RATE <= ref.t[ticks[0]] and ref.t[ticks[-1]] < b + 0.5 / RATE  # the ticks holding [a, b)
    changed = _changed_messages(run, ref)
    if mechanism == "geo-uniform":  # the changed ticks and, through the median, the reach after them
        assert changed and set(changed) <= set(range(ticks[0], ticks[-1] + _reach(ref)))
    else:
        assert changed and changed[0] >= ticks[0]  # nothing before the first changed tick


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_the_published_bytes_do_not_depend_on_how_the_gaze_was_batched(reach_stream, mechanism):
    """The same datums at the same times, each burst split into single messages: the ticks are
    grouped differently on their way to the privatizer, and the seeded bytes stay the same."""
    bursts, _, _ = reach_stream
    config = dataclasses.replace(CONFIG, gaze_mechanism=mechanism)
    ref = drive(bursts, config, until=REACH_UNTIL)
    single = [(at, [m]) for at, burst in bursts for m in burst]
    run = drive(single, config, until=REACH_UNTIL)
    assert run.releasing_calls != ref.releasing_calls or run.calls != ref.calls  # batched differently
    assert _changed_messages(run, ref) == []
