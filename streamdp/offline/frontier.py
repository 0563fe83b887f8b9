"""The trade-off as a curve: task accuracy against re-identification across ε, and its Pareto
frontier, from the rows of :func:`streamdp.offline.evaluate.evaluate`.

A **point** is one setting (mechanism, allocation, post-processing, chunk length, ε) with, per
noise seed, the voted accuracy averaged over the four classifiers of the task column and of
re-identification; its figures are the mean over seeds and the standard error of that mean
(sd with ``ddof=1`` over √seeds; none with one seed). A **curve** is one setting's points across ε.
One point *dominates* another when its task accuracy is at least as high and its
re-identification at least as low, one of them strictly (on the means); a point is on its
curve's **frontier** when no point of its curve dominates it, and on the **overall** frontier when
no point of its chunk length does (the references included). It is *clearly* dominated when a
point that dominates it is better by more than two standard errors of the paired per-seed
difference in task accuracy or in re-identification: a dominated point that is not clearly
dominated is within the seeds' noise of the frontier.

The references, measured by ``evaluate(..., baselines=True)`` on the same recordings and seeds:
no noise (``"none"``), Algorithm 1 as published (:data:`ALG1`: ``dcfpa-bozkir``, equal weights,
no ceiling) at each ε of the grid, and the **floor** (:data:`FLOOR`): a release without signal,
Algorithm 1 at :data:`FLOOR_EPSILON` a chunk (utility ≈ 10⁻⁵), through the same chunker, split,
classifiers and voting as every other point, so that its accuracies are what these classifiers
score on noise here (below the nominal chance when leave-one-person-out unbalances a fold), not a
formula. Each point states its paired difference from the floor of its chunk length.

Pure: NumPy only; the files and the plot are :mod:`streamdp.offline.frontier_files`' (matplotlib,
imported when drawn).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..privacy.mechanisms import OFFLINE_MECHANISMS

__all__ = [
    "ALG1", "FLOOR", "FLOOR_EPSILON", "FRONTIER_KEYS", "NO_NOISE", "REFERENCES", "Frontier", "FrontierPoint",
    "clearly_dominates", "dominates", "frontier", "mark_frontier", "paired",
]  # fmt: skip

#: the rows' mechanism for no noise
NO_NOISE = "none"
#: the rows' mechanism for Algorithm 1 as published (dcfpa-bozkir, equal weights, no ceiling)
ALG1 = "alg1"
#: the rows' mechanism for the floor, a release without signal
FLOOR = "floor"
#: the floor's ε per chunk, all features together: Algorithm 1 there releases no measurable signal
FLOOR_EPSILON = 0.5
#: how the tables name the references
REFERENCES = {
    NO_NOISE: "no noise",
    ALG1: "Algorithm 1 (dcfpa-bozkir, equal weights, no ceiling)",
    FLOOR: f"floor: no signal (Algorithm 1 at ε {FLOOR_EPSILON:g} a chunk)",
}
#: the columns of frontier.csv, in order
FRONTIER_KEYS = (
    "chunk_length", "mechanism", "allocation", "postprocess", "epsilon", "epsilon_chunk", "seeds", "task", "task_se",
    "reidentification", "reidentification_se", "frontier", "clearly_dominated", "overall_frontier",
    "task_minus_floor", "task_minus_floor_se", "reidentification_minus_floor", "reidentification_minus_floor_se",
    "task_column", "reid_split",
)  # fmt: skip
#: means closer than this are equal: the same accuracies averaged in another order
_TIE = 1e-9


@dataclass(frozen=True)
class FrontierPoint:
    """One setting's voted accuracies per noise seed, and where it stands (set by :func:`mark_frontier`)."""

    mechanism: str
    allocation: str
    postprocess: str
    chunk_length: int
    epsilon: float
    epsilon_chunk: float
    #: seed → voted task accuracy (mean of the classifiers); seed → voted re-identification
    task_by_seed: Mapping[int, float]
    reid_by_seed: Mapping[int, float]
    frontier: bool = True
    clearly_dominated: bool = False
    overall: bool = True

    @property
    def curve(self) -> tuple[str, str, str, int]:
        """The points of one curve share this: all but ε."""
        return self.mechanism, self.allocation, self.postprocess, self.chunk_length

    @property
    def seeds(self) -> int:
        return len(self.task_by_seed)

    @property
    def task(self) -> float:
        return float(np.mean(list(self.task_by_seed.values())))

    @property
    def reid(self) -> float:
        return float(np.mean(list(self.reid_by_seed.values())))

    @property
    def task_se(self) -> float:
        return _se(list(self.task_by_seed.values()))

    @property
    def reid_se(self) -> float:
        return _se(list(self.reid_by_seed.values()))


def _se(values: Sequence[float]) -> float:
    """Standard error of the mean over seeds; NaN for fewer than two."""
    if len(values) < 2:
        return float("nan")
    return float(np.std(values, ddof=1) / np.sqrt(len(values)))


def paired(a: Mapping[int, float], b: Mapping[int, float]) -> tuple[float, float]:
    """Mean of ``a − b`` and its standard error: over the seeds both have (paired), else unpaired.

    Examples
    --------
    >>> tuple(round(x, 3) for x in paired({0: 0.6, 1: 0.8}, {0: 0.5, 1: 0.6}))
    (0.15, 0.05)
    """
    common = sorted(set(a) & set(b))
    if len(common) >= 2:
        d = [a[s] - b[s] for s in common]
        return float(np.mean(d)), _se(d)
    diff = float(np.mean(list(a.values())) - np.mean(list(b.values())))
    return diff, float(np.hypot(_se(list(a.values())), _se(list(b.values()))))


def dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    """Whether ``a``'s means dominate ``b``'s: task accuracy no lower and re-identification no
    higher, one strictly. Equal means in both: neither dominates (a tie stays on the frontier).

    Examples
    --------
    >>> p = lambda task, reid: FrontierPoint("x", "-", "no", 32, 1.0, 1.0, {0: task}, {0: reid})
    >>> dominates(p(0.9, 0.2), p(0.8, 0.2)), dominates(p(0.9, 0.2), p(0.9, 0.2)), dominates(p(0.9, 0.3), p(0.8, 0.2))
    (True, False, False)
    """
    at_least = a.task >= b.task - _TIE and a.reid <= b.reid + _TIE
    return at_least and (a.task > b.task + _TIE or a.reid < b.reid - _TIE)


def clearly_dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    """Whether ``a`` dominates ``b`` (:func:`dominates`) by more than two standard errors of the
    paired per-seed difference in task accuracy or in re-identification; never with one seed.
    A difference the same on every seed (standard error 0) is clear.

    Examples
    --------
    >>> p = lambda task: FrontierPoint("x", "-", "no", 32, 1.0, 1.0, dict(enumerate(task)), {0: 0.2, 1: 0.2})
    >>> clearly_dominates(p([0.9, 0.9]), p([0.5, 0.6])), clearly_dominates(p([0.9, 0.5]), p([0.5, 0.6]))
    (True, False)
    """
    if not dominates(a, b):
        return False
    task, task_se = paired(a.task_by_seed, b.task_by_seed)
    reid, reid_se = paired(b.reid_by_seed, a.reid_by_seed)
    return bool(task > _TIE and task > 2 * task_se) or bool(reid > _TIE and reid > 2 * reid_se)


def mark_frontier(points: Sequence[FrontierPoint]) -> list[FrontierPoint]:
    """``points`` with ``frontier`` (no point of its curve dominates it), ``clearly_dominated``
    (one of its curve does, by more than 2 SE) and ``overall`` (no point of its chunk length, nor
    no noise, dominates it) set.

    Examples
    --------
    >>> p = lambda e, task, reid: FrontierPoint("x", "-", "no", 32, e, e, {0: task}, {0: reid})
    >>> [q.frontier for q in mark_frontier([p(1, 0.6, 0.2), p(10, 0.9, 0.2), p(100, 1.0, 0.5)])]
    [False, True, True]
    """
    out = []
    for b in points:
        curve = [a for a in points if a.curve == b.curve and a is not b]
        rivals = [a for a in points if a is not b and (a.chunk_length == b.chunk_length or a.mechanism == NO_NOISE)]
        out.append(replace(b, frontier=not any(dominates(a, b) for a in curve),
                           clearly_dominated=any(clearly_dominates(a, b) for a in curve),
                           overall=not any(dominates(a, b) for a in rivals)))  # fmt: skip
    return out


@dataclass(frozen=True)
class Frontier:
    """The marked points (:func:`mark_frontier`) of one task column against one re-identification
    split, or none and the reason in one line."""

    points: tuple[FrontierPoint, ...]
    task_column: str | None
    split: str | None
    reason: str = ""
    chance: Mapping[str, float] | None = None

    def floor(self, chunk_length: int) -> FrontierPoint | None:
        """The floor measured at ``chunk_length``, if any."""
        return next((p for p in self.points if p.mechanism == FLOOR and p.chunk_length == chunk_length), None)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per point, keyed by :data:`FRONTIER_KEYS` (yes/no for the marks)."""
        out = []
        for p in self.points:
            floor = self.floor(p.chunk_length)
            d_task = paired(p.task_by_seed, floor.task_by_seed) if floor else (float("nan"),) * 2
            d_reid = paired(p.reid_by_seed, floor.reid_by_seed) if floor else (float("nan"),) * 2
            values = (p.chunk_length, p.mechanism, p.allocation, p.postprocess, p.epsilon, p.epsilon_chunk, p.seeds,
                      p.task, p.task_se, p.reid, p.reid_se, _yes(p.frontier), _yes(p.clearly_dominated),
                      _yes(p.overall), *d_task, *d_reid, self.task_column, self.split)  # fmt: skip
            out.append(dict(zip(FRONTIER_KEYS, values, strict=True)))
        return out

    def table(self) -> str:
        """A short Markdown table: each curve's frontier points and the references, with the
        number of dominated points left to frontier.csv; or the reason there is no frontier."""
        if not self.points:
            return self.reason + "\n"
        seeds = max(p.seeds for p in self.points)
        chance = self.chance or {}
        said = ", ".join(f"{k} {v:.2f}" for k, v in chance.items() if np.isfinite(v))
        lines = [f"Pareto frontier of task accuracy ({self.task_column}, voted) against re-identification "
                 f"({self.split} split, voted), mean ± SE over {seeds} noise seed{'s' if seeds != 1 else ''}; "
                 "each curve's frontier across ε and the references" + (f" (chance: {said})" if said else "") + ".",
                 "", "| n | mechanism | allocation | ε | ε per chunk | task | re-ID | overall frontier |",
                 "|---|---|---|---|---|---|---|---|"]  # fmt: skip
        shown = [p for p in self.points if p.frontier or p.mechanism in REFERENCES]
        for p in shown:
            name = p.mechanism + (" post-processed" if p.postprocess == "yes" else "")
            eps = "–" if p.mechanism == NO_NOISE else f"{p.epsilon:g}"
            spent = f"{p.epsilon_chunk:g}" if np.isfinite(p.epsilon_chunk) else "–"
            mark = ("yes" if p.overall else "no") + ("" if p.frontier else " (off its curve's frontier)")
            lines.append(f"| {p.chunk_length} | {name} | {p.allocation} | {eps} | {spent} | "
                         f"{_pm(p.task, p.task_se)} | {_pm(p.reid, p.reid_se)} | {mark} |")  # fmt: skip
        hidden = len(self.points) - len(shown)
        present = {p.mechanism for p in self.points}
        refs = [f"{k} = {v}" for k, v in REFERENCES.items() if k in present]
        lines += ["", "References: " + "; ".join(refs) + "."]
        if hidden:
            lines.append(
                f"{hidden} dominated point{'s' if hidden != 1 else ''} not shown: frontier.csv has every point."
            )
        return "\n".join(lines) + "\n"


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _pm(mean: float, se: float) -> str:
    return f"{mean:.2f} ± {se:.2f}" if np.isfinite(se) else f"{mean:.2f}"


def _column(rows: Sequence[Mapping[str, Any]], metric: str, prefer: str, skip: Iterable[str] = ()) -> str | None:
    measured = list(dict.fromkeys(str(r["target"]) for r in rows if r["metric"] == metric))
    measured = [t for t in measured if t not in skip]
    return prefer if prefer in measured else next(iter(measured), None)


def frontier(rows: Sequence[Mapping[str, Any]], *, allocation: str = "as configured") -> Frontier:
    """The marked points of :func:`~streamdp.offline.evaluate.evaluate`'s ``rows``: task accuracy
    of the ``task`` column (else the first column classified other than ``participant``) against
    re-identification of the chunked split (else the split measured), both voted.

    ``allocation`` names the configured weights, said of every streaming mechanism's point whose
    rows do not name their own (``weights``, with ``fit_weights``); an offline mechanism and the
    references split ε equally, and no noise splits none.

    Raises
    ------
    TypeError
        ``allocation`` is not a str.

    Examples
    --------
    >>> rows = [{"mechanism": "none", "chunk_length": 32, "epsilon": 0.0, "epsilon_chunk": float("nan"),
    ...          "seed": 0, "metric": m, "target": t, "voting": "yes", "value": 1.0, "chance": 0.5}
    ...         for m, t in (("task", "task"), ("reidentification", "chunked"))]
    >>> got = frontier(rows)
    >>> (got.task_column, got.split, got.points[0].task, got.points[0].frontier)
    ('task', 'chunked', 1.0, True)
    >>> frontier([r for r in rows if r["metric"] != "task"]).reason
    'no frontier: no task column was classified, so there is no task accuracy to set against re-identification'
    """
    if not isinstance(allocation, str):
        raise TypeError(f"allocation must be a str, got {allocation!r}")
    task = _column(rows, "task", "task", skip=("participant",))
    split = _column(rows, "reidentification", "chunked")
    if task is None:
        said = " (participant is the person, whom leaving one person out cannot classify)" if any(
            r["metric"] == "task" for r in rows) else ""  # fmt: skip
        reason = "no task column was classified" + said + ", so there is no task accuracy to set against "
        return Frontier((), None, split, "no frontier: " + reason + "re-identification")
    if split is None:
        return Frontier((), task, None, "no frontier: re-identification was not measured")
    per: dict[tuple[Any, ...], dict[str, dict[int, list[float]]]] = {}
    spent: dict[tuple[Any, ...], float] = {}
    for r in rows:
        which = {("task", task): "task", ("reidentification", split): "reid"}.get((r["metric"], r["target"]))
        if which is None or r.get("voting") != "yes":
            continue
        key = (r["mechanism"], _allocation(r, allocation), r.get("postprocess", "no"), int(r["chunk_length"]),
               float(r["epsilon"]))  # fmt: skip
        per.setdefault(key, {"task": {}, "reid": {}})[which].setdefault(int(r["seed"]), []).append(float(r["value"]))
        spent[key] = float(r.get("epsilon_chunk", float("nan")))
    points = []
    for key, got in per.items():
        seeds = sorted(set(got["task"]) & set(got["reid"]))
        if seeds:
            by = {m: {s: float(np.mean(got[m][s])) for s in seeds} for m in ("task", "reid")}
            points.append(FrontierPoint(*key, spent[key], by["task"], by["reid"]))
    order = {NO_NOISE: 0, ALG1: 2, FLOOR: 3}
    points.sort(key=lambda p: (p.chunk_length, order.get(p.mechanism, 1), p.postprocess, p.epsilon))
    chance = {task: _chance(rows, "task", task), "re-identification": _chance(rows, "reidentification", split)}
    return Frontier(tuple(mark_frontier(points)), task, split, chance=chance)


def _allocation(row: Mapping[str, Any], configured: str) -> str:
    if row["mechanism"] == NO_NOISE:
        return "-"
    if row["mechanism"] in (ALG1, FLOOR) or row["mechanism"] in OFFLINE_MECHANISMS:
        return "equal"
    return str(row.get("weights", configured))


def _chance(rows: Sequence[Mapping[str, Any]], metric: str, target: str) -> float:
    return next((float(r["chance"]) for r in rows if r["metric"] == metric and r["target"] == target), float("nan"))
