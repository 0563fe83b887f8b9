"""``streamdp fit-weights`` (issue #21 item 1): a weights file fitted on labelled recordings, the
fold boundary an evaluation relies on, the loader a configuration will use, and every refusal."""

from __future__ import annotations

import hashlib
import json
import pickle
from dataclasses import fields, replace

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.offline.evaluate import LabelledRecording, feature_signals
from streamdp.offline.fit_weights import FittedWeights, fit_manifest, fit_training_fold, fit_weights
from streamdp.offline.splits import lopo_splits
from streamdp.privacy import default_profile, make_mechanism
from streamdp.privacy.weights_file import WEIGHTS_FORMAT, load_weights_file, weights_document
from streamdp.schema import FEATURE_NAMES
from streamdp.synthetic import generate

from .recording_files import write_capture_recording

PEOPLE, TASKS, SECONDS = 4, ("reading", "search"), 80.0


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """4 synthetic people reading and searching, as Capture recordings beside a manifest (with a
    gender and a site column), and their feature rows as the evaluation holds them."""
    root = tmp_path_factory.mktemp("study")
    lines, items, labels = ["recording,participant,task,gender,site"], [], []
    for p in range(PEOPLE):
        for j, task in enumerate(TASKS):
            rec = generate(duration=SECONDS, rate=100.0, seed=10 * p + j, person=p, task=task).recording
            write_capture_recording(rec, root / f"p{p}{task}")
            lines.append(f"p{p}{task},P{p},{task},{'fm'[p % 2]},kiel")
            items.append((rec, f"P{p}", task))
            labels.append({"gender": "fm"[p % 2], "site": "kiel"})
    (root / "manifest.csv").write_text("\n".join(lines) + "\n")
    return root, feature_signals(items, SessionConfig(), labels)


def _labels(rec: LabelledRecording) -> dict[str, str]:
    return {"participant": rec.participant, "task": rec.task, **rec.labels}


def test_the_command_writes_a_versioned_weights_file_that_loads_back(study, tmp_path, capsys):
    root, recs = study
    out = tmp_path / "reading-vs-search.json"
    argv = ["fit-weights", str(root / "manifest.csv"), "--task", "task", "--protect", "participant"]
    assert main([*argv, "--out", str(out), "--level-share", "0.4"]) == 0
    assert "features get ε" in capsys.readouterr().err
    text = out.read_text()
    doc = json.loads(text)
    assert (doc["format"], doc["version"], doc["name"]) == (WEIGHTS_FORMAT, 1, "reading-vs-search")
    fitted = doc["fitted"]
    assert {k: fitted[k] for k in ("task", "protect", "recordings", "participants", "task_classes", "epsilon")} == {
        "task": "task", "protect": "participant", "recordings": 8, "participants": 4, "task_classes": 2,
        "epsilon": None,
    }  # fmt: skip
    assert fitted["protect_classes"] == 4 and "(u_i*a_i)^(1/3)" in fitted["objective"]
    assert fitted["noise_model"]["mechanism"] == "dcfpa" and fitted["noise_model"]["level_share"] == 0.4
    assert fitted["manifest_sha256"] == hashlib.sha256((root / "manifest.csv").read_bytes()).hexdigest()
    assert fitted["streamdp_version"] and fitted["features"]["window"] == 30.0
    # no path and no label beyond the counts: the file is public
    for secret in (str(root), "p0reading", "P0", "kiel"):
        assert secret not in text
    # the loader gives back what was written, every feature, and a profile takes it
    name, weights = load_weights_file(out)
    assert name == "reading-vs-search" and list(weights) == list(FEATURE_NAMES) and weights == doc["weights"]
    # the file is the API's fit on the same rows (the evaluation's), bit for bit
    api = fit_training_fold(recs, range(len(recs)), task="task", protect="participant",
                            config=SessionConfig(level_share=0.4))  # fmt: skip
    assert api.mapping() == weights
    # a mechanism given the file spends each feature's share of ε and drops the others
    profile = default_profile().with_weights(weights, name)
    mech = make_mechanism("dcfpa", epsilon=26.0, bounds=profile, chunk_length=32)
    w = np.array([weights[f] for f in FEATURE_NAMES])
    assert np.allclose(mech.feature_epsilons, 26.0 * w / w.sum())
    assert set(mech.describe()["dropped_features"]) == {f for f in FEATURE_NAMES if weights[f] == 0}


def test_what_separates_people_more_than_the_task_gets_nothing(study):
    _, recs = study
    fitted = fit_training_fold(recs, range(len(recs)), task="task", protect="participant")
    dropped = fitted.protect_separability >= fitted.task_separability
    assert dropped.any() and not dropped.all()
    assert np.all(fitted.weights[dropped] == 0) and np.all(fitted.weights[~dropped] > 0)
    # without a protected column every feature that separates the task gets a share
    free = fit_training_fold(recs, range(len(recs)), task="task")
    assert free.protect is None and free.released.sum() > fitted.released.sum()
    # and the fitted split beats an equal one on its own objective
    assert fitted.loss() < fitted.loss(np.ones(len(FEATURE_NAMES)))


def test_the_rows_are_those_streamdp_features_writes(study, tmp_path):
    root, recs = study
    rows = []
    for rec in recs:
        out = tmp_path / f"{rec.name}.npz"
        folder = root / f"p{rec.participant[1:]}{rec.task}"
        assert main(["features", str(folder), "--out", str(out), "-q"]) == 0
        rows.append(np.load(out)["values"])
    by_file = fit_weights(rows, [_labels(r) for r in recs], task="gender")
    fitted, _ = fit_manifest(root / "manifest.csv", task="gender")
    assert np.array_equal(by_file.weights, fitted.weights)


def test_a_training_fold_never_reads_the_test_fold(study):
    _, recs = study
    for person, train, test in lopo_splits([r.participant for r in recs]):
        fitted = fit_training_fold(recs, train, task="task", protect="participant")
        assert fitted.recordings == len(train) and fitted.participants == PEOPLE - 1
        # the test recordings replaced by rows that cannot be read (NaN) and labels of a class no
        # training recording has: the fold's fit is the same, bit for bit
        poisoned = list(recs)
        for i in test:
            r = recs[i]
            poisoned[i] = replace(r, features=np.full_like(r.features, np.nan), participant="X", task="leak")
        again = fit_training_fold(poisoned, train, task="task", protect="participant")
        for f in fields(FittedWeights):
            a, b = getattr(fitted, f.name), getattr(again, f.name)
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, (person, f.name)
        # the same poison in the training fold is read (and refused)
        with pytest.raises(ValueError, match="rows must be finite"):
            fit_training_fold(poisoned, test, task="task")
        # changed test rows that could be read would have changed a fit that read them
        moved = [replace(r, features=r.features * 3.0) if i in test else r for i, r in enumerate(recs)]
        assert not np.array_equal(fit_training_fold(moved, range(len(recs)), task="task").weights,
                                  fit_training_fold(recs, range(len(recs)), task="task").weights)  # fmt: skip


def test_the_fitted_object_holds_no_row(study):
    _, recs = study
    fitted = fit_training_fold(recs, range(len(recs)), task="task", protect="participant")
    arrays = {f.name: getattr(fitted, f.name) for f in fields(FittedWeights)}
    assert all(a.shape == (len(FEATURE_NAMES),) for a in arrays.values() if isinstance(a, np.ndarray))
    every_row = np.concatenate([r.features for r in recs])
    for a in (a for a in arrays.values() if isinstance(a, np.ndarray)):
        assert not (every_row == a).all(axis=1).any()
    # its size does not grow with the rows it was fitted on
    longer = [replace(r, features=np.tile(r.features, (4, 1))) for r in recs]
    big = fit_training_fold(longer, range(len(recs)), task="task", protect="participant")
    assert abs(len(pickle.dumps(big)) - len(pickle.dumps(fitted))) < 64


#: command lines refused with exit status 2, one line naming the input and the problem, nothing
#: written: (arguments after the manifest, or None for no manifest; the manifest's lines; message)
MANIFEST = "recording,participant,task,gender,site\n" + "".join(
    f"p{p}{t},P{p},{t},{'fm'[p % 2]},kiel\n" for p in range(PEOPLE) for t in TASKS
)
ONE_CLASS = "recording,participant,task\n" + "".join(f"p{p}reading,P{p},reading\n" for p in range(PEOPLE))
ONE_OF_A_CLASS = "recording,participant,task\np0reading,P0,reading\np1reading,P1,reading\np0search,P0,search\n"
BAD_LINES = {
    "no-manifest": (None, MANIFEST, "give the MANIFEST of labelled recordings"),
    "no-task": ([], MANIFEST, "--task: give the manifest column"),
    "task-column-missing": (["--task", "age"], MANIFEST, "manifest.csv: no column 'age' to task"),
    "protect-column-missing": (["--task", "task", "--protect", "person"], MANIFEST,
                               "manifest.csv: no column 'person' to protect"),
    "protect-is-task": (["--task", "task", "--protect", "task"], MANIFEST, "--protect task: the protected column"),
    "one-class": (["--task", "task"], ONE_CLASS, "manifest.csv: column 'task' has one class only ('reading')"),
    "one-recording-of-a-class": (["--task", "task"], ONE_OF_A_CLASS,
                                 "manifest.csv: column 'task': class 'search' has 1 recording"),
    "protect-one-class": (["--task", "task", "--protect", "site"], MANIFEST,
                          "column 'site' has one class only ('kiel'): there is no one to protect"),
    "gender-is-who-you-are": (["--task", "gender", "--protect", "participant"], MANIFEST,
                              "manifest.csv: no feature separates 'gender' more than 'participant'"),
    "missing-recording": (["--task", "task"], MANIFEST + "gone,P9,search,f,kiel\n", "recording 'gone' does not exist"),
    "no-such-manifest": (["--task", "task"], None, "cannot read manifest"),
    "unread-option": (["--task", "task", "--seed", "2"], MANIFEST, "streamdp fit-weights does not read seed"),
    "bad-out": (["--task", "task", "--out", "w.txt"], MANIFEST, "unknown extension '.txt'"),
    "mechanism-refuses-k": (["--task", "task", "--mechanism", "lpa", "--k", "2"], MANIFEST, "does not take"),
    "empty-name": (["--task", "task", "--name", " "], MANIFEST, "--name: give a non-empty name"),
    # a configuration would take the file for the shipped allocation of that name
    "a-shipped-name": (["--task", "task", "--out", "task.json"], MANIFEST, "name 'task' is a shipped allocation's"),
}  # fmt: skip


@pytest.mark.parametrize(("args", "manifest", "message"), BAD_LINES.values(), ids=BAD_LINES.keys())
def test_bad_command_lines_are_refused_naming_the_problem(study, tmp_path, monkeypatch, capsys, args, manifest,
                                                          message):  # fmt: skip
    root, _ = study
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "manifest.csv"
    if manifest is not None:
        path.write_text(manifest.replace("\np", f"\n{root}/p"))
    argv = ["fit-weights", *([] if args is None else [str(path), *args])]
    if args is None:
        argv += ["--task", "task"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamdp fit-weights: error: ") and err.count("\n") == 1, err
    assert message in err and "Traceback" not in err
    assert not {"weights.json", "w.txt", "task.json"} & {p.name for p in tmp_path.iterdir()}


def _fit(**change):
    rng = np.random.default_rng(0)
    call = {
        "rows_by_recording": [rng.uniform(0.0, 1.0, (30, 52)) + i % 2 for i in range(4)],
        "labels": [{"task": "ab"[i % 2], "participant": f"P{i // 2}"} for i in range(4)],
        "task": "task",
    }
    call.update(change)
    rows, labels = call.pop("rows_by_recording"), call.pop("labels")
    return fit_weights(rows, labels, **call)


BAD_CALLS = {
    "task-not-str": (dict(task=3), TypeError, "task must be a column name"),
    "protect-not-str": (dict(protect=["participant"]), TypeError, "protect must be a column name"),
    "protect-is-task": (dict(protect="task"), ValueError, "protect must be another column"),
    "empty-task": (dict(task=""), ValueError, "task must not be empty"),
    "rows-not-a-sequence": (dict(rows_by_recording=np.ones((4, 30, 52))), TypeError, "must be a sequence"),
    "labels-count": (dict(labels=[{"task": "a"}]), ValueError, "1 for 4 recordings"),
    "rows-shape": (dict(rows_by_recording=[np.ones((30, 51))] * 4), ValueError, r"recording 0: rows must be \(steps"),
    "rows-empty": (dict(rows_by_recording=[np.ones((0, 52))] * 4), ValueError, "recording 0: rows must be"),
    "label-not-mapping": (dict(labels=["a", "b", "a", "b"]), TypeError, r"labels\[0\] must be a mapping"),
    "column-missing": (dict(protect="gender"), InputError, "recording 0 has no column 'gender'"),
    "config-not-config": (dict(config={"mechanism": "lpa"}), TypeError, "config must be a SessionConfig"),
}  # fmt: skip


@pytest.mark.parametrize(("change", "error", "message"), BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_bad_calls_are_refused_naming_the_parameter(change, error, message):
    with pytest.raises(error, match=message):
        _fit(**change)


def test_a_fold_index_out_of_range_is_refused(study):
    _, recs = study
    with pytest.raises(ValueError, match=r"train must be distinct indices in \[0, 8\)"):
        fit_training_fold(recs, [0, 8], task="task")
    with pytest.raises(TypeError, match="train must hold indices"):
        fit_training_fold(recs, [0.5, 1], task="task")


VALID = weights_document({"fixation_rate": 2.0, "blink_rate": 1.0}, name="mine")
BAD_FILES = {
    "not-json": ("{", "not valid JSON"),
    "a-list": ("[]", "expected a JSON object, got list"),
    "other-format": (json.dumps({**VALID, "format": "bounds"}), "format is 'bounds', expected 'streamdp-weights'"),
    "version-2": (json.dumps({**VALID, "version": 2}), "version 2 of streamdp-weights"),
    "version-text": (json.dumps({**VALID, "version": "1"}), "version '1' of streamdp-weights"),
    "version-true": (json.dumps({**VALID, "version": True}), "version True of streamdp-weights"),
    "no-weights": (json.dumps({"format": WEIGHTS_FORMAT, "version": 1}), "has no weights"),
    "weights-a-list": (json.dumps({**VALID, "weights": [1.0] * 52}), "weights must be a table"),
    "unknown-feature": (json.dumps({**VALID, "weights": {"fixation_rte": 1.0}}), "unknown feature(s) 'fixation_rte'"),
    "negative": (json.dumps({**VALID, "weights": {"blink_rate": -1.0}}), "weight of blink_rate is -1.0"),
    "nan": ('{"format": "streamdp-weights", "version": 1, "weights": {"blink_rate": NaN}}', "not a finite number"),
    "text-weight": (json.dumps({**VALID, "weights": {"blink_rate": "1"}}), "weight of blink_rate is '1', not a number"),
    "bool-weight": (json.dumps({**VALID, "weights": {"blink_rate": True}}), "is True, not a number"),
    "all-zero": (json.dumps({**VALID, "weights": {"blink_rate": 0.0}}), "every weight is 0"),
    "empty-name": (json.dumps({**VALID, "name": ""}), "name must be a non-empty string"),
}  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_weights_file_is_refused_naming_the_file_and_the_problem(tmp_path, text, message):
    path = tmp_path / "w.json"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_weights_file(path)
    assert str(caught.value).startswith(str(path)) and message in str(caught.value), caught.value


def test_the_loader_fills_unlisted_features_and_names_the_file(tmp_path):
    path = tmp_path / "short-list.json"
    path.write_text(json.dumps({"format": WEIGHTS_FORMAT, "version": 1, "weights": {"blink_rate": 3}}))
    name, weights = load_weights_file(str(path))
    assert name == "short-list" and weights["blink_rate"] == 3.0 and sum(weights.values()) == 3.0
    with pytest.raises(InputError, match="no such weights file"):
        load_weights_file(tmp_path / "none.json")
    with pytest.raises(TypeError, match="path must be a str or path"):
        load_weights_file(3)  # type: ignore[arg-type]


def test_the_recordings_read_on_worker_processes_give_the_fit_read_here(study, tmp_path, caplog):
    """``fit_manifest`` reads each recording on a process of its own: the rows come back in the
    manifest's order (the fit is the same, bit for bit, on 1 or 3 workers), a recording too short
    is said once, here, where the caller's logging is, and a recording that cannot be read is
    refused by name from the worker."""
    root, _ = study
    manifest = root / "manifest.csv"
    short = generate(duration=10.0, rate=100.0, seed=99, person=0, task="reading").recording
    write_capture_recording(short, tmp_path / "short")
    wild = generate(duration=SECONDS, rate=100.0, seed=98, person=1, task="search").recording
    x = wild.gaze.x.copy()
    x[100] = 50.0  # 50 scene widths off: left out by the reader, which says so
    write_capture_recording(replace(wild, gaze=replace(wild.gaze, x=x)), tmp_path / "wild")
    header, *rest = manifest.read_text().splitlines()
    lines = [header, *(f"{root / line.split(',', 1)[0]},{line.split(',', 1)[1]}" for line in rest)]
    with_short = tmp_path / "with_short.csv"
    added = [f"{tmp_path / 'short'},P0,reading,f,kiel", f"{tmp_path / 'wild'},P1,search,m,kiel"]
    with_short.write_text("\n".join([*lines, *added]) + "\n")
    here, _ = fit_manifest(with_short, task="task", protect="participant", workers=1)
    said_here = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    caplog.clear()
    spread, _ = fit_manifest(with_short, task="task", protect="participant", workers=3)
    for f in fields(FittedWeights):
        a, b = getattr(here, f.name), getattr(spread, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name
    # what the workers logged is said here, by the same loggers, as reading here says it
    said = [(r.name, r.levelno, r.getMessage()) for r in caplog.records]
    assert sorted(said) == sorted(said_here)
    assert [m for *_, m in said if "feature steps" in m] == ["skipped short: only 0 feature steps"]
    assert [m for *_, m in said if m.startswith(str(tmp_path / "wild"))], said
    (tmp_path / "empty").mkdir()  # there, but no recording
    broken = tmp_path / "broken.csv"
    broken.write_text("\n".join([*lines, f"{tmp_path / 'empty'},P0,reading,f,kiel"]) + "\n")
    with pytest.raises(InputError, match="empty"):
        fit_manifest(broken, task="task", workers=2)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True], ids=["zero", "negative", "float", "bool"])
def test_fit_manifest_refuses_a_worker_count_that_is_not_a_count(study, workers):
    root, _ = study
    with pytest.raises(ValueError, match=f"workers must be an int ≥ 1 or None, got {workers!r}"):
        fit_manifest(root / "manifest.csv", task="task", workers=workers)
