"""An allocation fitted for the ε it will run at (issue #36 item 1): how many features to fund is
chosen by an inner cross-validation on the training recordings alone, grouped by person; the inner
folds never see a test person, recording or step; a task column without signal funds nothing above
chance; a protected column keeps its role; the weights file states the ε and k and a session at
another ε says so in one line."""

from __future__ import annotations

import json
import logging
import pickle
from dataclasses import replace

import numpy as np
import pytest

import streamdp.offline.fit_weights as fit_module
from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.offline.epsilon_fit import inner_folds
from streamdp.offline.evaluate import (
    EvaluationPlan,
    GridPoint,
    LabelledRecording,
    chunked_split,
    feature_signals,
    sanitize,
    synthetic_study,
)
from streamdp.offline.fit_weights import fit_training_fold, fit_weights
from streamdp.offline.fold_weights import fit_folds
from streamdp.privacy.weights_file import WeightsTable
from streamdp.schema import FEATURE_NAMES

PEOPLE, ROWS = 8, 60
#: the feature that carries the task, and one that carries the person more than the task
TASK_FEATURE, PERSON_FEATURE = 3, 7


def _rows(seed: int = 0, *, task_shift: float = 0.25) -> tuple[list[np.ndarray], list[dict[str, str]]]:
    """Two recordings (tasks a, b) of each of ``PEOPLE`` people, inside the default bounds: every
    feature noise around the middle of its range, ``TASK_FEATURE`` shifted by the task and
    ``PERSON_FEATURE`` by the person (and a little by the task)."""
    bounds = SessionConfig().bounds_profile()
    rng = np.random.default_rng(seed)
    rows, labels = [], []
    for p in range(PEOPLE):
        for j, task in enumerate("ab"):
            z = 0.4 + 0.05 * rng.standard_normal((ROWS, len(FEATURE_NAMES)))
            z[:, TASK_FEATURE] += task_shift * j
            z[:, PERSON_FEATURE] += 0.06 * p + 0.05 * j
            rows.append(bounds.lo + np.clip(z, 0.0, 1.0) * (bounds.hi - bounds.lo))
            labels.append({"participant": f"P{p}", "task": task})
    return rows, labels


def _recordings(rows, labels) -> list[LabelledRecording]:
    return [LabelledRecording(f"r{i}", lab["participant"], lab["task"], x) for i, (x, lab) in
            enumerate(zip(rows, labels, strict=True))]  # fmt: skip


CONFIG = SessionConfig(mechanism="dcfpa", chunk_length=32)


def test_the_inner_folds_hold_out_whole_people_and_never_see_the_outer_test_person():
    rows, labels = _rows()
    recs = _recordings(rows, labels)
    train = [i for i, r in enumerate(recs) if r.participant != "P0"]
    fitted = fit_training_fold(recs, train, task="task", protect="participant", config=CONFIG, epsilon=24.96)
    fit = fitted.epsilon_fit
    assert fit is not None and fit.groups == "participant" and len(fit.splits) == PEOPLE - 1
    kept = sorted(train)  # the fit's recordings, in the order it was given them
    held = []
    for inner_train, inner_test in fit.splits:
        train_people = {recs[kept[i]].participant for i in inner_train}
        test_people = {recs[kept[i]].participant for i in inner_test}
        assert "P0" not in train_people | test_people  # the outer test person: in no inner fold
        assert len(test_people) == 1 and not train_people & test_people  # a person's recordings together
        assert set(inner_train) | set(inner_test) == set(range(len(kept)))
        held += test_people
    assert sorted(held) == [f"P{p}" for p in range(1, PEOPLE)]


def test_inner_folds_deal_many_people_round_robin_and_refuse_one():
    folds = inner_folds([f"P{p:02d}" for p in range(25) for _ in range(2)], folds=10)
    assert len(folds) == 10
    for train, test in folds:
        assert not set(train) & set(test) and len(train) + len(test) == 50
        assert {i // 2 for i in test}.isdisjoint({i // 2 for i in train})
    with pytest.raises(InputError, match="at least 2 people"):
        inner_folds(["P1", "P1"])
    rows, labels = _rows()
    one = [{**lab, "participant": "P0"} for lab in labels[:4]]
    with pytest.raises(TypeError, match="epsilon must be a number"):
        fit_weights(rows, labels, task="task", epsilon="25")
    with pytest.raises(ValueError, match=r"epsilon must be finite and > 0, got 0\.0"):
        fit_weights(rows, labels, task="task", epsilon=0.0)
    with pytest.raises(InputError, match=r"column 'participant' has one person only \('P0'\)"):
        fit_weights(rows[:4], one, task="task", epsilon=24.96)


def test_an_evaluations_folds_give_the_inner_fit_training_rows_only(monkeypatch):
    """Every call of the inner cross-validation during ``evaluate --fit-weights``'s fitting sees the
    rows of its training fold only: a leave-one-person-out fold none of the held-out person's rows,
    the chunked fold each recording's training steps and none of its test steps."""
    recs = feature_signals(synthetic_study(people=3, seconds=150.0))
    seen = []
    real = fit_module.fit_for_epsilon

    def spy(blocks, task, protect, groups, **kwargs):
        seen.append(([np.array(b) for b in blocks], list(groups)))
        return real(blocks, task, protect, groups, **kwargs)

    monkeypatch.setattr(fit_module, "fit_for_epsilon", spy)
    config = SessionConfig()
    fit_folds(recs, [GridPoint("dcfpa", 25.0, 16)], config, EvaluationPlan())
    assert len(seen) == 4  # the three leave-one-person-out folds, then the chunked one
    for blocks, groups in seen[:3]:
        assert len(blocks) == 4 and len(set(groups)) == 2
        out = ({"P0", "P1", "P2"} - set(groups)).pop()
        for x in blocks:
            assert not any(np.array_equal(x, r.features) for r in recs if r.participant == out)
    parts = sanitize(recs, "none", 0.0, 16, 0, config)
    cuts = [chunked_split(p.t, p.chunk, config.window_config().window) for p in parts]
    chunked = seen[3][0]
    assert [len(x) for x in chunked] == [len(train) for train, _ in cuts]
    for x, part, (train, test) in zip(chunked, parts, cuts, strict=True):
        np.testing.assert_array_equal(x, part.clean[train])
        assert not any((x == row).all(axis=1).any() for row in part.clean[test])


def test_a_task_column_without_signal_funds_nothing_above_chance():
    rows, labels = _rows()
    honest = fit_weights(rows, labels, task="task", protect="participant", config=CONFIG, epsilon=24.96)
    fit = honest.epsilon_fit
    assert fit is not None and fit.above_chance and fit.score > 0.75
    assert honest.weights[TASK_FEATURE] > 0 and fit.k == int(honest.released.sum())
    # the task column shuffled: half the people's labels swapped, so no feature carries it
    shuffled = [{**lab, "task": "ba"["ab".index(lab["task"])]} if int(lab["participant"][1:]) % 2 else lab
                for lab in labels]  # fmt: skip
    # protecting the participants, no feature separates it more than them: nothing is funded
    with pytest.raises(InputError, match="no feature separates 'task' more than 'participant'"):
        fit_weights(rows, shuffled, task="task", protect="participant", config=CONFIG, epsilon=24.96)
    # unprotected, features separate it by chance on all the rows; none does on held-out people
    blind = fit_weights(rows, shuffled, task="task", config=CONFIG, epsilon=24.96)
    fit = blind.epsilon_fit
    assert fit is not None and not fit.above_chance
    assert fit.score < fit.chance + 0.1
    assert blind.document(name="blind")["fitted"]["epsilon_fit"]["above_chance"] is False


def test_a_feature_that_separates_people_more_than_the_task_gets_nothing():
    rows, labels = _rows()
    for epsilon in (24.96, 2496.0):
        fitted = fit_weights(rows, labels, task="task", protect="participant", config=CONFIG, epsilon=epsilon)
        assert fitted.weights[PERSON_FEATURE] == 0.0 and fitted.weights[TASK_FEATURE] > 0
    # without the protected column it would be useful
    free = fit_weights(rows, labels, task="task", config=CONFIG)
    assert free.weights[PERSON_FEATURE] > 0


def test_little_epsilon_funds_fewer_features_than_the_fit_for_any_epsilon():
    rows, labels = _rows(task_shift=0.05)
    any_epsilon = fit_weights(rows, labels, task="task", protect="participant", config=CONFIG)
    low = fit_weights(rows, labels, task="task", protect="participant", config=CONFIG, epsilon=5.0)
    assert low.epsilon_fit is not None
    assert int(low.released.sum()) == low.epsilon_fit.k < int(any_epsilon.released.sum())
    assert low.epsilon_fit.scores[low.epsilon_fit.k] == pytest.approx(max(low.epsilon_fit.scores.values()))


def test_the_weights_file_round_trips_its_epsilon_and_k_and_another_epsilon_warns(tmp_path, caplog):
    rows, labels = _rows()
    fitted = fit_weights(rows, labels, task="task", protect="participant", config=CONFIG, epsilon=24.96)
    assert fitted.epsilon_fit is not None
    doc = fitted.document(name="pilot")
    path = tmp_path / "pilot.json"
    path.write_text(json.dumps(doc))
    back = json.loads(path.read_text())["fitted"]
    assert back["epsilon"] == 24.96 and back["epsilon_fit"]["k"] == fitted.epsilon_fit.k
    assert back["epsilon_fit"]["inner_folds"] == PEOPLE and back["epsilon_fit"]["method"].endswith("by participant")
    table = WeightsTable.read(path)
    assert table.epsilon == 24.96 and sum(w > 0 for w in table.weights) == fitted.epsilon_fit.k
    assert pickle.loads(pickle.dumps(table)).epsilon == 24.96
    with caplog.at_level(logging.WARNING):
        replace(CONFIG, weights=str(path), epsilon=24.96).mechanism_instance()
        assert not caplog.records
        replace(CONFIG, weights=str(path), epsilon=124.8).mechanism_instance()
    [record] = caplog.records
    assert record.getMessage() == (f"weights {path} were fitted for ε 24.96 a chunk, and this session spends 124.8: "
                                   "refit them for it (streamdp fit-weights --epsilon 124.8)")  # fmt: skip
    # a file fitted for any ε states none, and warns at none
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(fit_weights(rows, labels, task="task", config=CONFIG).document(name="plain")))
    assert WeightsTable.read(plain).epsilon is None


def test_the_command_fits_for_the_epsilon_given(tmp_path, capsys):
    from streamdp.synthetic import generate

    from .recording_files import write_capture_recording

    lines = ["recording,participant,task"]
    for p in range(3):
        for j, task in enumerate(("reading", "search")):
            rec = generate(duration=60.0, rate=100.0, seed=10 * p + j, person=p, task=task).recording
            write_capture_recording(rec, tmp_path / f"p{p}{task}")
            lines.append(f"p{p}{task},P{p},{task}")
    (tmp_path / "manifest.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "low.json"
    argv = ["fit-weights", str(tmp_path / "manifest.csv"), "--task", "task", "--protect", "participant",
            "--epsilon", "24.96", "--chunk-length", "32", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    said = capsys.readouterr().err
    fitted = json.loads(out.read_text())["fitted"]
    k = fitted["epsilon_fit"]["k"]
    assert fitted["epsilon"] == 24.96 and f"fitted for ε 24.96 a chunk: {k} funded" in said
    assert fitted["released_features"] == k
    # ε above the ceiling: fitted for what is spent
    assert main([*argv[:-4], "--epsilon", "1000", "--out", str(out)]) == 0
    assert json.loads(out.read_text())["fitted"]["epsilon"] == 200.0
