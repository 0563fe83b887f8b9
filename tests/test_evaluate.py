"""The honest evaluation: leak-free splits, noise seeds, per-label utility, any manifest column."""

from __future__ import annotations

import json

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.offline.evaluate import (
    GridPoint,
    LabelledRecording,
    Released,
    chunked_split,
    cross_session_folds,
    evaluate,
    feature_signals,
    label_utility,
    reidentification,
    sanitize,
    synthetic_study,
    task_classification,
)
from streamdp.offline.manifest import read_manifest_rows
from streamdp.offline.results import markdown_table, seed_stats
from streamdp.signals import get_signal
from streamdp.synthetic import generate, generate_eye_camera

from .recording_files import write_capture_recording

pytest.importorskip("sklearn")


def _fake(n_steps, rng, *, gap_at=None):
    t = np.arange(n_steps) * 0.5
    if gap_at is not None:
        t[gap_at:] += 100.0
    return LabelledRecording("r", "P0", "read", rng.uniform(0, 1, (n_steps, 52)), t)


@pytest.mark.parametrize("n", [8, 16, 32, 64])
def test_the_split_is_chunk_aligned_with_a_window_between_train_and_test(n):
    rng = np.random.default_rng(n)
    for rec in (_fake(420, rng), _fake(300, rng, gap_at=150)):
        (part,) = sanitize([rec], "dcfpa", 1.0, n, seed=0)
        train, test = chunked_split(part.t, part.chunk, 30.0)
        assert len(train) and len(test)
        # no chunk on both sides, and every chunk used is used whole
        assert set(part.chunk[train]).isdisjoint(part.chunk[test])
        for side in (train, test):
            for c in np.unique(part.chunk[side]):
                assert np.count_nonzero(part.chunk[side] == c) == np.count_nonzero(part.chunk == c) == n
        # the first test step's window starts after the last training step
        assert part.t[test].min() - part.t[train].max() >= 30.0


def test_a_split_inside_a_chunk_is_caught():
    t = np.arange(12) * 10.0
    chunk = np.repeat([0, 1, 2], 4)
    train, test = chunked_split(t, chunk, 30.0)
    assert set(chunk[train]).isdisjoint(chunk[test])
    # a split that cuts chunk 1 in two is what the assertion above refuses
    bad_train, bad_test = np.arange(6), np.arange(6, 12)
    assert not set(chunk[bad_train]).isdisjoint(chunk[bad_test])


def test_a_recording_too_short_for_a_gap_gives_no_split():
    t = np.arange(64) * 0.5  # two chunks of 32 back to back: never 30 s apart
    train, test = chunked_split(t, np.repeat([0, 1], 32), 30.0)
    assert len(train) == len(test) == 0


def test_cross_session_never_trains_on_the_tested_recording():
    people = ["a", "a", "a", "b", "b", "c"]
    folds = list(cross_session_folds(people))
    assert len(folds) == 3
    tested = [i for _, test in folds for i in test]
    assert sorted(tested) == [0, 1, 2, 3, 4]  # c has one recording: a distractor, never tested
    for train, test in folds:
        assert set(train).isdisjoint(test) and sorted(train + test) == list(range(6))
        for i in test:  # the person is still known from another recording
            assert any(people[j] == people[i] for j in train)


def _parts(signals, chunk_length=32):
    out = []
    for s in signals:
        t = np.arange(len(s)) * 0.5
        out.append(Released(s, s, t, np.arange(len(s)) // chunk_length))
    return out


def test_classifiers_do_not_see_test_rows_while_fitting():
    # pure noise: a leak of test rows into training would let the tree, which memorizes, find them
    rng = np.random.default_rng(1)
    parts = _parts([rng.normal(size=(320, 52)) for _ in range(8)])
    people = [f"P{i // 2}" for i in range(8)]
    for split in ("chunked", "cross-session"):
        assert reidentification(parts, people, split=split, every=1)["tree"][0] < 0.4  # chance 0.25
    assert task_classification(parts, people, ["read", "search"] * 4, every=1)["tree"][0] < 0.65


def test_evaluation_finds_structure_where_there_is_some():
    recs = feature_signals(synthetic_study(people=3, seconds=150.0))
    parts = sanitize(recs, "none", 0.0, 16, seed=0)
    reid = reidentification(parts, [r.participant for r in recs])
    assert np.mean([v[1] for v in reid.values()]) > 0.8


@pytest.fixture(scope="module")
def study():
    return feature_signals(synthetic_study(people=3, seconds=150.0))


def test_several_seeds_give_mean_and_sd_and_per_label_utility(study):
    rows = evaluate(study, [GridPoint("dcfpa", 10.0, 16)], seeds=3, progress=False)
    assert {r["seed"] for r in rows} == {0, 1, 2}
    utility = [r for r in rows if r["metric"] == "utility"]
    assert {r["target"] for r in utility} == {"reading", "search"}
    assert len(utility) == 6 and all(np.isfinite(r["value"]) for r in utility)
    mean, sd, n = seed_stats(rows, metric="utility", target="reading")
    assert n == 3 and sd > 0  # different noise per seed
    table = markdown_table(rows)
    assert "Mean ± sd over 3 noise seeds" in table and f"{mean:.3g} ± {sd:.2g}" in table
    assert "| mechanism | n | ε | reading | search |" in table


def test_per_label_utility_is_over_that_labels_recordings_only():
    rng = np.random.default_rng(3)
    a = Released(rng.uniform(1, 2, (32, 52)), rng.uniform(1, 2, (32, 52)), np.arange(32.0), np.zeros(32, int))
    b = Released(rng.uniform(1, 2, (32, 52)), rng.uniform(1, 2, (32, 52)), np.arange(32.0), np.zeros(32, int))
    by_label = label_utility([a, b], ["x", "y"])
    assert by_label["x"] == label_utility([a], ["x"])["x"] != by_label["y"]


def test_seeds_never_share_noise_and_workers_give_the_same_rows(study):
    grid = [GridPoint("none", 0.0, 16), GridPoint("cfpa", 10.0, 16)]
    one = evaluate(study, grid, seeds=2, progress=False)
    two = evaluate(study, grid, seeds=2, progress=False, workers=2)
    assert json.dumps(one) == json.dumps(two)
    u = {r["seed"]: r["value"] for r in one if r["metric"] == "utility" and r["target"] == "reading"}
    assert u[0] != u[1]


def test_any_manifest_column_is_a_task(tmp_path, capsys):
    lines = ["recording,participant,task,gender"]
    for p in range(4):
        for j, task in enumerate(("reading", "search")):
            rec = generate(duration=130.0, rate=100.0, seed=10 * p + j, person=p, task=task).recording
            write_capture_recording(rec, tmp_path / f"p{p}{task}")
            lines.append(f"p{p}{task},P{p},{task},{'fm'[p % 2]}")
    (tmp_path / "manifest.csv").write_text("\n".join(lines) + "\n")
    assert read_manifest_rows(tmp_path / "manifest.csv")[0].labels == {"gender": "f"}
    out = tmp_path / "eval"
    argv = ["evaluate", "--manifest", str(tmp_path / "manifest.csv"), "--out", str(out), "--mechanisms", "cfpa"]
    argv += ["--epsilons", "10", "--chunk-lengths", "16", "--seeds", "2", "--tasks", "task", "gender"]
    argv += ["--split", "both", "--workers", "1", "--quiet"]
    assert main(argv) == 0
    rows = json.loads((out / "results.json").read_text())
    assert {r["target"] for r in rows if r["metric"] == "task"} == {"task", "gender"}
    assert {r["target"] for r in rows if r["metric"] == "reidentification"} == {"chunked", "cross-session"}
    md = (out / "results.md").read_text()
    assert "gender (voting)" in md and "Chance: re-identification 0.25, task 0.50, gender 0.50." in md
    for png in ("task_gender_vs_epsilon.png", "reidentification_cross-session_vs_epsilon.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert main([*argv[:-1], "--overwrite", "--tasks", "age", "--quiet"]) == 2
    assert "has no column 'age'" in capsys.readouterr().err


def test_the_eye_camera_signal_finds_saccades_where_the_degree_thresholds_find_none():
    from streamdp.config import SessionConfig
    from streamdp.session import Session

    rec = generate_eye_camera(duration=90.0, seed=5, person=1).recording
    settings = dict(get_signal("eye-camera-norm").settings)
    norm_defaults = SessionConfig(units="norm", diameter_unit="px")
    eye = SessionConfig(**settings)
    saccade_rate = 1  # schema index
    assert np.all(Session.for_recording(norm_defaults, rec).feature_rows(rec).values[:, saccade_rate] == 0)
    assert np.all(Session.for_recording(eye, rec).feature_rows(rec).values[:, saccade_rate] > 1.0)
    # and the signal's bounds clip none of its pupil features, which the degree profile clips all of
    rows = Session.for_recording(eye, rec).feature_rows(rec).values
    profiles = [
        (get_signal("eye-camera-norm").bounds_profile(), False),
        (get_signal("scene-deg").bounds_profile(), True),
    ]
    for profile, clipped in profiles:
        pupil = slice(21, 25)
        outside = (rows[:, pupil] < profile.lo[pupil]) | (rows[:, pupil] > profile.hi[pupil])
        assert bool(outside.all(axis=0).any()) is clipped


def test_postprocess_adds_rows_marked_in_a_column_on_the_same_releases(study):
    grid = [GridPoint("none", 0.0, 16), GridPoint("dcfpa", 25.0, 16), GridPoint("steil", 25.0, 16)]
    rows = evaluate(study, grid, progress=False, postprocess=True)
    assert {r["postprocess"] for r in rows} == {"no", "yes"}
    marked = {(r["mechanism"], r["postprocess"]) for r in rows}
    # no noise and a mechanism without a stated noise model: as released only
    assert marked == {("none", "no"), ("dcfpa", "no"), ("dcfpa", "yes"), ("steil", "no")}
    plain = evaluate(study, grid[:2], progress=False)
    assert {r["postprocess"] for r in plain} == {"no"}
    # the rows without post-processing are those of a run without the option
    same = [r for r in rows if r["postprocess"] == "no" and r["mechanism"] != "steil"]
    assert json.dumps(same) == json.dumps(plain)
    table = markdown_table(rows)
    assert "post-processed" in table and "| dcfpa | 16 | 25 | 25 | yes |" in table
    assert "post-processed" not in markdown_table(plain)
    with pytest.raises(TypeError, match="postprocess"):
        evaluate(study, grid, progress=False, postprocess="yes")
