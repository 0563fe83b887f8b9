"""The gaze channel's durable ledger: with an identity, each whole second of the public tick grid
is charged in ``<identity>#gaze`` before any of its ticks is released, at the most its ticks can
spend; the charges survive the session, and a ledger that was tampered with releases nothing."""

from __future__ import annotations

import math

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


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_every_second_is_charged_before_its_ticks_at_the_most_they_spend(tmp_path, mechanism):
    ticks, store = _run(tmp_path, mechanism)
    seconds = {round(float(t.t[0]) * 60.0) // 60 for t in ticks}
    state = store.read()
    mech = SessionConfig(gaze_channel=True, gaze_mechanism=mechanism).gaze_mechanism_instance()
    bound = min(60 * mech.epsilon_tick_max, math.ceil(60 / mech.w) * mech.epsilon)
    assert state.epsilon_spent == pytest.approx(len(seconds) * bound)
    spent = ticks[-1].ledger["epsilon_spent_per_degree"]
    assert 0 < spent <= state.epsilon_spent
    assert ticks[-1].ledger["epsilon_charged_per_degree"] == state.epsilon_spent
    assert state.chunks_charged <= 2  # a recording's ticks: one batch and the last one's flush


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
