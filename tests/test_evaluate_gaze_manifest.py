"""``streamdp evaluate --channel gaze --manifest study.csv``: the gaze channel measured on the
user's own recordings (angular error, re-identification of the participant column, the task
column classified), and the refusals of what it cannot measure."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.offline.gaze_manifest import manifest_gaze_study
from streamdp.offline.gaze_report import GAZE_RESULT_KEYS
from streamdp.synthetic import generate
from tests.recording_files import write_capture_recording

pytest.importorskip("sklearn")

TASKS = ("reading", "search")


def write_manifest(root, *, people=3, seconds=75.0, rate=120.0, slow=None):
    """A manifest of Capture recordings, each person reading and searching; ``slow``: the folder
    of one recording made at 25 Hz instead."""
    lines = ["recording,participant,task,session"]
    for p in range(people):
        for j, task in enumerate(TASKS):
            name = f"p{p}{task}"
            rec = generate(duration=seconds, rate=25.0 if name == slow else rate, seed=10 * p + j, person=p,
                           task=task).recording  # fmt: skip
            write_capture_recording(rec, root / "recs" / name)
            lines.append(f"recs/{name},P{p},{task},s{j}")
    (root / "study.csv").write_text("\n".join(lines) + "\n")
    return root / "study.csv"


def _argv(manifest, out, *extra):
    return ["evaluate", "--channel", "gaze", "--manifest", str(manifest), "--gaze-mechanisms", "geo-bd",
            "--tick-epsilons", "0.5", "--gaze-windows", "30", "--seeds", "1", "--filters", "median5",
            "--workers", "1", "--out", str(out), "--quiet", *extra]  # fmt: skip


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    return write_manifest(tmp_path_factory.mktemp("study"))


def _rows(out):
    with open(out / "results.csv") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == GAZE_RESULT_KEYS
        rows = list(reader)
    for r in rows:
        r["value"], r["chance"] = float(r["value"]), float(r["chance"]) if r["chance"] not in ("", "-") else np.nan
    return rows


def _mean(rows, **match):
    got = [r["value"] for r in rows if all(r[k] == v for k, v in match.items())]
    assert got, match
    return float(np.mean(got))


def test_the_manifest_is_measured_end_to_end_through_the_cli(manifest, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(_argv(manifest, out)) == 0
    rows = _rows(out)
    assert {r["mechanism"] for r in rows} == {"raw-ticks", "raw-gaze", "geo-bd"}
    assert {r["filter"] for r in rows} == {"none", "median5"}
    assert {r["metric"] for r in rows} == {
        "error_median",
        "error_p95",
        "reidentification",
        "task_accuracy",
        "epsilon_spent_tick",
    }  # no synthetic dwell or pursuit task: their truth is unknown
    # raw ticks are the reference of the error; the noise moves the released ticks away from them
    assert _mean(rows, mechanism="raw-ticks", metric="error_median", filter="none") == 0.0
    assert _mean(rows, mechanism="geo-bd", metric="error_median", filter="none", target="has_gaze") > 0.5
    # chance is the manifest's: 3 participants, 2 tasks
    reid = [r for r in rows if r["metric"] == "reidentification"]
    task = [r for r in rows if r["metric"] == "task_accuracy"]
    assert [r["chance"] for r in reid] == pytest.approx([1 / 3] * len(reid))
    assert {r["chance"] for r in task} == {0.5}
    assert {r["classifier"] for r in task} == {"knn", "svm", "tree", "forest"}
    assert {(r["mechanism"], r["target"]) for r in task} >= {("raw-gaze", "gaze"), ("raw-ticks", "ticks")}
    # the synthetic people are told apart and their tasks recognized from their raw gaze
    assert _mean(rows, mechanism="raw-gaze", metric="reidentification", voting="yes") > 1 / 3
    assert _mean(rows, mechanism="raw-ticks", metric="task_accuracy", voting="yes", filter="none") > 0.5
    md = (out / "results.md").read_text()
    for title in ("## As released", "## Re-identification (participant)", "## Task (task column)", "## Summary"):
        assert title in md
    assert "dwell" not in md and "pursuit" not in md
    assert capsys.readouterr().out == md + "\n"
    meta = json.loads((out / "evaluation.json").read_text())
    assert meta["study"]["recordings"] == 6 and meta["study"]["people"] == 3
    assert meta["study"]["tasks"] == list(TASKS)
    assert {"error_vs_epsilon.png", "reidentification_vs_epsilon.png", "task_vs_epsilon.png"} <= {
        p.name for p in out.iterdir()
    }


def test_the_study_is_the_manifests_recordings_and_labels(manifest):
    study = manifest_gaze_study(manifest, SessionConfig(), reid=True)
    assert study.people == ("P0", "P1", "P2") and not study.dwell and not study.pursuit
    assert study.person_of == ("P0", "P0", "P1", "P1", "P2", "P2")
    assert study.task_of == TASKS * 3
    assert len(study.streams) == len(study.recordings) == 6
    # the ticks of each recording at the configured rate, over its whole length
    t = study.streams[0].ticks.t
    assert np.allclose(np.diff(t), 1 / SessionConfig().gaze_rate) and t[-1] - t[0] > 70.0


def test_without_reid_only_the_error_is_measured(manifest, tmp_path):
    out = tmp_path / "eval"
    assert main(_argv(manifest, out, "--no-reid")) == 0
    assert {r["metric"] for r in _rows(out)} == {"error_median", "error_p95", "epsilon_spent_tick"}


def test_a_recording_slower_than_the_tick_rate_is_refused_naming_it_and_both_rates(tmp_path, capsys):
    manifest = write_manifest(tmp_path, people=2, seconds=5.0, slow="p1search")
    out = tmp_path / "eval"
    assert main(_argv(manifest, out, "--gaze-rate", "60")) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("streamdp evaluate: error: ")
    assert "recs/p1search" in err and "p0reading" not in err
    assert "25 Hz" in err and "60 ticks a second" in err
    assert not out.exists()
    # at a tick rate the recording can feed, the same manifest is accepted
    assert main(_argv(manifest, out, "--gaze-rate", "20", "--no-reid")) == 0


def test_recordings_too_short_for_the_attack_are_refused_named(tmp_path, capsys):
    manifest = write_manifest(tmp_path, people=2, seconds=40.0)
    out = tmp_path / "eval"
    assert main(_argv(manifest, out)) == 2
    err = capsys.readouterr().err
    assert "re-identification needs recordings of ≥ 70 s" in err and "recs/p0reading (40 s)" in err
    assert "--no-reid" in err and not out.exists()


def test_manifest_study_refuses_a_single_participant(tmp_path):
    manifest = write_manifest(tmp_path, people=1, seconds=5.0)
    with pytest.raises(InputError, match="at least two participants"):
        manifest_gaze_study(manifest, SessionConfig(), reid=True)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--trials", "3"], "--trials shapes the synthetic people's tasks"),
        (["--tasks", "session"], "--tasks applies to --channel features"),
    ],
)
def test_synthetic_and_features_options_are_refused_with_a_manifest(tmp_path, capsys, extra, message):
    manifest = write_manifest(tmp_path, people=2, seconds=5.0)
    out = tmp_path / "eval"
    assert main(_argv(manifest, out, *extra)) == 2
    assert message in capsys.readouterr().err and not out.exists()


def test_csv_columns_still_need_a_manifest(tmp_path, capsys):
    argv = ["evaluate", "--channel", "gaze", "--csv-columns", "t=0,x=1,y=2", "--out", str(tmp_path / "e"), "--quiet"]
    assert main(argv) == 2
    assert "--csv-columns reads the recordings of a --manifest; give one" in capsys.readouterr().err
