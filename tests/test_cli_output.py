"""What a person reads when a command succeeds (issue #37 item 3): long explanations behind ``-v``,
huge numbers in scientific notation, numbers with their units, exit statuses that mean what the
help says, and a budget command that starts no one's ledger on a typo.

The refusals of the same issue are rows of the bad-input table (tests/test_cli_bad_input.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from streamdp.cli import main
from streamdp.synthetic import generate

from .recording_files import write_capture_recording


@pytest.fixture(scope="module")
def recordings(tmp_path_factory) -> Path:
    """``short``: 39.2 s of synthetic gaze (19 steps with a full window, one slot of 8 on the public
    grid); ``minute``: 60 s; ``binocular``: a folder no reader reads."""
    folder = tmp_path_factory.mktemp("recordings")
    write_capture_recording(generate(duration=39.2, rate=200.0, seed=0).recording, folder / "short")
    write_capture_recording(generate(duration=60.0, rate=200.0, seed=1).recording, folder / "minute")
    (folder / "binocular").mkdir()
    (folder / "binocular" / "binocular_only_gaze.pldata").write_bytes(b"\x00")
    return folder


def test_replay_says_in_one_short_line_what_the_public_grid_leaves_out_and_why_with_v(recordings, tmp_path, capsys):
    argv = ["replay", str(recordings / "short"), "--chunk-length", "8", "--jobs", "1"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    (note,) = [line for line in capsys.readouterr().err.splitlines() if "steps with a full" in line]
    assert note.endswith("the other steps fall outside the public grid's chunk slots and are not released (-v: why)")
    assert len(note) < 300 and "chunks are fixed slots" not in note
    assert main([*argv, "--out", str(tmp_path / "b"), "-v"]) == 0
    (note,) = [line for line in capsys.readouterr().err.splitlines() if "steps with a full" in line]
    assert "chunks are fixed slots of 8 steps × 0.5 s on the public grid of the source clock" in note


def test_replay_exits_0_when_some_recordings_were_written_and_1_when_none(recordings, tmp_path, capsys):
    good, bad = str(recordings / "minute"), str(recordings / "binocular")
    out = tmp_path / "some"
    assert main(["replay", good, bad, "--out", str(out), "--chunk-length", "16", "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    assert f"skipped {bad}: cannot read: {bad}: not a recording streamdp reads: it holds none of " in captured.err
    assert f"streamdp replay: 1 of 2 recordings written to {out}, 1 skipped (named above)" in captured.err
    assert captured.out.startswith(f"{good}: ")
    assert main(["replay", bad, bad, "--out", str(tmp_path / "none")]) == 1
    assert "every recording was skipped (2 recordings); nothing written" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_replay_help_states_its_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "exit status: 0 at least one recording written (any skipped are named on stderr); 1 every recording " in text


def test_heatmap_prints_a_huge_count_of_observers_in_scientific_notation(recordings, tmp_path, capsys):
    argv = ["heatmap", str(recordings / "minute"), "--out", str(tmp_path / "m.npy"), "--epsilon", "1e-300"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    (warning,) = [line for line in err.splitlines() if "mostly noise" in line]
    assert re.search(r"about \d\.?\d?e\+\d+ observers would bring it below the mean", warning), warning
    assert not re.search(r"\d{10}", err), err


def test_budget_reset_starts_a_ledger_only_when_asked(tmp_path, capsys):
    folder = tmp_path / "ledgers"
    assert main(["budget", "reset", "alice@h1", "--ledger-dir", str(folder), "--create"]) == 0
    out = capsys.readouterr().out
    assert "alice@h1: no ledger to archive" in out and "a new ledger starts from ε 0" in out
    # now it has one: a reset needs no --create, and a typo of the name is still refused
    assert main(["budget", "reset", "alice@h1", "--ledger-dir", str(folder)]) == 0
    assert "archived the old ledger" in capsys.readouterr().out
    assert main(["budget", "reset", "alise@h1", "--ledger-dir", str(folder)]) == 2
    assert "alise@h1: no ledger of this identity" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir() if "alise" in p.name) == []


def test_demo_with_the_gaze_channel_counts_its_one_subscriber_once_and_says_what_a_step_is(capsys):
    # ε 200: the task allocation's 26 features (at the default ε 10 it funds one, which has no unit)
    argv = ["demo", "--gaze-channel", "--seconds", "60", "--chunk-length", "16", "--seed", "2", "--epsilon", "200"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    (summary,) = [line for line in captured.err.splitlines() if line.startswith("streamdp demo: ")][-1:]
    assert summary.endswith("; 1 topic subscription"), summary
    assert re.search(r"; \d+ steps? of 0\.5 s dropped \(in no released chunk\), ", summary), summary
    means = [line for line in captured.out.splitlines() if "means over the chunk" in line]
    assert means and all(line.startswith("  noised means over the chunk: ") for line in means)
    assert all(re.search(r"\d(/s|°| s| mm| deg²)[,( ]", line) for line in means), means
