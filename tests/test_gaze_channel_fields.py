"""Issue #20: every field of a gaze tick is public or noised and accounted; bad input is refused
by name or counted, and the ticks stay on their grid.

The fields are read as a subscriber reads them: the relay on the simulated Capture
(:func:`tests.live_harness.live`) publishes on loopback and every ``streamdp.gaze.*`` frame is
decoded with msgpack. Public means a function of the configuration and public time: the same
value from a channel that never saw the gaze. Two different gaze streams with one seed (the live
driver of :mod:`tests.gaze_channel_driver`, deterministic) differ only in ``values`` and, for
geo-bd, in the spend of each tick, itself a function of the published values.
"""

from __future__ import annotations

import dataclasses
import math

import msgpack
import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.gaze import Recording
from streamdp.kernels.geometry import degrees_to_norm
from streamdp.live_pacing import FeedPacing
from streamdp.privacy.audit.gaze_timing import ClockedSink
from streamdp.privacy.release import PrivateRelease
from streamdp.schema import SCHEMA_VERSION
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.gaze_privatizer import GAZE_NAMES
from streamdp.stages.gaze_ticks import Ticks
from streamdp.synthetic import generate

from .gaze_channel_driver import Burst, LiveRun, bursts_of, deliver, drive
from .live_harness import live

RATE = 60.0
# wider than the default tick window (34 ms): every datum of the Capture-style bursts counts
CONFIG = SessionConfig(gaze_channel=True, seed=3, chunk_length=32, reorder_window=0.1)
HOLD = CONFIG.tick_offset

MESSAGE_FIELDS = {
    "topic": "public: streamdp.gaze.<mechanism>, from the configuration",
    "schema_version": "public: the package's schema",
    "names": "public: the gaze channel's columns",
    "t": "public: the tick k / rate (the grid starts at the first sample's tick, published anyway)",
    "values": "noised by the gaze mechanism (degrees), and their image in normalized units",
    "ledger": "field by field below",
}
#: per tick: a count of the ticks (public: the subscriber sees each arrive) and ε spent by this
#: tick and all ticks so far (public: a function of the parameters and of published outputs)
PER_TICK = {"tick_index", "epsilon_tick_per_degree", "epsilon_spent_per_degree"}
#: what must never leave: raw functions of the gaze
RAW = {"has_gaze", "clipped_fraction", "timestamp", "confidence", "norm_pos", "valid", "samples", "count"}


def _public_ledger(config: SessionConfig) -> dict:
    """The ledger entries of the channel's first tick, from a channel that never saw this gaze
    (its own stand-in gaze: a still fixation at the centre), without the per-tick ones."""
    channel = config.gaze_channel_for(seed=0)
    assert channel is not None
    gaze = generate(duration=0.2, rate=200.0, seed=99).recording.gaze
    gaze = dataclasses.replace(gaze, x=np.full(len(gaze), 0.5), y=np.full(len(gaze), 0.5))
    first = (channel.update(gaze) + channel.flush())[0].to_message()["ledger"]
    return {k: v for k, v in first.items() if k not in PER_TICK | {"generator"}}


@pytest.fixture(scope="module", params=["geo-uniform", "geo-bd"])
def relayed(request) -> tuple[SessionConfig, list[tuple[bytes, dict]]]:
    config = dataclasses.replace(CONFIG, gaze_mechanism=request.param)
    rec = generate(duration=4.0, rate=200.0, seed=1).recording
    got: list[tuple[bytes, dict]] = []
    with live(rec, config, seed=3) as (_, _, sub):
        while len(got) < 300 and sub.poll(10_000):
            topic, payload = sub.recv_multipart()
            if topic.startswith(b"streamdp.gaze."):
                got.append((topic, msgpack.unpackb(payload, raw=False)))
    assert len(got) == 300
    return config, got


def _check_message(topic: bytes, msg: dict, config: SessionConfig, public: dict) -> None:
    assert topic.decode() == msg["topic"] == f"streamdp.gaze.{config.gaze_mechanism}"
    assert set(msg) == set(MESSAGE_FIELDS), f"unclassified message fields: {set(msg) ^ set(MESSAGE_FIELDS)}"
    assert msg["schema_version"] == SCHEMA_VERSION and tuple(msg["names"]) == GAZE_NAMES
    ledger = msg["ledger"]
    assert not RAW & set(ledger), f"raw functions of the gaze published: {RAW & set(ledger)}"
    # configuration (the guarantee in words once a second, on public tick counts)
    stated = {k: v for k, v in ledger.items() if k not in PER_TICK | {"generator"}}
    once = ledger["tick_index"] % round(RATE) == 0
    want = public if once else {k: v for k, v in public.items() if k not in ("guarantee", "raw_gaze_guarantee")}
    assert stated == want, f"a ledger field that is not the configuration's: {set(stated) ^ set(want)}"
    assert ledger["generator"] == "reproducible, not private"  # the seed: configuration
    (t,) = msg["t"]
    assert t == round(t * RATE) / RATE  # on the grid, nothing finer
    ((x, y, nx, ny),) = msg["values"]
    assert (nx, ny) == tuple(float(v) for v in degrees_to_norm(np.array(x), np.array(y), ledger["fov_deg"]))
    assert (x / ledger["lattice_deg"]) % 1 == 0 and (y / ledger["lattice_deg"]) % 1 == 0  # on the noise lattice


def test_every_published_field_is_public_or_noised(relayed):
    config, got = relayed
    public = _public_ledger(config)
    for topic, msg in got:
        _check_message(topic, msg, config, public)
    # counts and ε: every tick of the grid in turn, each charged, the running sum public
    index = np.array([m["ledger"]["tick_index"] for _, m in got])
    ticks = np.rint(np.array([m["t"][0] for _, m in got]) * RATE)
    assert np.array_equal(np.diff(index), np.ones(len(got) - 1)) and np.array_equal(np.diff(ticks), np.diff(index))
    spend = np.array([m["ledger"]["epsilon_tick_per_degree"] for _, m in got])
    spent = np.array([m["ledger"]["epsilon_spent_per_degree"] for _, m in got])
    assert np.allclose(np.cumsum(spend) + spent[0] - spend[0], spent, rtol=1e-12)
    w, eps_w = got[0][1]["ledger"]["w"], got[0][1]["ledger"]["epsilon_w_per_degree"]
    assert np.convolve(spend, np.ones(w), mode="valid").max() <= eps_w * (1 + 1e-12)
    if config.gaze_mechanism == "geo-uniform":
        assert np.all(spend == config.gaze_mechanism_instance().epsilon_tick)


def test_a_raw_field_in_the_message_is_caught(monkeypatch):
    """The check above, on a message that also carries the clip rate (a raw function of the gaze)."""
    import streamdp.privacy.release as release

    monkeypatch.setattr(release, "LOCAL_LEDGER_KEYS", frozenset())
    rec = generate(duration=1.0, rate=200.0, seed=1).recording
    run = drive(bursts_of(rec), CONFIG, until=1001.5)
    topic = f"streamdp.gaze.{CONFIG.gaze_mechanism}".encode()
    with pytest.raises(AssertionError, match="clipped_fraction"):
        _check_message(topic, run.decoded()[0], CONFIG, _public_ledger(CONFIG))


# -- two people, one seed: only what is noised differs


def _two_people(mechanism: str, **changes: object) -> tuple[LiveRun, LiveRun]:
    config = dataclasses.replace(CONFIG, gaze_mechanism=mechanism, **changes)
    alice = generate(duration=4.0, rate=200.0, seed=1, start_time=1000.0).recording
    bob = generate(duration=4.0, rate=200.0, seed=2, person=5, task="search", start_time=1000.0).recording
    return tuple(drive(bursts_of(r), config, until=1005.0) for r in (alice, bob))  # type: ignore[return-value]


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_two_gaze_streams_with_one_seed_differ_only_in_what_is_noised(mechanism):
    a, b = _two_people(mechanism)
    assert np.array_equal(a.t, b.t) and np.array_equal(a.at, b.at)
    noised = {"values"}
    noised_ledger = {"epsilon_tick_per_degree", "epsilon_spent_per_degree"} if mechanism == "geo-bd" else set()
    differ: set[str] = set()
    for ma, mb in zip(a.decoded(), b.decoded(), strict=True):
        differ |= {k for k in ma if k != "ledger" and ma[k] != mb[k]}
        differ |= {f"ledger.{k}" for k in ma["ledger"] if ma["ledger"][k] != mb["ledger"].get(k)}
        assert set(ma["ledger"]) == set(mb["ledger"])
    assert differ == noised | {f"ledger.{k}" for k in noised_ledger}


def test_geo_bd_spends_what_its_published_values_show():
    """A tick spends ε_test and, when it publishes, its share: whether it published is visible
    in the mechanism's values (a new position, not the last one repeated), so the spend is public.
    Read without the public median (it mixes the last nine outputs; the spend is a function of
    what the median reads, published or not)."""
    for run in _two_people("geo-bd", gaze_smoothing="none"):
        msgs = run.decoded()
        test = msgs[0]["ledger"]["epsilon_test_per_degree"]
        values = np.array([m["values"][0] for m in msgs])
        spend = np.array([m["ledger"]["epsilon_tick_per_degree"] for m in msgs])
        moved = np.any(values[1:] != values[:-1], axis=1)
        assert np.array_equal(spend[1:] > test * (1 + 1e-9), moved)
        assert moved.any() and not moved.all()


# -- bad configuration: refused by name


BAD = [
    pytest.param({"gaze_rate": 0}, ValueError, "gaze_rate", id="rate-0"),
    pytest.param({"gaze_rate": -60.0}, ValueError, "gaze_rate", id="rate-negative"),
    pytest.param({"gaze_rate": math.nan}, ValueError, "gaze_rate", id="rate-nan"),
    pytest.param({"gaze_rate": math.inf}, ValueError, "gaze_rate", id="rate-inf"),
    pytest.param({"gaze_rate": "60"}, TypeError, "gaze_rate", id="rate-str"),
    pytest.param({"gaze_epsilon": -1.0}, ValueError, "gaze_epsilon", id="epsilon-negative"),
    pytest.param({"gaze_epsilon": 0.0}, ValueError, "gaze_epsilon", id="epsilon-0"),
    pytest.param({"gaze_epsilon": math.nan}, ValueError, "gaze_epsilon", id="epsilon-nan"),
    pytest.param({"gaze_epsilon": "60"}, TypeError, "gaze_epsilon", id="epsilon-str"),
    pytest.param({"gaze_w": 0}, ValueError, "gaze_w", id="w-0"),
    pytest.param({"gaze_w": -3}, ValueError, "gaze_w", id="w-negative"),
    pytest.param({"gaze_w": 1.5}, TypeError, "gaze_w", id="w-float"),
    pytest.param({"gaze_w": True}, TypeError, "gaze_w", id="w-bool"),
    pytest.param({"gaze_mechanism": "geo-laplace"}, ValueError, "gaze_mechanism", id="mechanism-unknown"),
    pytest.param({"gaze_channel": "yes"}, TypeError, "gaze_channel", id="channel-str"),
    pytest.param({"signal": "eye-camera-norm"}, ValueError, "gaze_channel", id="eye-camera-signal"),
    pytest.param({"gaze_mechanism": None}, (TypeError, ValueError), "gaze_mechanism", id="mechanism-none"),
    pytest.param({"gaze_epsilon": 1e-4}, ValueError, "gaze_epsilon", id="epsilon-too-small"),
]  # fmt: skip


@pytest.mark.parametrize(("changes", "error", "field"), BAD)
def test_a_bad_gaze_configuration_is_refused_naming_the_field(changes, error, field):
    with pytest.raises(error, match=field):
        SessionConfig(**{"gaze_channel": True, **changes}).check()


# -- malformed and non-finite gaze into a live session: counted, the ticks on their grid

_OK = {"topic": "gaze.3d.01.", "norm_pos": [0.5, 0.5], "confidence": 0.9, "base_data": []}
MALFORMED = [  # (kind, frames given the time of the burst), counted as malformed or invalid
    ("malformed", lambda t: [b"gaze.3d.01.", b"\xc1\xff\x00"]),
    ("malformed", lambda t: [b"gaze.3d.01.", msgpack.packb([1, 2, 3])]),
    ("malformed", lambda t: [b"gaze.3d.01."]),
    ("invalid", lambda t: [b"gaze.3d.01.", msgpack.packb({**_OK, "timestamp": t, "norm_pos": [math.nan, 0.5]})]),
    ("invalid", lambda t: [b"gaze.3d.01.", msgpack.packb({**_OK, "timestamp": t, "norm_pos": [0.5, math.inf]})]),
    ("invalid", lambda t: [b"gaze.3d.01.", msgpack.packb({**_OK, "timestamp": math.nan})]),
    ("invalid", lambda t: [b"gaze.3d.01.", msgpack.packb({**_OK, "timestamp": "soon"})]),
    ("invalid", lambda t: [b"gaze.3d.01.", msgpack.packb({**_OK, "timestamp": t, "confidence": math.nan})]),
    ("invalid", lambda t: [b"gaze.3d.01.", msgpack.packb({"topic": "gaze.3d.01.", "confidence": 0.9, "timestamp": t})]),
]  # fmt: skip


def _with_bad(bursts: list[Burst], every: int = 5) -> tuple[list[Burst], dict[str, int]]:
    out, counts = [], {"malformed": 0, "invalid": 0}
    for i, (at, burst) in enumerate(bursts):
        if i % every == 2:
            kind, make = MALFORMED[(i // every) % len(MALFORMED)]
            burst = [*burst[:1], make(at - 0.02), *burst[1:]]
            counts[kind] += 1
        out.append((at, burst))
    return out, counts


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_malformed_and_non_finite_gaze_is_counted_and_the_ticks_keep_their_grid(mechanism):
    config = dataclasses.replace(CONFIG, gaze_mechanism=mechanism)
    bursts = bursts_of(generate(duration=4.0, rate=200.0, seed=1, start_time=1000.0).recording)
    clean = drive(bursts, config, until=1005.0)
    bad, counts = _with_bad(bursts)
    run = drive(bad, config, until=1005.0)
    assert counts["malformed"] >= 3 and counts["invalid"] >= 6
    c = run.session.counters
    assert (c.malformed, c.invalid) == (counts["malformed"], counts["invalid"])
    assert (clean.session.counters.malformed, clean.session.counters.invalid) == (0, 0)
    assert np.array_equal(run.t, clean.t) and np.array_equal(run.at, clean.at)
    assert np.array_equal(run.at, run.t + HOLD) and np.array_equal(run.t, np.rint(run.t * RATE) / RATE)
    assert run.messages == clean.messages  # what was refused left no trace in the ticks


# -- a datum from the future: held until the next datum says whether the clock jumped (DESIGN.md §2)


def _with_stray(bursts: list[Burst], shift: float, where: str, burst: int = 30) -> tuple[list[Burst], int]:
    """``bursts`` with a copy of a gaze datum ``shift`` s later (negative: earlier) added to burst
    ``burst`` (at its end or start), to every burst, or before the stream's first datum; and how
    many were added."""
    out = list(bursts)
    if where == "first-datum":  # the stream's very first: before, it started the clock
        where, burst = "start-of-burst", 0
    for i in range(len(out)) if where == "every-burst" else [burst]:
        at, burst = out[i]
        topic, payload = next(m for m in burst if m[0].startswith(b"gaze."))
        future = msgpack.unpackb(payload, raw=False)
        future["timestamp"] += shift
        stray = [topic, msgpack.packb(future, use_bin_type=True)]
        out[i] = (at, [stray, *burst] if where == "start-of-burst" else [*burst, stray])
    return out, len(out) if where == "every-burst" else 1


STRAYS = [  # seconds the stray datum is shifted by: ahead (+) or back (−)
    *(pytest.param(s, id=f"{s:g}-s-ahead") for s in (2.0, 100.0, 1e5)),
    # back: beyond the chunk reorder window (2 s) + 1 s; gaze less late is a lagging eye's
    # (tests/test_lagging_eye.py)
    *(pytest.param(-s, id=f"{s:g}-s-back") for s in (3.5, 100.0, 1e5)),
]


@pytest.mark.parametrize("where", ["end-of-burst", "start-of-burst", "every-burst", "first-datum"])
@pytest.mark.parametrize("shift", STRAYS)
def test_a_stray_datum_publishes_no_tick_before_its_time_and_restarts_nothing(shift, where):
    """A lone datum far ahead or far back waits for the next, which refutes it. Before, one ahead
    published the ticks up to it at once (6000 at 100 s); one back restarted the session, and the
    gaze after it (100 s ahead of the new segment) published ~6000 stale ticks at once."""
    bursts = bursts_of(generate(duration=3.0, rate=200.0, seed=1, start_time=1000.0).recording)
    clean = drive(bursts, CONFIG, until=1004.0)
    stray, added = _with_stray(bursts, shift, where)
    run = drive(stray, CONFIG, until=1004.0)
    assert np.all(run.t <= run.at), f"{np.count_nonzero(run.t > run.at)} ticks published before their time"
    # nothing lost but the stray datum: the same ticks at the same times, the stray counted as invalid
    assert np.array_equal(run.t, clean.t) and np.array_equal(run.at, clean.at) and run.messages == clean.messages
    c = run.session.counters
    assert (c.restarts, c.late) == (clean.session.counters.restarts, clean.session.counters.late) == (0, 0)
    flushed, clean_flushed = run.session.flush(), clean.session.flush()
    assert run.session.counters.invalid == added and len(flushed) == len(clean_flushed)
    assert _packed(run) == _packed(clean)


def _packed(run: LiveRun) -> list[bytes]:
    """Every tick the run's sink was handed, flushed ones included."""
    return [msgpack.packb(r.to_message(), use_bin_type=True) for r in run.session.sinks[0].ticks]


@pytest.mark.parametrize("shift", [100.0, -100.0], ids=["future", "past"])
def test_a_lone_stray_datum_at_the_end_of_the_stream_is_dropped_at_flush(shift):
    bursts = bursts_of(generate(duration=3.0, rate=200.0, seed=1, start_time=1000.0).recording)
    clean = drive(bursts, CONFIG, until=1004.0)
    stray, _ = _with_stray(bursts, shift, "end-of-burst", burst=len(bursts) - 1)
    run = drive(stray, CONFIG, until=1004.0)
    assert np.array_equal(run.t, clean.t) and np.array_equal(run.at, clean.at)
    assert run.session.counters.invalid == 0  # held: the stream may yet go on at its time
    assert run.session.counters.restarts == 0
    run.session.flush()
    clean.session.flush()
    assert run.session.counters.invalid == 1 and _packed(run) == _packed(clean)


def _paused(pause: float) -> tuple[list[Burst], Recording, float]:
    """2 s of gaze, ``pause`` s without any, 2 s more: the bursts, the gaze after the pause, its end."""
    before = generate(duration=2.0, rate=200.0, seed=1, start_time=1000.0).recording
    after = generate(duration=2.0, rate=200.0, seed=2, start_time=1002.0 + pause).recording
    return [*bursts_of(before), *bursts_of(after)], after, 1004.0 + pause


@pytest.mark.parametrize("pause", [10.0, 100.0], ids=["10-s-pause", "100-s-pause"])
def test_a_pause_in_the_gaze_is_no_datum_from_the_future(pause):
    """Gaze stops (the headset taken off) and comes back: every tick of the pause and after it goes
    out at its time, and the ticks after it hold the gaze after it, all of it."""
    bursts, after, end = _paused(pause)
    run = drive(bursts, CONFIG, until=end)
    c = run.session.counters
    assert (c.invalid, c.late, c.restarts) == (0, 0, 0)
    assert np.array_equal(run.at, run.t + HOLD)
    assert np.array_equal(np.diff(np.rint(run.t * RATE)), np.ones(len(run.t) - 1))  # every tick, once
    assert run.t[-1] >= end - HOLD - 1 / RATE  # the grid ran through the pause and on
    alone = drive(bursts_of(after), CONFIG, until=end)  # the gaze after the pause, as a stream of its own
    since = run.ticks.t >= alone.ticks.t[0]
    assert np.array_equal(run.ticks.t[since], alone.ticks.t)
    assert np.array_equal(run.ticks.deg[since], alone.ticks.deg)
    assert np.array_equal(run.ticks.has_gaze[since], alone.ticks.has_gaze) and alone.ticks.has_gaze.mean() > 0.9


@pytest.mark.parametrize("pause", [10.0, 100.0], ids=["10-s-pause", "100-s-pause"])
def test_a_pause_in_gaze_replayed_faster_than_real_time_is_a_jump_of_the_clock(pause):
    """No timer runs through the pause (a source faster than real time, as the simulator at speed
    0): the first datum after it waits for the next, which confirms the jump. Without a timer a
    pause cannot be told from ``T``: the ticks do not cover it (no burst of stale ticks), and
    before and after it the same ticks go out as in real time."""
    bursts, after, end = _paused(pause)
    real_time = drive(bursts, CONFIG, until=end)
    real_time.session.flush()
    sink = ClockedSink()
    fast = Session(CONFIG, sinks=[sink], seed=3, source="fast")
    first = next(i for i, (at, _) in enumerate(bursts) if at >= after.gaze.t[0])
    for i, (_, burst) in enumerate(bursts):  # the first datum after the pause alone: it waits for the next burst
        for part in [burst[:1], burst[1:]] if i == first else [burst]:
            fast.receive_frames(part)
    fast.flush()
    assert (fast.counters.invalid, fast.counters.late, fast.counters.restarts) == (0, 0, 0)
    got = [float(r.t[0]) for r in sink.ticks]
    want = [float(r.t[0]) for r in real_time.session.sinks[0].ticks]
    assert np.all(np.diff(got) > 0)
    gap = [t for t in want if t not in got]
    assert gap and min(gap) > 1002.0 and max(gap) < after.gaze.t[0]  # the pause's ticks only
    kept = [t for t in want if t in got]
    assert kept == got
    n = sum(t < min(gap) for t in want)  # before the pause: the same noised ticks, bit for bit
    reference = real_time.session.sinks[0].ticks[:n]
    assert [r.values.tolist() for r in sink.ticks[:n]] == [r.values.tolist() for r in reference]


def test_two_data_from_the_future_that_agree_are_a_jump_of_the_clock():
    """Two data far ahead in a row, within a second of each other: the stream's clock jumped (as
    after ``T``); when the old time then comes back, that is the clock going back: a restart."""
    bursts = bursts_of(generate(duration=3.0, rate=200.0, seed=1, start_time=1000.0).recording)
    once, _ = _with_stray(bursts, 100.0, "end-of-burst")
    twice, _ = _with_stray(once, 100.001, "end-of-burst")
    run = drive(twice, CONFIG, until=1004.0)
    c = run.session.counters
    assert (c.invalid, c.restarts) == (0, 1)
    assert run.t.max() >= 1100.0 - HOLD  # the grid went on to the jump's time


class _ChunkTimes(CollectingSink):
    """Takes the chunks, noting for each the source clock of the driver's call that published it."""

    def __init__(self, clock: ClockedSink) -> None:
        super().__init__()
        self.clock, self.at = clock, []

    def publish(self, release: PrivateRelease) -> None:
        super().publish(release)
        self.at.append(self.clock.now)


def _with_chunk_times(session: Session) -> None:
    session.sinks.append(_ChunkTimes(session.sinks[0]))
    session.pacing = FeedPacing()  # as the relay: decoded gaze may wait, a held chunk goes out mid-burst


@pytest.mark.parametrize("where", ["end-of-burst", "start-of-burst", "every-burst"])
@pytest.mark.parametrize("shift", [100.0, -100.0], ids=["future", "past"])
def test_a_stray_datum_releases_no_chunk_before_its_time(where, shift):
    """A datum from the future or the past, on the chunk path (the relay's pacing): the same
    chunks at the same times, no restart (the past one used to restart the session, dropping the
    partial chunk)."""
    config = SessionConfig(window=4.0, step=0.25, chunk_length=8, seed=3)  # a chunk every 2 s
    hold = config.chunk_hold
    bursts = bursts_of(generate(duration=12.0, rate=200.0, seed=1, start_time=1000.02).recording)
    # until the last chunk's public time: its last step + the chunk reorder window + the slack
    until = 1013.0 + config.chunk_hold
    clean = drive(bursts, config, until=until, patch=_with_chunk_times).session.sinks[1]
    stray, added = _with_stray(bursts, shift, where, burst=300)
    run = drive(stray, config, until=until, patch=_with_chunk_times)
    chunks = run.session.sinks[1]
    assert len(chunks.releases) >= 3
    due = np.array([float(r.t[-1]) + hold for r in chunks.releases])
    assert np.all(np.array(chunks.at) >= due), "a chunk published before its time"
    assert chunks.at == clean.at and [r.to_message() for r in chunks.releases] == [
        r.to_message() for r in clean.releases
    ]
    assert run.session.counters.restarts == 0
    run.session.flush()
    assert run.session.counters.invalid == added  # the last one at the end of the stream


# -- a clock that went back: two data agree, the session restarts once and the new segment is whole


def _drive_on(run: LiveRun, bursts: list[Burst], until: float) -> tuple[np.ndarray, np.ndarray, Ticks]:
    """Go on driving ``run``'s session as :func:`drive` does with ``bursts`` (a clock that went
    back): the ticks published from then on, their source times, and the raw ticks seen."""
    session, sink, seen = run.session, run.session.sinks[0], []
    privatizer = session.gaze.privatizer
    update = privatizer.update
    privatizer.update = lambda ticks: (seen.append(ticks), update(ticks))[1]
    first = len(sink.ticks)
    deliver(session, sink, bursts, until)
    return np.array([float(r.t[0]) for r in sink.ticks[first:]]), np.array(sink.at[first:]), Ticks.concat(seen)


@pytest.mark.parametrize("start", [902.0, 0.5], ids=["100-s-back", "capture-restarted-near-0"])
def test_a_clock_that_went_back_restarts_once_and_the_new_segment_loses_nothing(start):
    """The gaze goes on at a time 100 s earlier (``T``), or near 0 (Capture restarted): its first
    datum waits for the second, which confirms the jump: one restart, and the new segment's ticks
    are those of its gaze as a stream of its own, published at their time."""
    old = bursts_of(generate(duration=2.0, rate=200.0, seed=1, start_time=1000.0).recording)
    after = generate(duration=2.0, rate=200.0, seed=2, start_time=start).recording
    run = drive(old, CONFIG, until=1002.0)
    t, at, ticks = _drive_on(run, bursts_of(after), until=start + 2.5)
    c = run.session.counters
    assert (c.restarts, c.invalid, c.late) == (1, 0, 0)
    new = t < 1000.0  # the old segment's last ticks go out with the restart
    alone = drive(bursts_of(after), CONFIG, until=start + 2.5)  # the gaze after the jump, as a stream of its own
    assert np.array_equal(t[new], alone.t) and np.array_equal(at[new], alone.at) and np.all(at[new] >= t[new])
    mine = ticks.t < 1000.0
    assert np.array_equal(ticks.t[mine], alone.ticks.t) and np.array_equal(ticks.deg[mine], alone.ticks.deg)
    assert np.array_equal(ticks.has_gaze[mine], alone.ticks.has_gaze) and alone.ticks.has_gaze.mean() > 0.75


def test_a_shells_restart_while_the_new_clocks_first_datum_waits_loses_nothing():
    """The relay restarts the session on a jump it saw in Capture's clock after the session held
    the new clock's first datum: it waits on, and the next datum makes it the new segment's first."""
    old = bursts_of(generate(duration=2.0, rate=200.0, seed=1, start_time=1000.0).recording)
    after = bursts_of(generate(duration=2.0, rate=200.0, seed=2, start_time=902.0).recording)
    run = drive(old, CONFIG, until=1002.0)
    (at, burst), rest = after[0], after[1:]
    run.session.sinks[0].now = at
    run.session.receive_frames(burst[:1])  # held: nothing says yet whether the clock went back
    run.session.restart()  # the relay's heartbeat: Capture's clock jumped
    t, at_, _ = _drive_on(run, [(at, burst[1:]), *rest], until=904.5)
    c = run.session.counters
    assert (c.restarts, c.invalid, c.late) == (1, 0, 0)
    alone = drive(after, CONFIG, until=904.5)
    new = t < 1000.0
    assert np.array_equal(t[new], alone.t) and np.array_equal(at_[new], alone.at)
