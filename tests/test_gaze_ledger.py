"""The gaze channel's durable ledger: with an identity, every tick sealed is charged in
``<identity>#gaze`` before it is released, in blocks of a second's worth of ticks (counted in
ticks, never in clock seconds) at the most such a block can spend, whatever the source clock does;
the charges survive the session, and a ledger that was tampered with releases nothing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.gaze import GazeColumns
from streamdp.privacy.ledger_chain import LedgerError
from streamdp.privacy.ledger_store import LedgerStore
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

REC = generate(duration=12.0, rate=120.0, seed=2).recording


def _run(tmp_path, mechanism="geo-uniform", seed=0, live=False):
    config = SessionConfig(
        chunk_length=8, window=4.0, seed=seed, gaze_channel=True, gaze_mechanism=mechanism,
        unit="session", budget=1e6, identity="alice@headset1", ledger_dir=str(tmp_path),
    )  # fmt: skip
    sink = CollectingSink(accepts_gaze=True)
    if live:
        session = Session(config, sinks=[sink], seed=seed, source="live")
        n = len(REC.gaze)
        for start in range(0, n, 120):  # a second of gaze at a time
            session.update(GazeColumns.from_batch(REC.gaze.slice(start, min(start + 120, n))))
        session.flush()
    else:
        Session.for_recording(config, REC, sinks=[sink]).run(REC)
    return sink.ticks, LedgerStore("alice@headset1#gaze", folder=tmp_path)


def _bound(mechanism: str) -> float:
    """The most 60 consecutive ticks (a block) can spend at the default settings."""
    mech = SessionConfig(gaze_channel=True, gaze_mechanism=mechanism).gaze_mechanism_instance()
    return min(60 * mech.epsilon_tick_max, math.ceil(60 / mech.w) * mech.epsilon)


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_every_tick_is_charged_before_it_is_released_at_the_most_its_block_spends(tmp_path, mechanism):
    ticks, store = _run(tmp_path, mechanism)
    state, bound = store.read(), _bound(mechanism)
    assert state.epsilon_spent == pytest.approx(math.ceil(len(ticks) / 60) * bound)
    spent = ticks[-1].ledger["epsilon_spent_per_degree"]
    assert 0 < spent <= state.epsilon_spent
    # the published running total: this tick's block charged, a function of its index alone
    charged = [t.ledger["epsilon_charged_per_degree"] for t in ticks]
    assert charged == [pytest.approx((i // 60 + 1) * bound) for i in range(len(ticks))]
    assert charged[-1] == pytest.approx(state.epsilon_spent)
    assert state.chunks_charged <= 2  # a recording's ticks: one batch and the last one's flush


def _bursts(start: float, seconds: float, seed: int) -> list[GazeColumns]:
    g = generate(duration=seconds, rate=120.0, seed=seed, start_time=start).recording.gaze
    return [GazeColumns.from_batch(g.slice(i, min(i + 12, len(g)))) for i in range(0, len(g), 12)]  # 10 Hz


def _back(session):
    session.reset()  # GazeChannel.reset() then an earlier clock: the audit's case
    return -2000.0


def _restart_back(session):
    session.restart()  # Capture restarted; its clock starts lower
    return -1000.0


def _restart_same(session):
    session.restart()  # a reconnection on the same clock: the ticks go on, none repeats
    return 3.0


@pytest.mark.parametrize(
    ("event", "then"),
    [
        pytest.param(_back, None, id="reset-back-2000s"),
        pytest.param(None, -1000.0, id="clock-back-1000s"),  # T back: a restart the gaze confirms
        pytest.param(None, 12.0, id="clock-forward-12s"),  # T forward: a jump
        pytest.param(None, 100.0, id="clock-forward-then-back"),
        pytest.param(_restart_back, None, id="restart-back"),
        pytest.param(_restart_same, None, id="restart-same-clock"),
    ],
)
def test_the_ledger_follows_the_published_ticks_whatever_the_clock_does(tmp_path, event, then):
    """Gaze for 3 s, a clock event, gaze for 10 s on the new clock (forward-then-back: 3 s ahead,
    then 10 s back at the old clock): ε per tick × published ticks is charged, rounded up to whole
    blocks; before, a clock gone back published up to its old high-water second without charge."""
    config = SessionConfig(
        chunk_length=8, window=4.0, seed=0, gaze_channel=True, unit="session", budget=1e6,
        identity="alice@headset1", ledger_dir=str(tmp_path),
    )  # fmt: skip
    sink = CollectingSink(accepts_gaze=True)
    session = Session(config, sinks=[sink], seed=0, source="live")
    for cols in _bursts(1000.0, 3.0, 1):
        session.update(cols)
    shift = event(session) if event is not None else then
    parts = [(1003.0 + shift, 10.0)]
    if then == 100.0:
        parts = [(1003.0 + shift, 3.0), (1006.0, 10.0)]
    for i, (start, seconds) in enumerate(parts):
        for cols in _bursts(start, seconds, 2 + i):
            session.update(cols)
    session.flush()
    ticks = sink.ticks
    state = LedgerStore("alice@headset1#gaze", folder=tmp_path).read()
    bound = _bound("geo-uniform")
    assert len(ticks) >= 60 * 12  # the new clock's ticks were published
    assert state.epsilon_spent == pytest.approx(math.ceil(len(ticks) / 60) * bound)
    assert state.epsilon_spent >= sum(t.ledger["epsilon_tick_per_degree"] for t in ticks) - 1e-9
    assert [t.ledger["tick_index"] for t in ticks] == list(range(len(ticks)))
    times = np.array([float(t.t[0]) for t in ticks])
    assert np.all(np.diff(times)[np.diff(times) > -10.0] > 0)  # no repeat; back only at a new segment


def test_live_ticks_charge_once_a_second_and_sessions_add_up(tmp_path):
    _, store = _run(tmp_path, live=True)
    first = store.read()
    assert 12 <= first.chunks_charged <= 14  # a write per second of gaze fed, not per tick
    _run(tmp_path, seed=1)
    assert store.read().epsilon_spent > first.epsilon_spent  # a new session never starts afresh


def test_a_tampered_gaze_ledger_is_refused_before_the_session_starts(tmp_path):
    _, store = _run(tmp_path)
    lines = store.path.read_bytes().splitlines(keepends=True)
    store.path.write_bytes(b"".join(lines[:-1]))  # cut back: the folder's index remembers more
    with pytest.raises(LedgerError, match=r"alice@headset1#gaze"):
        _run(tmp_path, seed=1)


def test_budget_show_says_the_gaze_line_in_its_own_words(tmp_path, capsys):
    from streamdp.cli import main

    _run(tmp_path)
    assert main(["budget", "show", "alice@headset1#gaze", "--ledger-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "per degree of gaze displacement, charged ahead in 2 writes" in out
