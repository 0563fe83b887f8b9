"""What of a recording counts, said where it matters: gaze under the confidence threshold, and steps
outside the public chunk grid (issue #22, "no silent output left").

The one-line messages themselves are rows of tests/test_cli_bad_input.py; here: the grid's story
agrees with what the session releases, the confidence check reads the streamed and the whole
recording alike, and what is said to the console never reaches the output folder.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.offline.coverage import GazeTally, GridCoverage
from streamdp.offline.replay import ReplayConfig, replay, replay_one
from streamdp.privacy.ledger_store import LedgerStore
from streamdp.synthetic import generate

from .recording_files import write_capture_recording


@pytest.mark.parametrize(
    ("duration", "chunk_length", "shift"),
    [(39.2, 8, 0.0), (39.2, 16, 0.0), (45.0, 8, 0.3), (62.0, 16, 0.7), (70.0, 4, 0.25), (30.4, 2, 0.0)],
)
def test_the_grid_story_counts_what_the_session_releases(duration, chunk_length, shift):
    rec = generate(duration=duration, rate=100.0, seed=1).recording
    rec = replace(rec, gaze=replace(rec.gaze, t=rec.gaze.t + shift))
    config = SessionConfig(chunk_length=chunk_length, seed=0)
    from streamdp.session import Session

    session = Session.for_recording(config, rec)
    releases = session.run(rec)
    cov = GridCoverage.of(config, float(rec.gaze.t[0]), float(rec.gaze.t[-1]))
    assert cov.chunks == len(releases)
    assert cov.steps == cov.chunks * chunk_length + cov.before + cov.after
    assert cov.before + cov.after == session.status().dropped_steps
    if releases:
        step = config.step
        assert releases[0].t[0] == pytest.approx(cov.slots[0] * chunk_length * step)
        assert (cov.note() == "") == (cov.before + cov.after == 0)
        assert cov.note().startswith(f"{cov.steps} steps with a full 30 s window") or not cov.note()
    else:
        head = "shorter than one chunk" if cov.steps < chunk_length else "no whole chunk"
        assert cov.no_chunk().startswith(f"{head}: {duration:.1f} s of gaze gives {cov.steps} steps")
        if cov.steps:
            assert f"chunks are fixed slots of {chunk_length} steps × 0.5 s" in cov.no_chunk()


def test_the_shorter_chunk_length_suggested_releases_a_chunk():
    rec = generate(duration=39.2, rate=100.0, seed=1).recording
    start, stop = float(rec.gaze.t[0]), float(rec.gaze.t[-1])
    text = GridCoverage.of(SessionConfig(chunk_length=32), start, stop).no_chunk()
    assert "give --chunk-length 8 or less" in text
    assert GridCoverage.of(SessionConfig(chunk_length=8), start, stop).chunks == 1
    assert GridCoverage.of(SessionConfig(chunk_length=16), start, stop).chunks == 0


def test_the_tally_names_samples_without_a_position():
    tally = GazeTally(0.6)
    tally.add(np.arange(4.0), np.array([False, False, True, True]), np.array([0.0, 0.0, 0.2, 0.1]))
    error, warning = tally.problem()
    assert error == "all 4 gaze samples are below --min-confidence 0.6 or without a position" and not warning
    tally.add(np.arange(4.0, 6.0), np.array([True, True]), np.array([0.9, 0.9]))
    assert tally.problem() == ("", "67% of 6 gaze samples are below --min-confidence 0.6 or without a position: "
                                   "only the other 33% count")  # fmt: skip
    tally.add(np.arange(6.0, 9.0), np.ones(3, bool), np.ones(3))
    assert tally.problem() == ("", "")  # 4 of 9 below: at most half, no warning


@pytest.fixture(scope="module")
def lost(tmp_path_factory):
    """A Capture recording (read a block at a time by replay) of which every sample is below 0.6."""
    rec = generate(duration=40.0, rate=200.0, seed=0).recording
    rec = replace(rec, gaze=replace(rec.gaze, confidence=np.full(len(rec.gaze), 0.3)))
    return write_capture_recording(rec, tmp_path_factory.mktemp("lost") / "lost")


def test_gaze_without_usable_samples_charges_no_durable_budget(lost, tmp_path):
    ledgers = str(tmp_path / "ledgers")
    config = ReplayConfig(seed=0, unit="session", budget=1e6, identity="alice@test", ledger_dir=ledgers)
    out = tmp_path / "out"
    out.mkdir()
    result = replay_one(str(lost), "lost", config, 0, str(out))
    assert result.skipped.startswith("all 8000 gaze samples are below --min-confidence 0.6") and not result.chunks
    assert LedgerStore("alice@test", folder=ledgers).read().epsilon_spent == 0.0
    assert list(out.iterdir()) == []
    # a lower threshold keeps the samples: the same gaze is then replayed, and too short for a chunk of 64
    result = replay_one(str(lost), "kept", replace(config, min_confidence=0.2), 0, str(out))
    assert result.chunks == 0 and result.skipped.startswith(
        "shorter than one chunk: 40.0 s of gaze gives 20 steps, a chunk needs 64"
    )
    assert not result.warning


def test_what_the_console_is_told_stays_out_of_the_folder(lost, tmp_path):
    rec = generate(duration=40.0, rate=200.0, seed=0).recording
    n = len(rec.gaze)
    mostly = replace(rec, gaze=replace(rec.gaze, confidence=np.where(np.arange(n) % 4 == 0, 0.9, 0.3)))
    folder = write_capture_recording(mostly, tmp_path / "mostly")
    results = replay([str(folder), str(lost)], tmp_path / "out", SessionConfig(chunk_length=8, seed=0), jobs=1)
    assert results[0].chunks == 2 and results[0].warning.startswith("75% of 8000 gaze samples")
    assert results[0].note.startswith("20 steps with a full 30 s window")
    assert results[1].skipped.startswith("all 8000 gaze samples") and not results[1].chunks
    written = json.loads((tmp_path / "out" / "replay.json").read_text())["recordings"]
    assert all("note" not in r and "warning" not in r for r in written)
