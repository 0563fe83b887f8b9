"""The trade-off as a curve: the Pareto frontier of task accuracy against re-identification across ε,
with no noise, Algorithm 1 and the floor, each point mean ± SE over seeds (issue #36, item 4)."""

from __future__ import annotations

import csv
import io
import itertools
import sys

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.offline.evaluate import Baseline, GridPoint, baseline_points, evaluate, published
from streamdp.offline.frontier import (
    ALG1,
    FLOOR,
    FLOOR_EPSILON,
    FRONTIER_KEYS,
    FrontierPoint,
    clearly_dominates,
    dominates,
    frontier,
    mark_frontier,
)

CLASSIFIERS = ("knn", "svm", "tree", "forest")


def _rows(mechanism, epsilon, seed, task, reid, *, n=32, spread=0.0, **extra):
    """The rows one (point, seed) job gives for the task column and the chunked split: per classifier,
    voted values around ``task``/``reid`` (their mean over the four is exactly it) and per-sample ones
    far away (the frontier must read the voted ones)."""
    offsets = np.array([-1.5, -0.5, 0.5, 1.5]) * spread
    spent = float("nan") if mechanism == "none" else float(epsilon)
    base = {"mechanism": mechanism, "chunk_length": n, "epsilon": float(epsilon), "seed": seed,
            "epsilon_chunk": spent, "postprocess": "no", **extra}  # fmt: skip
    out = []
    for metric, target, value, chance in (("task", "task", task, 0.5), ("reidentification", "chunked", reid, 0.1)):
        for clf, off in zip(CLASSIFIERS, offsets, strict=True):
            out.append({**base, "metric": metric, "target": target, "classifier": clf, "voting": "yes",
                        "value": value + off, "chance": chance})  # fmt: skip
            out.append({**base, "metric": metric, "target": target, "classifier": clf, "voting": "no",
                        "value": 0.01, "chance": chance})  # fmt: skip
    return out


def _point(task, reid, *, epsilon=1.0, mechanism="dcfpa", n=32):
    """A point whose seeds are the items of ``task`` and ``reid`` (lists, one value per seed)."""
    return FrontierPoint(mechanism, "task", "no", n, epsilon, epsilon, dict(enumerate(task)), dict(enumerate(reid)))


def _by(result, mechanism, epsilon=None, n=32):
    (got,) = [p for p in result.points if p.mechanism == mechanism and (epsilon is None or p.epsilon == epsilon)
              and p.chunk_length == n]  # fmt: skip
    return got


# --- dominance on hand-made rows ---------------------------------------------------------------------------------


def test_a_point_better_in_one_measure_and_no_worse_in_the_other_dominates():
    assert dominates(_point([0.9], [0.2]), _point([0.8], [0.2]))  # higher task, same re-ID
    assert dominates(_point([0.8], [0.1]), _point([0.8], [0.2]))  # same task, lower re-ID
    assert not dominates(_point([0.9], [0.3]), _point([0.8], [0.2]))  # a trade, not a domination
    assert not dominates(_point([0.8], [0.2]), _point([0.9], [0.1]))


def test_a_tie_dominates_neither_way_and_both_stay_on_the_frontier():
    a, b = _point([0.75, 0.85], [0.2, 0.3], epsilon=1.0), _point([0.85, 0.75], [0.3, 0.2], epsilon=10.0)
    assert a.task == pytest.approx(b.task) and a.reid == pytest.approx(b.reid)
    assert not dominates(a, b) and not dominates(b, a)
    assert [p.frontier for p in mark_frontier([a, b])] == [True, True]
    # means that differ only by summation order are a tie too
    c = _point([0.1 + 0.2, 0.3], [0.5, 0.5], epsilon=3.0)
    d = _point([0.3, 0.1 + 0.2], [0.5, 0.5], epsilon=4.0)
    assert [p.frontier for p in mark_frontier([c, d])] == [True, True]


def test_the_frontier_of_a_curve_is_its_points_no_other_point_of_it_dominates():
    rows = [r for s, (t1, t2, t3) in enumerate([(0.6, 0.9, 1.0), (0.62, 0.92, 1.0)])
            for e, task, reid in ((1, t1, 0.2), (10, t2, 0.2), (100, t3, 0.5))
            for r in _rows("dcfpa", e, s, task, reid, spread=0.02)]  # fmt: skip
    result = frontier(rows, allocation="task")
    assert [(p.epsilon, p.frontier) for p in result.points] == [(1.0, False), (10.0, True), (100.0, True)]
    # the voted values, averaged over the four classifiers, then mean ± SE over the two seeds
    ten = _by(result, "dcfpa", 10.0)
    assert ten.task == pytest.approx(0.91) and ten.task_se == pytest.approx(np.std([0.9, 0.92], ddof=1) / np.sqrt(2))
    assert ten.reid == pytest.approx(0.2) and ten.reid_se == pytest.approx(0.0, abs=1e-12)
    assert ten.seeds == 2 and ten.allocation == "task"


def test_a_clear_domination_exceeds_two_standard_errors_of_the_paired_difference():
    better = _point([0.70, 0.90, 0.80], [0.2, 0.2, 0.2], epsilon=10.0)
    # the same 0.05 below on every seed: SE 0, clearly dominated
    assert clearly_dominates(better, _point([0.65, 0.85, 0.75], [0.2, 0.2, 0.2]))
    # 0.05 below on average, but −0.15 … +0.05 by seed: within two SE of the paired difference
    noisy = _point([0.85, 0.75, 0.60], [0.2, 0.2, 0.2])
    assert dominates(better, noisy) and not clearly_dominates(better, noisy)
    marked = mark_frontier([noisy, better])
    assert (marked[0].frontier, marked[0].clearly_dominated) == (False, False)
    # one seed: no standard error, so never clear
    assert not clearly_dominates(_point([0.9], [0.1]), _point([0.5], [0.5]))
    # lower re-identification alone, by more than 2 SE, is clear as well
    assert clearly_dominates(_point([0.8, 0.8], [0.10, 0.12]), _point([0.8, 0.8], [0.30, 0.31]))


def test_a_dominated_point_is_never_on_the_frontier_and_an_undominated_one_always_is():
    # many points on a coarse grid of accuracies (ties are common), judged by brute force here
    rng = np.random.default_rng(36)
    for _ in range(30):
        k = int(rng.integers(2, 9))
        task, reid = rng.integers(0, 6, (2, k)) / 5
        points = [_point([t], [r], epsilon=float(2**i)) for i, (t, r) in enumerate(zip(task, reid, strict=True))]
        for i, p in enumerate(mark_frontier(points)):
            beaten = any(task[j] >= task[i] and reid[j] <= reid[i] and (task[j] > task[i] or reid[j] < reid[i])
                         for j in range(k) if j != i)  # fmt: skip
            assert p.frontier is not beaten, (task, reid, i)


def test_each_curve_has_its_own_frontier_and_the_overall_one_spans_the_chunk_length():
    rows = [r for s in range(2) for r in (
        *_rows("dcfpa", 10, s, 0.9, 0.3), *_rows("dcfpa", 100, s, 1.0, 0.6),
        *_rows("cfpa", 10, s, 0.95, 0.2),  # dominates dcfpa at 10, but is another curve
        *_rows("cfpa", 10, s, 0.9, 0.25, n=64),  # another chunk length: cfpa at n = 32 does not count
        *_rows("lpa", 10, s, 0.5, 1.0, n=64),  # no noise at n = 32 does: it is the same at every n
        *_rows("none", 0, s, 1.0, 1.0))]  # fmt: skip
    result = frontier(rows)
    dcfpa10 = _by(result, "dcfpa", 10.0)
    assert dcfpa10.frontier and not dcfpa10.overall
    assert _by(result, "cfpa", 10.0).overall
    assert _by(result, "cfpa", 10.0, n=64).overall
    far = _by(result, "lpa", 10.0, n=64)
    assert far.frontier and not far.overall
    assert not _by(result, "none").overall  # dcfpa at 100 keeps the task at 1.00 with less re-identification


def test_every_point_states_its_paired_difference_from_the_floor_of_its_chunk_length():
    rows = []
    for s, (task, floor_task) in enumerate([(0.8, 0.5), (0.9, 0.5), (0.7, 0.45)]):
        rows += _rows("dcfpa", 25, s, task, 0.2) + _rows(FLOOR, FLOOR_EPSILON, s, floor_task, 0.15)
        rows += _rows(ALG1, 25, s, 0.55, 0.15)
    result = frontier(rows, allocation="task")
    table = {r["mechanism"]: r for r in result.rows()}
    d = np.array([0.3, 0.4, 0.25])
    assert table["dcfpa"]["task_minus_floor"] == pytest.approx(d.mean())
    assert table["dcfpa"]["task_minus_floor_se"] == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    assert table["dcfpa"]["reidentification_minus_floor"] == pytest.approx(0.05)
    assert table[FLOOR]["task_minus_floor"] == 0.0
    # the references split ε equally, whatever the configured allocation
    assert (table[ALG1]["allocation"], table[FLOOR]["allocation"], table["dcfpa"]["allocation"]) == (
        "equal", "equal", "task")  # fmt: skip
    assert list(table["dcfpa"]) == list(FRONTIER_KEYS)


def test_the_task_column_is_task_else_the_first_classified_that_is_not_the_person():
    rows = _rows("dcfpa", 10, 0, 0.8, 0.2)
    gender = [{**r, "target": "gender"} for r in rows if r["metric"] == "task"]
    cross = [{**r, "target": "cross-session"} for r in rows if r["metric"] == "reidentification"]
    got = frontier([*gender, *rows, *cross])
    assert (got.task_column, got.split) == ("task", "chunked")
    got = frontier([*gender, *cross])
    assert (got.task_column, got.split) == ("gender", "cross-session")
    # the fitted rows name their allocation
    fitted = frontier([{**r, "weights": "fitted", "fold_weights": "x"} for r in rows])
    assert fitted.points[0].allocation == "fitted"


def test_without_a_task_or_re_identification_no_frontier_is_drawn_and_one_line_says_why():
    rows = _rows("dcfpa", 10, 0, 0.8, 0.2)
    cases = {
        "no frontier: no task column was classified, so": [r for r in rows if r["metric"] != "task"],
        "(participant is the person, whom leaving one person out cannot classify)": [
            {**r, "target": "participant"} if r["metric"] == "task" else r for r in rows],
        "no frontier: re-identification was not measured": [r for r in rows if r["metric"] != "reidentification"],
    }  # fmt: skip
    for said, given in cases.items():
        got = frontier(given)
        assert got.points == () and said in got.reason
        assert got.table() == got.reason + "\n" and "\n" not in got.reason


def test_the_allocation_must_be_a_string():
    with pytest.raises(TypeError, match="allocation must be a str, got 3"):
        frontier([], allocation=3)


# --- the references inside evaluate ------------------------------------------------------------------------------


def test_algorithm_1_is_measured_as_published_whatever_the_configuration():
    base = SessionConfig(level_share=0.3)  # a dcfpa parameter Algorithm 1 does not take
    cfg = published(base)
    assert (cfg.weights, cfg.epsilon_ceiling, cfg.level_share, cfg.k) == ("equal", None, None, None)
    # no ceiling: Algorithm 1 spends all of ε, where the configured dcfpa-bozkir is capped at 200
    assert Baseline("dcfpa-bozkir", 2496.0, 32, ALG1).epsilon_chunk(base) == 2496.0
    assert GridPoint("dcfpa-bozkir", 2496.0, 32).epsilon_chunk(SessionConfig()) == 200.0
    grid = [GridPoint("none", 0.0, 32), *(GridPoint(m, e, n) for m in ("dcfpa", "cfpa") for n in (32, 64)
                                           for e in (25.0, 250.0))]  # fmt: skip
    refs = [(b.label, b.epsilon, b.chunk_length) for b in baseline_points(grid)]
    assert refs == [(ALG1, 25.0, 32), (ALG1, 250.0, 32), (ALG1, 25.0, 64), (ALG1, 250.0, 64),
                    (FLOOR, FLOOR_EPSILON, 32), (FLOOR, FLOOR_EPSILON, 64)]  # fmt: skip


def test_evaluate_refuses_baselines_that_are_not_a_bool():
    with pytest.raises(TypeError, match="baselines must be a bool, got 'yes'"):
        evaluate([], [GridPoint("none", 0.0, 32)], progress=False, baselines="yes")


# --- a small real evaluation -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """``streamdp evaluate`` on 2 synthetic people, dcfpa at ε 10, 25 and 400 a chunk (400: capped at
    200), n = 8, 2 seeds, its printed output and the folder."""
    pytest.importorskip("sklearn")
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("frontier") / "eval"
    argv = ["evaluate", "--people", "2", "--seconds", "100", "--mechanisms", "dcfpa", "--epsilons", "10", "25",
            "400", "--chunk-lengths", "8", "--seeds", "2", "--workers", "1", "--out", str(out)]  # fmt: skip
    capture = pytest.MonkeyPatch()  # capsys is per test: the printed tables are read here
    printed = io.StringIO()
    capture.setattr(sys, "stdout", printed)
    try:
        assert main([*argv, "--quiet"]) == 0
    finally:
        capture.undo()
    return out, printed.getvalue()


def _read(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_evaluate_writes_the_frontier_with_the_three_references(evaluated):
    out, printed = evaluated
    points = _read(out / "frontier.csv")
    assert {p["mechanism"] for p in points} == {"none", "dcfpa", ALG1, FLOOR}
    assert {(p["mechanism"], float(p["epsilon"])) for p in points if p["mechanism"] in ("dcfpa", ALG1)} == {
        ("dcfpa", 10.0), ("dcfpa", 25.0), ("dcfpa", 400.0), (ALG1, 10.0), (ALG1, 25.0), (ALG1, 400.0)}  # fmt: skip
    # the shipped allocation as it ran at each ε: concentrated below 50
    named = {float(p["epsilon"]): p["allocation"] for p in points if p["mechanism"] == "dcfpa"}
    assert named == {10.0: "task@k=1", 25.0: "task@k=1", 400.0: "task"}
    spent = {(p["mechanism"], float(p["epsilon"])): float(p["epsilon_chunk"]) for p in points}
    assert spent["dcfpa", 400.0] == 200.0 and spent[ALG1, 400.0] == 400.0  # Algorithm 1 has no ceiling
    assert all(p["seeds"] == "2" and np.isfinite(float(p["task_se"])) for p in points)
    assert {p["task_column"] for p in points} == {"task"} and {p["reid_split"] for p in points} == {"chunked"}
    assert (out / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    assert "Pareto frontier of task accuracy (task, voted) against re-identification (chunked split" in printed
    assert "| 8 | floor | equal | 0.5 | 0.5 |" in printed and (out / "frontier.md").read_text() in printed


def test_the_written_frontier_marks_exactly_the_undominated_points_of_each_curve(evaluated):
    points = _read(evaluated[0] / "frontier.csv")
    for p, q in itertools.product(points, repeat=2):
        same_curve = p is not q and (p["mechanism"], p["allocation"]) == (q["mechanism"], q["allocation"])
        t, r = (float(p["task"]), float(p["reidentification"])), (float(q["task"]), float(q["reidentification"]))
        if same_curve and t[0] >= r[0] and t[1] <= r[1] and (t[0] > r[0] or t[1] < r[1]):
            assert q["frontier"] == "no", (p, q)
    for q in points:
        if q["frontier"] == "no":
            assert any(p is not q and p["mechanism"] == q["mechanism"] and float(p["task"]) >= float(q["task"])
                       and float(p["reidentification"]) <= float(q["reidentification"]) for p in points)  # fmt: skip


def test_the_references_rows_are_beside_the_results_which_stay_those_of_the_grid(evaluated):
    out, _ = evaluated
    results = _read(out / "results.csv")
    assert {r["mechanism"] for r in results} == {"none", "dcfpa"}
    baselines = _read(out / "baselines.csv")
    assert list(baselines[0]) == list(results[0])
    expected = {(ALG1, "10.0"), (ALG1, "25.0"), (ALG1, "400.0"), (FLOOR, "0.5")}
    assert {(r["mechanism"], r["epsilon"]) for r in baselines} == expected
    assert {r["seed"] for r in baselines} == {"0", "1"}
    # the floor releases no signal: its utility is an order of magnitude and more below Algorithm 1's at ε 25
    utility = {m: np.mean([float(r["value"]) for r in baselines if r["metric"] == "utility" and r["mechanism"] == m
                           and r["epsilon"] in ("0.5", "25.0")]) for m in (ALG1, FLOOR)}  # fmt: skip
    assert utility[FLOOR] < utility[ALG1] / 10


def test_no_baselines_leaves_the_references_out(tmp_path, capsys):
    pytest.importorskip("sklearn")
    out = tmp_path / "eval"
    argv = ["evaluate", "--people", "2", "--seconds", "100", "--mechanisms", "lpa", "--epsilons", "1000",
            "--chunk-lengths", "8", "--seeds", "1", "--workers", "1", "--no-baselines", "--out", str(out),
            "-q"]  # fmt: skip
    assert main(argv) == 0
    assert {p["mechanism"] for p in _read(out / "frontier.csv")} == {"none", "lpa"}
    assert not (out / "baselines.csv").exists()
    assert main(["evaluate", "--channel", "gaze", "--no-baselines", "--out", str(tmp_path / "g")]) == 2
    assert "--channel gaze and --no-baselines contradict each other" in capsys.readouterr().err
