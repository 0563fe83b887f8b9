"""The learned sequence attacker of ``evaluate --channel gaze`` (a 1-D convolutional network over the
ticks' velocity, the ``attack`` extra): it re-identifies synthetic people from their raw ticks, fails
where the ticks hold no identity, classifies a task told apart by its velocity (and not one that is
not), is the same under a seed, reaches the report (re-identification and task), and without
PyTorch is refused in one line naming the extra."""

from __future__ import annotations

import csv
import subprocess
import sys
import textwrap
from dataclasses import replace

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.offline.evaluate_gaze import GazePlan, GazePoint, run_gaze_job
from streamdp.offline.gaze_report import markdown
from streamdp.offline.gaze_sequence_attacker import (
    MISSING_TORCH,
    CnnSettings,
    attacker_rows,
    attackers_of,
    check_attackers,
    cnn_classification,
    cnn_reidentification,
    velocity,
    windows,
)
from streamdp.offline.gaze_study import gaze_study, midpoint, tick_stream
from streamdp.synthetic import generate

PEOPLE = 4
CHANCE = 1.0 / PEOPLE


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def study():
    """Four synthetic people, each reading and searching 120 s (recording 2p reading, 2p + 1 search)."""
    return gaze_study(PEOPLE, 120.0, 0, trials=2, pursuit_s=2.0)


@pytest.fixture(scope="module")
def people(study):
    """The study's raw ticks, persons and cuts."""
    tracks = [(s.ticks.t, s.ticks.deg) for s in study.reid_streams]
    return tracks, list(study.person_of), [midpoint(s.ticks.t) for s in study.reid_streams]


def saccading(seed, per_s, seconds=120.0, rate=60.0):
    """Ticks at ``rate`` of an eye fixating random points within ±15° with 0.3° of noise, jumping to
    the next point ``per_s`` times a second on average (exponential gaps): (t, deg)."""
    r = np.random.default_rng(seed)
    t = np.arange(int(seconds * rate)) / rate
    onsets = np.cumsum(r.exponential(1.0 / per_s, int(3 * seconds * per_s) + 10))
    points = r.uniform(-15.0, 15.0, (len(onsets) + 1, 2))
    return t, points[np.searchsorted(onsets, t, side="right")] + r.normal(0.0, 0.3, (len(t), 2))


@pytest.fixture(scope="module")
def one_person():
    """Eight recordings of one synthetic person (reading and searching, other seeds), labelled as
    four people of two recordings each: no identity to find in the ticks."""
    config = SessionConfig()
    fov = config.event_config(None).fov_deg
    streams = [
        tick_stream(generate(120.0, 120.0, 100 + i, 0, ("reading", "search")[i % 2], fov).recording.gaze, config, fov)
        for i in range(2 * PEOPLE)
    ]
    tracks = [(s.ticks.t, s.ticks.deg) for s in streams]
    return tracks, [f"P{i // 2}" for i in range(2 * PEOPLE)], [midpoint(s.ticks.t) for s in streams]


def test_the_network_reidentifies_people_from_their_raw_ticks(torch, people):
    per_window, voted = cnn_reidentification(*people, seed=0)
    assert per_window > CHANCE + 0.2
    assert voted >= 0.5


def test_the_network_stays_near_chance_where_the_ticks_hold_no_identity(torch, one_person):
    for seed in (0, 1):
        per_window, voted = cnn_reidentification(*one_person, seed=seed)
        assert per_window < CHANCE + 0.1
        assert voted <= 0.5


def test_test_halves_of_other_people_are_not_credited_to_the_labelled_one(torch, people):
    """Each recording's second half swapped with another person's: the network, which learned the
    people, names the other person, and the labelled one falls below chance."""
    tracks, persons, mids = people
    swapped = []
    for i, ((t, deg), mid) in enumerate(zip(tracks, mids, strict=True)):
        j = (i + 2) % len(tracks)  # the next person's recording of the same task
        t2, d2 = tracks[j]
        cut, cut2 = int(np.searchsorted(t, mid, side="right")), int(np.searchsorted(t2, mids[j], side="right"))
        later = t2[cut2:] - t2[cut2] + t[cut - 1] + (t[1] - t[0])
        swapped.append((np.concatenate([t[:cut], later]), np.concatenate([deg[:cut], d2[cut2:]])))
    per_window, voted = cnn_reidentification(swapped, persons, mids, seed=0)
    assert per_window < CHANCE
    assert voted < CHANCE


@pytest.mark.parametrize(("rates", "separable"), [((0.7, 3.0), True), ((1.5, 1.5), False)])
def test_the_network_classifies_a_task_told_apart_by_its_saccade_rate(torch, rates, separable):
    """Four people each doing a "slow" and a "fast" task: saccades 0.7 and 3 times a second are
    classified from the raw ticks; the same rate under both names stays at chance (0.5)."""
    tracks, tasks = [], []
    for p in range(PEOPLE):
        for j, per_s in enumerate(rates):
            tracks.append(saccading(100 * p + j, per_s))
            tasks.append(("slow", "fast")[j])
    mids = [midpoint(t) for t, _ in tracks]
    for seed in (0, 1):
        per_window, voted = cnn_classification(tracks, tasks, mids, seed=seed)
        if separable:
            assert per_window > 0.7
            assert voted >= 0.75
        else:
            assert per_window < 0.6
            assert voted <= 0.5 + 1e-9


def test_a_study_with_tasks_gets_the_networks_task_rows_beside_unchanged_reidentification(torch, study, people):
    """A synthetic study with task labels (reading, search): the job writes the network's task rows
    (chance 0.5) beside its re-identification rows, which are the re-identification alone; the
    report's best of all attackers names the task's."""
    tasks = tuple(("reading", "search")[i % 2] for i in range(len(study.recordings)))
    plan = GazePlan((), True, ("cnn",))
    rows = []
    for point in (GazePoint("raw-ticks"), GazePoint("geo-uniform", 4.0, 60)):
        rows += run_gaze_job(replace(study, task_of=tasks), plan, point, 0, 0)
    cnn = [r for r in rows if r["classifier"] == "cnn"]
    assert {(r["mechanism"], r["metric"], r["voting"]) for r in cnn} == {
        (m, a, v) for m in ("raw-ticks", "geo-uniform") for a in ("reidentification", "task_accuracy")
        for v in ("no", "yes")
    }  # fmt: skip
    raw = {(r["metric"], r["voting"]): r for r in cnn if r["mechanism"] == "raw-ticks"}
    assert (raw["reidentification", "no"]["value"], raw["reidentification", "yes"]["value"]) == cnn_reidentification(
        *people, seed=0
    )
    assert raw["task_accuracy", "yes"]["chance"] == pytest.approx(0.5)
    assert raw["task_accuracy", "yes"]["target"] == "ticks"
    md = markdown(rows)
    task = raw["task_accuracy", "yes"]["value"]
    assert f"Task, chance 0.50: raw ticks (the best of all attackers: cnn, none) {task:.2f}." in md
    assert "| re-ID / raw ticks | task: best attacker | task | utility met |" in md
    assert "| cnn, none |" in md.split("## Against the targets")[1]
    assert attackers_of(rows, "task_accuracy") == ["cnn"]


def test_reidentification_is_the_classification_of_the_people(torch, people):
    assert cnn_reidentification(*people, seed=1) == cnn_classification(*people, seed=1)


def test_the_same_seed_gives_the_same_accuracy_and_leaves_torch_as_it_was(torch, people):
    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    state = torch.get_rng_state()
    first = cnn_reidentification(*people, seed=3)
    assert cnn_reidentification(*people, seed=3) == first
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic
    assert torch.equal(torch.get_rng_state(), state)


def test_velocity_and_windows_are_those_of_the_ticks():
    t = np.arange(5) / 60.0
    deg = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 0.5], [50.0, 0.5], [50.0, 0.5]])
    v = velocity(t, deg)
    assert v[:, 0] == pytest.approx([60.0, 0.0, 1000.0, 0.0])  # 2940 °/s clamped
    assert v[:, 1] == pytest.approx([0.0, 30.0, 0.0, 0.0])
    w = windows(v, 2, 1)
    assert w.shape == (3, 2, 2) and w.dtype == np.float32
    assert w[1].tolist() == [[0.0, 1000.0], [30.0, 0.0]]
    assert windows(v, 8, 1).shape == (0, 2, 8)


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda: CnnSettings(epochs=0), ValueError, "epochs must be an int ≥ 1, got 0"),
        (lambda: CnnSettings(channels=2.5), TypeError, "channels must be an int, got 2.5"),
        (lambda: CnnSettings(dilations=(1, 0)), ValueError, "dilations must be an int ≥ 1, got 0"),
        (lambda: CnnSettings(learning_rate=-1.0), ValueError, "learning_rate must be finite and > 0, got -1.0"),
        (lambda: check_attackers(["features", "lstm"]), ValueError, "attackers must be some of features, cnn"),
        (lambda: check_attackers([]), ValueError, "attackers must name at least one attacker"),
        (lambda: check_attackers("cnn"), TypeError, "attackers must be a sequence of names"),
        (
            lambda: cnn_reidentification([(np.arange(3.0), np.zeros((3, 3)))], ["P0"], [1.0]),
            ValueError,
            "tracks[0] must be times (m,) and degrees (m, 2)",
        ),
        (lambda: cnn_reidentification([], ["P0"], []), ValueError, "one entry per recording, got 0, 1 and 0"),
        (
            lambda: cnn_classification([(np.arange(200.0), np.zeros((200, 2)))] * 2, ["a", "a"], [100.0, 100.0]),
            ValueError,
            "fewer than two labels have a training window of 120 ticks",
        ),
        (lambda: cnn_reidentification([], [], [], seed=1.5), TypeError, "seed must be an int, got 1.5"),
    ],
)
def test_bad_settings_and_inputs_are_refused_named(make, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        make()


def test_the_rows_of_each_attacker_are_told_apart():
    reid = [{"metric": "reidentification", "classifier": c, "value": v} for c, v in (("knn", 0.5), ("cnn", 0.9))]
    rows = [*reid, {"metric": "error_median", "classifier": "-", "value": 1.0}]
    assert attackers_of(rows) == ["features", "cnn"]
    assert [r["value"] for r in attacker_rows(rows, "cnn")] == [0.9]
    assert [r["value"] for r in attacker_rows(rows, "features")] == [0.5, 1.0]
    assert attackers_of(rows[2:]) == []
    task = [{"metric": "task_accuracy", "classifier": "cnn", "value": 0.7}]
    assert attackers_of(rows + task, "task_accuracy") == ["cnn"]
    assert attackers_of(rows + task) == ["features", "cnn"]


def _argv(out, *attackers):
    return ["evaluate", "--channel", "gaze", "--people", "2", "--seconds", "70", "--trials", "2",
            "--pursuit-seconds", "2", "--gaze-mechanisms", "geo-uniform", "--tick-epsilons", "4", "--seeds", "1",
            "--filters", "median5", "--workers", "1", "--out", str(out), "--quiet",
            "--attackers", *attackers]  # fmt: skip


def test_the_cli_reports_the_networks_reidentification_and_the_best_of_all(torch, tmp_path, capsys):
    pytest.importorskip("sklearn")
    out = tmp_path / "gaze"
    assert main(_argv(out, "cnn")) == 0
    with open(out / "results.csv") as fh:
        rows = [r for r in csv.DictReader(fh) if r["metric"] == "reidentification"]
    assert {r["classifier"] for r in rows} == {"cnn"}
    assert {(r["mechanism"], r["filter"], r["voting"]) for r in rows} == {
        (m, f, v) for m in ("raw-ticks", "geo-uniform") for f in ("none", "median5") for v in ("no", "yes")
    }
    assert {r["chance"] for r in rows} == {"0.5"}
    md = (out / "results.md").read_text()
    assert "## Re-identification by the sequence model (cnn" in md
    assert "| cnn of none | cnn of median5 |" in md
    assert "the best of all attackers: cnn, " in md
    assert capsys.readouterr().out == md + "\n"


def test_the_cli_reports_the_network_on_a_manifests_recordings(torch, tmp_path):
    pytest.importorskip("sklearn")
    from tests.test_evaluate_gaze_manifest import _argv as manifest_argv
    from tests.test_evaluate_gaze_manifest import write_manifest

    out = tmp_path / "gaze"
    assert main(manifest_argv(write_manifest(tmp_path), out, "--attackers", "features", "cnn")) == 0
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    cnn = {(r["mechanism"], r["metric"]) for r in rows if r["classifier"] == "cnn"}
    # no raw gaze: the network sees ticks only
    assert cnn == {(m, a) for m in ("raw-ticks", "geo-bd") for a in ("reidentification", "task_accuracy")}
    task = [r for r in rows if r["metric"] == "task_accuracy" and r["mechanism"] == "raw-ticks"]
    assert {r["classifier"] for r in task} == {"knn", "svm", "tree", "forest", "cnn"}  # beside the features'
    md = (out / "results.md").read_text()
    head = "| features of none | features of median5 | cnn of none | cnn of median5 | best attacker |"
    assert md.count(head) == 2  # re-identification and task
    task_table = md.split("## Task (task column)")[1].split("## Summary")[0]
    assert "cnn of none" in task_table


def test_the_cli_refuses_the_cnn_attacker_without_reidentification(tmp_path, capsys):
    assert main([*_argv(tmp_path / "gaze", "cnn"), "--no-reid"]) == 2
    assert "--attackers chooses the re-identification attackers: drop --no-reid" in capsys.readouterr().err
    assert not (tmp_path / "gaze").exists()


def test_without_torch_the_cnn_attacker_is_one_line_naming_the_extra(tmp_path):
    """PyTorch made unimportable in a fresh interpreter (a finder refusing it): the command exits 2
    with one line on stderr naming the extra and writes nothing; the library raises ImportError
    naming it too."""
    pytest.importorskip("sklearn")
    out = tmp_path / "gaze"
    script = textwrap.dedent(
        f"""
        import sys

        class NoTorch:  # as if PyTorch were not installed
            def find_spec(self, name, path=None, target=None):
                if name.split(".")[0] == "torch":
                    raise ModuleNotFoundError(f"No module named {{name!r}}")

        sys.meta_path.insert(0, NoTorch())
        from streamdp.cli import main
        from streamdp.offline.gaze_sequence_attacker import require_torch
        try:
            require_torch()
        except ImportError as exc:
            print(exc)
        sys.exit(main({_argv(out, "features", "cnn")!r}))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stdout.strip() == MISSING_TORCH
    assert done.stderr.strip().splitlines() == [
        "streamdp evaluate --attackers cnn needs the optional extra: pip install 'streamdp[attack]'"
    ]
    assert not out.exists()
