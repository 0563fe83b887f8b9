"""``streamdp evaluate --channel gaze``: the files, the measures' direction, the attack's strength,
and that the evaluation releases what a session releases."""

from __future__ import annotations

import csv
import itertools
import json

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.config.session_config import GAZE_SEED_OFFSET
from streamdp.kernels.geometry import norm_to_degrees
from streamdp.offline.evaluate_gaze import GazePoint, evaluate_gaze, gaze_grid, path_errors
from streamdp.offline.gaze_measures import pursuit_error
from streamdp.offline.gaze_report import GAZE_RESULT_KEYS
from streamdp.offline.gaze_study import (
    check_filter,
    gaze_study,
    halves,
    midpoint,
    sanitize_stream,
    smooth,
    split_features,
    tick_stream,
    ticks_recording,
)
from streamdp.privacy import secure_generator
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def tasks_only():
    """Three people's dwell and pursuit tasks, no re-identification recordings."""
    return gaze_study(3, seed=0, trials=6, pursuit_s=6.0, reid=False)


def _mean(rows, **match):
    per_seed: dict[int, list[float]] = {}
    for r in rows:
        if all(r[k] == v for k, v in match.items()):
            per_seed.setdefault(r["seed"], []).append(r["value"])
    assert per_seed, match
    return float(np.mean([np.mean(v) for v in per_seed.values()]))


def test_a_tiny_run_writes_the_files_with_the_expected_columns(tmp_path, capsys):
    out = tmp_path / "gaze"
    argv = [
        "evaluate",
        "--channel",
        "gaze",
        "--people",
        "2",
        "--seconds",
        "70",
        "--trials",
        "3",
        "--pursuit-seconds",
        "4",
        "--tick-epsilons",
        "0.5",
        "4",
        "--gaze-windows",
        "30",
        "--seeds",
        "1",
        "--filters",
        "median5",
        "--workers",
        "1",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    names = {p.name for p in out.iterdir()}
    assert {"results.csv", "results.md", "evaluation.json"} <= names
    assert {"error_vs_epsilon.png", "dwell_vs_epsilon.png", "reidentification_vs_epsilon.png"} <= names
    with open(out / "results.csv") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == GAZE_RESULT_KEYS
        rows = list(reader)
    assert {r["mechanism"] for r in rows} == {"raw-ticks", "raw-gaze", "geo-uniform", "geo-bd"}
    assert {r["filter"] for r in rows} == {"none", "median5"}
    assert {
        "error_median",
        "error_p95",
        "dwell_accuracy",
        "dwell_time_s",
        "pursuit_median",
        "pursuit_p95",
        "reidentification",
        "epsilon_spent_tick",
    } == {r["metric"] for r in rows}
    assert {r["target"] for r in rows if r["metric"] == "error_median"} == {"has_gaze", "all"}
    assert {r["classifier"] for r in rows if r["metric"] == "reidentification"} == {"knn", "svm", "tree", "forest"}
    md = (out / "results.md").read_text()
    for title in (
        "## As released",
        "## After the public filter median5",
        "## Re-identification",
        "## Against the targets",
    ):
        assert title in md
    assert capsys.readouterr().out == md + "\n"
    meta = json.loads((out / "evaluation.json").read_text())
    assert meta["study"]["people"] == 2 and meta["study"]["filters"] == ["none", "median5"]
    assert meta["config"]["seed"] is None


def test_error_falls_as_epsilon_grows_and_raw_ticks_have_none(tasks_only):
    eps = (0.25, 1.0, 4.0)
    grid = [GazePoint("raw-ticks"), *gaze_grid(["geo-uniform", "geo-bd"], eps, [60])[2:]]
    rows = evaluate_gaze(tasks_only, grid, seeds=2, reid=False, filters=["median5"])
    assert not any(r["metric"] == "reidentification" for r in rows)
    raw = {"mechanism": "raw-ticks", "filter": "none"}
    assert _mean(rows, **raw, metric="error_median", target="all") == 0.0
    assert _mean(rows, **raw, metric="error_p95", target="all") == 0.0
    assert _mean(rows, **raw, metric="dwell_accuracy") >= 0.8
    for mech in ("geo-uniform", "geo-bd"):
        for filt in ("none", "median5"):
            err = [
                _mean(rows, mechanism=mech, epsilon_tick=e, filter=filt, metric="error_median", target="has_gaze")
                for e in eps
            ]
            assert all(b <= a * 1.1 for a, b in itertools.pairwise(err)), (mech, filt, err)
            assert err[-1] < err[0] / 3, (mech, filt, err)
        spent = [_mean(rows, mechanism=mech, epsilon_tick=e, metric="epsilon_spent_tick") for e in eps]
        assert all(s <= e * (1 + 1e-9) for s, e in zip(spent, eps, strict=True))  # never more than ε_w/w on average
    # geo-uniform's dwell selection recovers with ε (and with the filter)
    dwell = [_mean(rows, mechanism="geo-uniform", epsilon_tick=e, filter="none", metric="dwell_accuracy") for e in eps]
    assert dwell[0] <= dwell[-1] and dwell[-1] >= 0.8


def test_workers_change_when_the_rows_come_never_what_they_are(tasks_only):
    grid = [GazePoint("raw-ticks"), *gaze_grid(["geo-uniform", "geo-bd"], (1.0,), [60])]
    here = evaluate_gaze(tasks_only, grid, seeds=2, reid=False, workers=1)
    pooled = evaluate_gaze(tasks_only, grid, seeds=2, reid=False, workers=2)
    assert len(here) > 10  # the same rows, in job order, bit for bit (json: a NaN 'chance' equals itself)
    assert json.dumps(here) == json.dumps(pooled)


def test_reidentification_from_raw_features_of_distinct_people_beats_chance():
    study = gaze_study(3, 90.0, seed=0, trials=2, pursuit_s=3.0)
    rows = evaluate_gaze(study, [GazePoint("raw-gaze"), GazePoint("raw-ticks")], seeds=1)
    chance = 1.0 / 3.0
    assert {r["chance"] for r in rows if r["metric"] == "reidentification"} == {chance}
    gaze = _mean(rows, mechanism="raw-gaze", metric="reidentification", voting="no")
    ticks = _mean(rows, mechanism="raw-ticks", metric="reidentification", voting="no")
    assert gaze > chance + 0.25, gaze
    assert ticks > chance, ticks
    assert _mean(rows, mechanism="raw-gaze", metric="reidentification", voting="yes") > chance + 0.25


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_the_evaluation_releases_what_a_session_releases(mechanism):
    rec = generate(duration=6.0, rate=120.0, seed=3, person=1).recording
    cfg = SessionConfig(gaze_channel=True, gaze_mechanism=mechanism, gaze_epsilon=30.0, gaze_w=60, seed=5)
    sink = CollectingSink(accepts_gaze=True)
    Session.for_recording(cfg, rec, sinks=[sink]).run(rec)
    fov = cfg.event_config(rec.camera).fov_deg
    stream = tick_stream(rec.gaze, cfg, fov)
    point = GazePoint(mechanism, 0.5, 60)
    values, spent = sanitize_stream(stream, point.instance(cfg), secure_generator(5 + GAZE_SEED_OFFSET))
    assert np.array_equal(np.concatenate([r.t for r in sink.ticks]), stream.ticks.t)
    # the session applies the configured public median on the device; the evaluation, to the same
    # released positions, as an app would (the same function)
    assert cfg.gaze_smoothing == "median5"
    assert np.array_equal(np.concatenate([r.values[:, :2] for r in sink.ticks]), smooth(values, cfg.gaze_smoothing))
    assert np.array_equal([r.ledger["epsilon_tick_per_degree"] for r in sink.ticks], spent)


def test_released_ticks_reach_the_attacker_as_the_channel_publishes_them():
    rec = generate(duration=80.0, rate=120.0, seed=2, person=0).recording
    cfg = SessionConfig()
    fov = cfg.event_config(None).fov_deg
    ticks = tick_stream(rec.gaze, cfg, fov).ticks
    noisy = ticks.deg + np.random.default_rng(1).laplace(0.0, 1.0, ticks.deg.shape)
    gaze = ticks_recording(ticks.t, noisy, fov, "r").gaze
    back = np.column_stack(norm_to_degrees(gaze.x, gaze.y, fov))
    assert np.allclose(back, noisy, atol=1e-9)
    assert np.all(gaze.confidence == 1.0) and np.all(gaze.valid) and np.all(np.isnan(gaze.diameter))
    # the halves share no sample, and no feature window holds gaze of both
    mid = midpoint(ticks.t)
    first, second = halves(rec, mid)
    assert first.gaze.t[-1] <= mid < second.gaze.t[0]
    assert len(first.gaze) + len(second.gaze) == len(rec.gaze)
    t_tr, x_tr, t_te, x_te = split_features(rec, mid, cfg)
    assert len(t_tr) and len(t_te) and x_tr.shape[1] == x_te.shape[1] == 52
    assert t_tr[-1] <= mid and t_te[0] - cfg.window >= second.gaze.t[0] - 1e-9


def test_the_filters_are_causal_and_named():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2))
    later = x.copy()
    later[30:] += 100.0
    for name in ("median5", "mean9", "median2"):
        assert np.array_equal(smooth(x, name)[:30], smooth(later, name)[:30])
        assert smooth(x, name).shape == x.shape
    assert smooth(x, "none") is x
    assert np.allclose(smooth(np.ones((4, 2)), "mean3"), 1.0)
    for bad in ("median1", "median", "gauss5", "mean601"):
        with pytest.raises(ValueError, match="filter must be"):
            check_filter(bad)


def test_pursuit_errors_are_those_of_the_measure(tasks_only):
    task, stream = tasks_only.pursuit[0], tasks_only.pursuit_streams[0]
    err = path_errors(stream.ticks.t, stream.ticks.deg, task.target_t, task.target_deg)
    summary = pursuit_error(stream.ticks.t, stream.ticks.deg, task.target_t, task.target_deg)
    assert np.isclose(np.median(err), summary.median) and np.isclose(np.percentile(err, 95), summary.p95)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--channel", "gaze", "--mechanisms", "lpa"], "--mechanisms applies to --channel features"),
        (["--channel", "gaze", "--split", "both"], "--split applies to --channel features"),
        (["--tick-epsilons", "1"], "--tick-epsilons applies to --channel gaze"),
        (["--no-reid"], "--no-reid applies to --channel gaze"),
        (["--channel", "gaze", "--filters", "blur3"], "--filters: filter must be none, median<k> or mean<k>"),
        (["--channel", "gaze", "--tick-epsilons", "0.0001"], "geo-uniform at ε 0.0001 per tick, w = 60: "),
        (["--channel", "gaze", "--seconds", "40"], "--seconds 40: re-identification needs ≥ 70 s"),
    ],
)
def test_evaluate_refuses_options_of_the_other_channel_before_any_work(tmp_path, capsys, argv, message):
    out = tmp_path / "eval"
    assert main(["evaluate", "--out", str(out), "--quiet", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()
