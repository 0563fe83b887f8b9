"""``evaluate --fit-weights`` (issue #21 item 2): each training fold's releases split ε by weights
fitted on that fold alone. The rows name each fold's weights by digest, and a changed test fold
(recordings, labels, steps) leaves the weights of its fold unchanged while a changed training fold
changes them; the digests are those the releases' ledgers state; the rows are the same on local
processes and on a dask cluster; the table says so."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("sklearn")

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.offline.evaluate import (
    EvaluationPlan,
    GridPoint,
    chunked_split,
    evaluate,
    feature_signals,
    sanitize,
    synthetic_study,
)
from streamdp.offline.fold_weights import fit_folds
from streamdp.offline.results import markdown_table

GRID = [GridPoint("none", 0.0, 16), GridPoint("dcfpa", 25.0, 16)]


@pytest.fixture(scope="module")
def run():
    """Three synthetic people reading and searching, and the rows of ``evaluate(fit_weights=True)``."""
    study = feature_signals(synthetic_study(people=3, seconds=150.0))
    return study, evaluate(study, GRID, progress=False, fit_weights=True)


def _folds(rows, metric, target=None):
    """The fold → digest of the rows of one measure (all its rows name the same); ``target``
    None: any (the utility's task labels)."""
    said = {r["fold_weights"] for r in rows if r["mechanism"] == "dcfpa" and r["metric"] == metric
            and target in (None, r["target"])}  # fmt: skip
    assert len(said) == 1, said
    return dict(item.split(":") for item in said.pop().split())


def test_rows_say_the_weights_were_fitted_and_differ_from_the_configured(run):
    study, fitted = run
    # the configured split: equal (at ε 25 the default task allocation funds the one feature the
    # folds' fits fund, so its releases are theirs)
    plain = evaluate(study, GRID, progress=False, config=SessionConfig(weights="equal"))
    assert [{k: r[k] for k in ("mechanism", "metric", "target", "classifier", "voting")} for r in fitted] == [
        {k: r[k] for k in ("mechanism", "metric", "target", "classifier", "voting")} for r in plain
    ]
    assert all("weights" not in r for r in plain)
    assert {(r["mechanism"], r["weights"]) for r in fitted} == {("none", "-"), ("dcfpa", "fitted")}
    # no noise, nothing fitted: the same rows; with noise, other releases
    none = [{**r, "weights": "-", "fold_weights": "-"} for r in plain if r["mechanism"] == "none"]
    assert json.dumps(none) == json.dumps([r for r in fitted if r["mechanism"] == "none"])
    noisy = [(a["value"], b["value"]) for a, b in zip(fitted, plain, strict=True) if a["mechanism"] == "dcfpa"]
    assert sum(a != b for a, b in noisy) > len(noisy) // 2
    assert set(_folds(fitted, "task", "task")) == {"P0", "P1", "P2"}
    assert set(_folds(fitted, "reidentification", "chunked")) == {"chunked"}
    # the utility: each person's recordings as the fold without them releases them
    assert _folds(fitted, "utility") == _folds(fitted, "task", "task")
    table = markdown_table(fitted)
    assert "| weights |" in table and "| dcfpa | 16 | 25 | 25 | fitted on the training fold |" in table
    assert "Weights fitted on the training fold: each fold's releases split ε as fitted on that fold's" in table


def test_a_changed_test_fold_leaves_its_folds_weights_unchanged(run):
    study, fitted = run
    # P0's recordings: other rows and the other task label. The fold that tests P0 never saw them,
    # every fold that trains on them did
    changed = [replace(r, features=r.features * 1.3, task={"reading": "search", "search": "reading"}[r.task])
               if r.participant == "P0" else r for r in study]  # fmt: skip
    again = evaluate(changed, GRID, progress=False, fit_weights=True)
    before, after = _folds(fitted, "task", "task"), _folds(again, "task", "task")
    assert after["P0"] == before["P0"]
    assert after["P1"] != before["P1"] and after["P2"] != before["P2"]
    # re-identification's chunked fold: every recording's training steps; a test step changed
    # changes nothing, a training step changed changes the weights
    config = SessionConfig()
    parts = sanitize(study, "none", 0.0, 16, 0, config)
    cuts = [chunked_split(p.t, p.chunk, config.window_config().window) for p in parts]
    assert all(len(train) and len(test) for train, test in cuts)

    def moved(side):
        out = []
        for rec, part, cut in zip(study, parts, cuts, strict=True):
            rows = rec.features.copy()
            rows[np.searchsorted(rec.t if rec.t is not None else np.arange(len(rows)) * 0.5, part.t[cut[side]])] *= 1.3
            out.append(replace(rec, features=rows))
        return out

    plan = EvaluationPlan()
    chunked = fit_folds(study, GRID, config, plan)["dcfpa", 16, 25.0].chunked
    assert chunked is not None and _folds(fitted, "reidentification", "chunked")["chunked"] == chunked.digest
    assert fit_folds(moved(1), GRID, config, plan)["dcfpa", 16, 25.0].chunked == chunked
    # the fit for ε 25 funds one feature here (its whole share: 1.0 whatever the rows), so the
    # training step's effect is read on the continuous split, the fit that ignores ε
    plain = fit_folds(study, GRID, config, plan, epsilon_aware=False)["dcfpa", 16, 25.0].chunked
    assert fit_folds(moved(1), GRID, config, plan, epsilon_aware=False)["dcfpa", 16, 25.0].chunked == plain
    assert fit_folds(moved(0), GRID, config, plan, epsilon_aware=False)["dcfpa", 16, 25.0].chunked != plain


def test_the_digest_is_what_the_releases_ledgers_state(run):
    study, fitted = run
    folds = fit_folds(study, GRID, SessionConfig(), EvaluationPlan())["dcfpa", 16, 25.0]
    assert {p: t.digest for p, t in folds.lopo["task"].items()} == _folds(fitted, "task", "task")
    weights = folds.lopo["task"]["P1"]
    privatizer = GRID[1].config(replace(SessionConfig(), weights=weights)).chunk_privatizer(0)
    from streamdp.stages.features import FeatureRows

    rec = study[0]
    t = rec.t if rec.t is not None else np.arange(len(rec.features)) * 0.5
    releases = privatizer.update(FeatureRows(t, rec.features)) + privatizer.flush()
    assert releases and {r.ledger["weights_digest"] for r in releases} == {weights.digest}
    assert {r.ledger["weights"] for r in releases} == {"fitted"}


def test_cross_session_and_every_task_column_are_fitted_per_fold(run):
    study, _ = run
    # each synthetic person reads, then searches: a cross-session fold trains on one task only
    with pytest.raises(InputError, match=r"training fold cross-session 1 \('task', protecting 'participant'\): column "
                                         r"'task' has one class only"):  # fmt: skip
        evaluate(study, GRID, progress=False, fit_weights=True, splits=("cross-session",))
    # two sessions of both tasks each: every fold can be fitted
    twice = [replace(r, name=f"{r.name}-{s}", features=r.features * (1.0 + 0.05 * s)) for s in (0, 1) for r in study]
    twice = sorted(twice, key=lambda r: (r.participant, r.name))
    rows = evaluate(twice, GRID[1:], progress=False, fit_weights=True, splits=("chunked", "cross-session"),
                    tasks=("task",))  # fmt: skip
    cross = _folds(rows, "reidentification", "cross-session")  # each person's 4 recordings: 4 folds
    assert set(cross) == {f"session{j}" for j in (1, 2, 3, 4)}
    # each fold fitted on its own training recordings: the continuous split (the fit that ignores ε;
    # at ε 25 each fold funds the same one feature, share 1.0) differs from fold to fold
    folds = fit_folds(twice, GRID[1:], SessionConfig(), EvaluationPlan(splits=("cross-session",), tasks=("task",)),
                      epsilon_aware=False)["dcfpa", 16, 25.0]  # fmt: skip
    assert len({t.digest for t in folds.cross_session}) == 4
    with pytest.raises(TypeError, match="fit_weights must be a bool"):
        evaluate(study, GRID, progress=False, fit_weights="yes")


def test_workers_and_a_dask_cluster_give_the_same_rows(run):
    study, fitted = run
    distributed = pytest.importorskip("distributed")
    two = evaluate(study, GRID, progress=False, fit_weights=True, workers=2)
    assert json.dumps(two) == json.dumps(fitted)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:  # fmt: skip
        on_dask = evaluate(study, GRID, progress=False, fit_weights=True, executor="dask", scheduler=cluster)
    assert json.dumps(on_dask) == json.dumps(fitted)


def test_the_command_line_fits_on_each_fold_and_writes_the_column(tmp_path, capsys):
    argv = ["evaluate", "--people", "3", "--seconds", "150", "--mechanisms", "dcfpa", "--epsilons", "25",
            "--chunk-lengths", "16", "--seeds", "1", "--workers", "1", "-q"]  # fmt: skip
    assert main([*argv, "--fit-weights", "--out", str(tmp_path / "ev")]) == 0
    header = (tmp_path / "ev" / "results.csv").read_text().splitlines()[0].split(",")
    assert header[-2:] == ["weights", "fold_weights"]
    assert "fitted on the training fold" in (tmp_path / "ev" / "results.md").read_text()
    capsys.readouterr()
    assert main([*argv, "--fit-weights", "--weights", "equal", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("streamdp evaluate: error: --fit-weights and --weights") and err.count("\n") == 1
    assert not (tmp_path / "x").exists()
