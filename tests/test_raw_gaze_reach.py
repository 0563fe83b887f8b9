"""Issue #12 items 1 and 3: one raw sample reaches a public, bounded number of chunks, and the
release schedule (how many releases, when) never depends on the gaze.

Each variant runs through the real :class:`~streamdp.session.Session`, fed in slices of source
time followed by ``advance_to`` (as the live timer does), with the same seed, so that two runs
differ in a chunk only where their feature rows do. The bound is the ledger's own
(:func:`~streamdp.privacy.reach.raw_gaze_reach`, stated by the privatizer)."""

from __future__ import annotations

import dataclasses
import functools
import itertools

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdp import EventDetector
from streamdp.config import SessionConfig
from streamdp.events import EventBatch
from streamdp.gaze import GazeBatch, GazeColumns
from streamdp.privacy.reach import raw_gaze_reach
from streamdp.readers import read_recording
from streamdp.session import Session
from streamdp.stages.features import FeatureRows, WindowConfig, WindowFeatures
from streamdp.synthetic import generate

from .conftest import shared

CONFIG = SessionConfig(window=4.0, step=0.25, chunk_length=8, seed=3, reorder_window=0.1)
REACH = raw_gaze_reach(window=4.0, step=0.25, chunk_length=8, max_event_duration=8.0)


def _run(
    gaze: GazeBatch, config: SessionConfig = CONFIG, slice_s: float = 0.1
) -> tuple[list[float], list[np.ndarray], list[np.ndarray]]:
    """(source time of the call that made each release, its step times, its values) through a
    live-like session fed in slices of ``slice_s`` seconds of source time, each followed by
    ``advance_to`` its end; releases made by the final flush have time inf."""
    session = Session(config, source="probe")
    cols = GazeColumns.from_batch(gaze)
    when, ts, vals = [], [], []
    edges = np.arange(np.floor(gaze.t[0] / slice_s) * slice_s, gaze.t[-1] + 2 * slice_s, slice_s)
    for a, b in itertools.pairwise(edges.tolist()):
        lo, hi = np.searchsorted(cols.t, [a, b])
        part = cols.take(np.arange(lo, hi))
        out = (session.update(part) if len(part) else []) + session.advance_to(b)
        for r in out:
            when.append(b)
            ts.append(np.asarray(r.t))
            vals.append(np.asarray(r.values))
    for r in session.flush():
        when.append(np.inf)
        ts.append(np.asarray(r.t))
        vals.append(np.asarray(r.values))
    return when, ts, vals


def _select(gaze: GazeBatch, keep: np.ndarray) -> GazeBatch:
    def kept(value: object) -> object:
        per_sample = isinstance(value, np.ndarray) and value.shape[:1] == gaze.t.shape
        return value[keep] if per_sample else value

    return type(gaze)(**{f.name: kept(getattr(gaze, f.name)) for f in dataclasses.fields(gaze)})


def _with_gap(gaze: GazeBatch, a: float, b: float) -> GazeBatch:
    return _select(gaze, (gaze.t < a) | (gaze.t >= b))


@pytest.fixture(scope="module")
def base():
    gaze = generate(duration=40.0, rate=120.0, seed=5).recording.gaze
    gaze = _with_gap(gaze, 1015.0, 1022.0)  # a 7 s gap, longer than the window
    return gaze, _run(gaze)


def _changed(a, b) -> int:
    assert a[0] == b[0], "release times changed"
    assert all(np.array_equal(x, y) for x, y in zip(a[1], b[1], strict=True)), "published t changed"
    return sum(not np.array_equal(x, y) for x, y in zip(a[2], b[2], strict=True))


@pytest.mark.parametrize("index", np.linspace(200, 3900, 12).astype(int).tolist())
def test_one_sample_moved_changes_no_more_chunks_than_the_reach(base, index):
    gaze, ref = base
    x = gaze.x.copy()
    x[index] += 0.05
    conf = gaze.confidence.copy()
    conf[index + 7] = 0.0
    got = _run(dataclasses.replace(gaze, x=x, confidence=conf))
    assert len(got[0]) == len(ref[0]) >= 4
    assert _changed(got, ref) <= REACH.chunks_per_sample * 2  # two samples moved


@pytest.mark.parametrize("t_insert", [1016.0, 1018.5, 1021.0])
def test_a_sample_inside_a_gap_changes_neither_the_schedule_nor_more_than_the_reach(base, t_insert):
    gaze, ref = base
    i = int(np.searchsorted(gaze.t, t_insert))
    one = gaze.slice(i - 1, i)
    parts = [gaze.slice(0, i), dataclasses.replace(one, t=np.array([t_insert])), gaze.slice(i, len(gaze))]
    got = _run(GazeBatch.concat(parts))
    assert len(got[0]) == len(ref[0])
    assert _changed(got, ref) <= REACH.chunks_per_sample


def test_the_step_grid_is_public_time():
    _, (_, ts, _) = None, _run(generate(duration=30.0, rate=120.0, seed=6, start_time=1000.37).recording.gaze)
    for t in ts:
        assert np.array_equal(t, np.rint(t / 0.25) * 0.25) and round(t[0] / 0.25) % 8 == 0


# -- a real recording: cateyes, 298 s at 119 Hz, fixations up to 3 s (the audit's case: one
# sample inside a 3 s fixation used to change 4 chunks at n = 32, against the ledger's 3)

# every feature funded: the reach is a property of the schedule, and one funded feature may not move
REAL = SessionConfig(window=30.0, step=0.5, chunk_length=32, seed=3, reorder_window=0.1, weights="equal")
REAL_REACH = raw_gaze_reach(window=30.0, step=0.5, chunk_length=32, max_event_duration=8.0)


@pytest.fixture(scope="module")
def real():
    gaze = read_recording(shared("cateyes_119hz", "test_data_full.csv")).gaze
    det = EventDetector(max_event_duration=None)  # whole fixations, to find the longest
    fx = EventBatch.concat([det.update(gaze), det.flush()]).fixations
    longest = np.argsort(-fx.duration)[:3]
    assert fx.duration[longest[0]] > 2.5
    inside = np.searchsorted(gaze.t, (fx.start[longest] + fx.end[longest]) / 2).tolist()
    return gaze, inside, _run(gaze, REAL)


def test_one_sample_changed_inside_the_longest_real_fixations_stays_within_the_reach(real):
    gaze, inside, ref = real
    assert REAL_REACH.chunks_per_sample == 3 and len(ref[0]) == 16
    changed = []
    for index in inside:
        x = gaze.x.copy()
        x[index] += 0.05  # ≈ 5°: the fixation is broken in two
        changed.append(_changed(_run(dataclasses.replace(gaze, x=x), REAL), ref))
    changed.append(_changed(_run(_select(gaze, np.arange(len(gaze)) != inside[0] + 3), REAL), ref))  # deleted
    assert max(changed) <= REAL_REACH.chunks_per_sample
    assert max(changed) >= 2  # the change does reach across chunks: the bound is not vacuous


# -- a 4 s fixation across a chunk's end no longer holds the chunk back


def _with_fixation(gaze: GazeBatch, a: float, b: float) -> GazeBatch:
    """``gaze`` with a steady fixation from ``a`` to ``b`` (jitter 0.0005, full confidence)."""
    inside = (gaze.t >= a) & (gaze.t < b)
    jitter = np.random.default_rng(0).normal(0.0, 0.0005, (2, int(inside.sum())))
    x, y, conf = gaze.x.copy(), gaze.y.copy(), gaze.confidence.copy()
    x[inside], y[inside], conf[inside] = 0.5 + jitter[0], 0.5 + jitter[1], 1.0
    return dataclasses.replace(gaze, x=x, y=y, confidence=conf)


def test_a_4s_fixation_does_not_delay_a_release_past_its_deadline():
    gaze = generate(duration=20.0, rate=120.0, seed=8).recording.gaze
    # chunks of 8 steps of 0.25 s end at 1009.75 and 1011.75: the fixation spans both, inside
    # the public block [1008, 1016)
    held = _with_fixation(gaze, 1008.5, 1012.5)
    det = EventDetector()
    fx = EventBatch.concat([det.update(held), det.flush()]).fixations
    long = fx.duration > 3.9
    assert long.sum() == 1 and fx.start[long][0] < 1009.75 and fx.end[long][0] > 1011.75
    slice_s = 0.01
    when, ts, _ = _run(held, slice_s=slice_s)
    assert len(when) >= 6 and np.isfinite(when).sum() >= 5
    for b, t in zip(when, ts, strict=True):
        if not np.isfinite(b):
            continue  # released by the flush at the end of the stream
        deadline = float(t[-1]) + CONFIG.chunk_hold
        # released by the first clock tick past the deadline: not before, and not later
        assert b - slice_s <= deadline < b, (float(t[-1]), b)
    # and at the same moments as without the fixation: the schedule is public
    assert _run(gaze, slice_s=slice_s)[0] == when


# -- bit for bit (issue #19 item 5): the reach bounds every bit of what is published. Each
# variant nudges, deletes or inserts one raw sample (or one second of samples); the seeded
# releases, as the sink packs them, and the unsanitized feature rows of each chunk (kept locally)
# are compared byte for byte with those of the unchanged gaze. Released values lie on the noise
# grid, which hides most float residue, so the rows are the sharper check; both must hold.


def _published(gaze: GazeBatch, config: SessionConfig, slice_s: float) -> tuple[list[bytes], dict[int, bytes]]:
    """(each release as the network sink packs it, each chunk's feature rows as bytes)."""
    session = Session(config, source="probe")
    kept = session.keep_feature_rows()
    cols = GazeColumns.from_batch(gaze)
    releases = []
    edges = np.arange(np.floor(gaze.t[0] / slice_s) * slice_s, gaze.t[-1] + 2 * slice_s, slice_s)
    for a, b in itertools.pairwise(edges.tolist()):
        lo, hi = np.searchsorted(cols.t, [a, b])
        part = cols.take(np.arange(lo, hi))
        releases += (session.update(part) if len(part) else []) + session.advance_to(b)
    releases += session.flush()
    pack = msgpack.Packer(use_bin_type=True).pack
    rows = FeatureRows.concat(kept)
    chunk = np.rint(rows.t / config.step).astype(np.int64) // config.chunk_length
    by_chunk = {int(c): rows.t[chunk == c].tobytes() + rows.values[chunk == c].tobytes() for c in np.unique(chunk)}
    return [pack(r.to_message()) for r in releases], by_chunk


def _changed_bits(
    got: tuple[list[bytes], dict[int, bytes]], ref: tuple[list[bytes], dict[int, bytes]]
) -> tuple[int, int]:
    """(releases whose bytes differ, chunks whose feature rows differ in any bit)."""
    assert len(got[0]) == len(ref[0]), "the number of releases changed"
    assert got[1].keys() == ref[1].keys(), "the chunks of feature rows changed"
    releases = sum(a != b for a, b in zip(got[0], ref[0], strict=True))
    rows = sum(got[1][c] != ref[1][c] for c in ref[1])
    return releases, rows


def _nudged(gaze: GazeBatch, t: float, seconds: float) -> GazeBatch:
    """Samples from ``t`` (one sample: ``seconds`` 0) moved by 0.05 (≈ 5°) in x."""
    i = int(np.searchsorted(gaze.t, t))
    j = max(i + 1, int(np.searchsorted(gaze.t, t + seconds)))
    x = gaze.x.copy()
    x[i:j] += 0.05
    return dataclasses.replace(gaze, x=x)


def _deleted(gaze: GazeBatch, t: float, seconds: float) -> GazeBatch:
    """The samples from ``t`` (one sample: ``seconds`` 0) removed."""
    i = int(np.searchsorted(gaze.t, t))
    j = max(i + 1, int(np.searchsorted(gaze.t, t + seconds)))
    return _select(gaze, (np.arange(len(gaze)) < i) | (np.arange(len(gaze)) >= j))


def _inserted(gaze: GazeBatch, t: float, seconds: float) -> GazeBatch:
    """A sample inserted half-way between each pair of neighbours from ``t`` (one: ``seconds``
    0), a copy of the earlier one moved by 0.05 in x: the rate doubles for that stretch."""
    i = int(np.searchsorted(gaze.t, t))
    at = np.arange(i, max(i + 1, int(np.searchsorted(gaze.t, t + seconds))))
    new = {"t": (gaze.t[at - 1] + gaze.t[at]) / 2, "x": gaze.x[at - 1] + 0.05}

    def grown(name: str, value: object) -> object:
        if not (isinstance(value, np.ndarray) and value.shape[:1] == gaze.t.shape):
            return value
        return np.insert(value, at, new.get(name, value[at - 1]), axis=0)

    return type(gaze)(**{f.name: grown(f.name, getattr(gaze, f.name)) for f in dataclasses.fields(gaze)})


_EDITS = {"nudged": _nudged, "deleted": _deleted, "inserted": _inserted}
_STRETCHES = {"one sample": 0.0, "one second": 1.0}


_REFERENCES: dict[tuple[str, SessionConfig], tuple[list[bytes], dict[int, bytes]]] = {}


def _check_bit_reach(
    gaze: GazeBatch, config: SessionConfig, at: list[float], edit: str, stretch: str, slice_s: float
) -> None:
    reach = raw_gaze_reach(
        window=config.window, step=config.step, chunk_length=config.chunk_length, max_event_duration=8.0
    )
    bound = reach.chunks_per_sample if _STRETCHES[stretch] == 0 else reach.chunks_per_second
    key = (gaze.source, config)
    if key not in _REFERENCES:
        _REFERENCES[key] = _published(gaze, config, slice_s)
    ref = _REFERENCES[key]
    assert len(ref[0]) >= 4
    seen = []
    for t in at:
        releases, rows = _changed_bits(_published(_EDITS[edit](gaze, t, _STRETCHES[stretch]), config, slice_s), ref)
        assert releases <= bound and rows <= bound, (t, releases, rows, bound)
        seen.append(rows)
    assert max(seen) >= 2  # the change does reach across chunks: the bound is not vacuous


@pytest.mark.parametrize("stretch", list(_STRETCHES))
@pytest.mark.parametrize("edit", list(_EDITS))
def test_no_bit_beyond_the_reach_depends_on_the_edit_synthetic(edit, stretch):
    gaze = generate(duration=40.0, rate=120.0, seed=11).recording.gaze
    _check_bit_reach(gaze, CONFIG, [1013.1, 1025.7], edit, stretch, slice_s=0.1)


@pytest.mark.parametrize("chunk_length", [32, 64])
@pytest.mark.parametrize("stretch", list(_STRETCHES))
@pytest.mark.parametrize("edit", list(_EDITS))
def test_no_bit_beyond_the_reach_depends_on_the_edit_cateyes(edit, stretch, chunk_length):
    gaze = read_recording(shared("cateyes_119hz", "test_data_full.csv")).gaze
    config = dataclasses.replace(REAL, chunk_length=chunk_length)
    t0 = float(gaze.t[0])
    _check_bit_reach(gaze, config, [t0 + 61.3, t0 + 140.2], edit, stretch, slice_s=2.0)


@pytest.mark.parametrize("stretch", list(_STRETCHES))
@pytest.mark.parametrize("edit", list(_EDITS))
def test_no_bit_beyond_the_reach_depends_on_the_edit_pupil_core(edit, stretch):
    gaze = read_recording(shared("pupil_core_tutorial", "gaze_positions.csv")).gaze
    t0 = float(gaze.t[0])
    _check_bit_reach(gaze, CONFIG, [t0 + 9.1, t0 + 22.6], edit, stretch, slice_s=0.25)


# -- the window features alone: a row's bits are a function of the events in its window


@functools.cache
def _events() -> EventBatch:
    gaze = generate(duration=60.0, rate=120.0, seed=4).recording.gaze
    det = EventDetector()
    return EventBatch.concat([det.update(gaze), det.flush()])


def _history_changed(events: EventBatch, cut: float, rng: np.random.Generator) -> EventBatch:
    """``events`` with every value of the events ending before ``cut`` moved by up to 1e-6 of
    itself and one such fixation dropped; ends (and so every window's membership) kept."""

    def moved(a: np.ndarray, before: np.ndarray) -> np.ndarray:
        return np.where(before, a * (1 + rng.uniform(-1e-6, 1e-6, a.shape)), a)

    fx, sc, bl = events.fixations, events.saccades, events.blinks
    f = fx.end < cut
    fx = dataclasses.replace(fx, **{k: moved(getattr(fx, k), f) for k in ("var_x", "var_y", "pupil_mean", "pupil_var")})
    fx = dataclasses.replace(fx, start=fx.end - moved(fx.end - fx.start, f))
    keep = np.arange(len(fx)) != int(np.flatnonzero(f)[-1])
    fx = type(fx)(**{k.name: getattr(fx, k.name)[keep] for k in dataclasses.fields(fx)})
    sc = dataclasses.replace(sc, amplitude=moved(sc.amplitude, sc.end < cut))
    bl = dataclasses.replace(bl, start=bl.end - moved(bl.end - bl.start, bl.end < cut))
    return dataclasses.replace(events, fixations=fx, saccades=sc, blinks=bl)


@pytest.mark.parametrize(("window", "step"), [(4.0, 0.25), (10.0, 1.0), (1.3, 0.25)], ids=["4s", "10s", "1.3s"])
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), cut=st.floats(1012.0, 1040.0))
def test_a_feature_row_depends_on_the_events_in_its_window_alone(window, step, seed, cut):
    events = _events()
    config = WindowConfig(window=window, step=step)
    ref = WindowFeatures(config).update(events)
    got = WindowFeatures(config).update(_history_changed(events, cut, np.random.default_rng(seed)))
    assert np.array_equal(got.t, ref.t)
    after = ref.t - window >= cut
    assert after.sum() >= 10 and not np.array_equal(got.values[~after], ref.values[~after])
    assert got.values[after].tobytes() == ref.values[after].tobytes()
