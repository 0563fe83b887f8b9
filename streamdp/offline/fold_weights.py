"""``evaluate(..., fit_weights=True)``: each training fold's releases split ε by weights fitted on
that fold alone (:func:`~streamdp.offline.fit_weights.fit_training_fold`), never on a test
recording, step or person.

The folds are the evaluation's own (:mod:`streamdp.offline.splits`), and each is fitted as
``streamdp fit-weights`` fits a manifest, protecting ``participant`` (re-identification is the
adversary's task):

- **task classification** of a column (leave one person out): the fold without person P fits the
  column on the other people's recordings; P's recordings and everyone else's are then released
  with those weights, the classifier trained on the others' and tested on P's.
- **re-identification** is an attack on the allocation a deployment would use, the one fitted for
  the evaluation's first task column (the *allocation's task*; ``"task"`` when there is none).
  With the ``chunked`` split its one fold is every recording's training chunks: the weights are
  fitted on the feature rows of those steps only (each a window before any test step), and every
  recording's steps are released with them. With ``cross-session``, fold j fits on its training
  recordings.
- **utility** (no classifier, no fold of its own): each person's recordings are measured as
  released by the fold that leaves that person out, for the allocation's task, over the features
  every such fold releases (a feature some fold drops is a public constant there).

Each fold is fitted for each grid point's mechanism, chunk length and the ε it spends: how many
features to fund is chosen by an inner cross-validation on that fold's training recordings alone,
grouped by person (:mod:`streamdp.offline.epsilon_fit`). ``epsilon_aware=False`` gives the fit that
ignores ε: fitted once (the rows' separabilities) and weighed against the noise of each grid point's
mechanism and chunk length (:meth:`FittedWeights.with_noise
<streamdp.offline.fitted_weights.FittedWeights.with_noise>`). Every fit is made
by :func:`fit_folds` before any job runs, so a fold that cannot be fitted is refused first (named),
and the workers get plain values: each fold's weights as a
:class:`~streamdp.privacy.weights_file.WeightsTable`, a configuration's ``weights`` that reads no
file. Every row names the weights of the folds it was measured on (``fold_weights``: the fold and
its :func:`~streamdp.privacy.weights_file.weights_digest`, which the ledgers of its releases state
too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..errors import InputError
from ..postprocess import SUPPORTED_MECHANISMS
from ..privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from ..privacy.weights_file import WeightsTable
from .classify import CLASSIFIERS, Released, accuracy, fit_predict, label_utility, reidentification, stack_rows
from .fit_weights import FittedWeights, fit_training_fold
from .grid import (
    EvaluationPlan,
    GridPoint,
    LabelledRecording,
    point_base,
    point_rows,
    result_rows,
    sanitize,
    utility_rows,
)
from .postprocessed import post_processor, postprocess_parts
from .splits import chunked_split, cross_session_folds, lopo_splits

__all__ = ["PROTECT", "FoldWeights", "allocation_task", "fit_folds", "fitted_job"]

#: the column every fold's weights protect: re-identification is the adversary's task
PROTECT = "participant"
#: the ledgers' name of a fold's weights (each fold's digest tells them apart)
FITTED = "fitted"


def allocation_task(plan: EvaluationPlan) -> str:
    """The column the re-identification's and the utility's folds are fitted for: the first task
    column, ``"task"`` without one.

    Examples
    --------
    >>> allocation_task(EvaluationPlan(tasks=("gender", "task"))), allocation_task(EvaluationPlan(tasks=()))
    ('gender', 'task')
    """
    return plan.tasks[0] if plan.tasks else "task"


@dataclass(frozen=True)
class FoldWeights:
    """Every fold's weights for one mechanism and chunk length: ``lopo[column][person]`` (the fold
    without that person), ``chunked`` (None without that split) and ``cross_session`` (fold j at j)."""

    lopo: Mapping[str, Mapping[str, WeightsTable]]
    chunked: WeightsTable | None
    cross_session: tuple[WeightsTable, ...]


def _training_steps(recs: Sequence[LabelledRecording], n: int, config: SessionConfig) -> list[LabelledRecording]:
    """Each recording's released steps that the chunked split trains on (those of a recording
    without any are left out), their feature rows only."""
    window = config.window_config().window
    out = []
    for rec, part in zip(recs, sanitize(recs, "none", 0.0, n, 0, config), strict=True):
        train = chunked_split(part.t, part.chunk, window)[0]
        if len(train):
            out.append(replace(rec, features=part.clean[train], t=part.t[train]))
    return out


def _fit(recs: Sequence[LabelledRecording], train: Sequence[int] | NDArray[np.intp], task: str, fold: str,
         config: SessionConfig, epsilon: float | None = None) -> FittedWeights:  # fmt: skip
    try:
        return fit_training_fold(recs, [int(i) for i in train], task=task, protect=PROTECT, config=config,
                                 epsilon=epsilon)  # fmt: skip
    except InputError as exc:
        raise InputError(f"fit_weights: the training fold {fold} ({task!r}, protecting {PROTECT!r}): {exc}") from None


def fit_folds(
    recs: Sequence[LabelledRecording], grid: Sequence[GridPoint], config: SessionConfig, plan: EvaluationPlan,
    *, epsilon_aware: bool = True,
) -> dict[tuple[str, int, float], FoldWeights]:  # fmt: skip
    """The weights of every training fold of the evaluation ``plan`` describes, for every
    streaming mechanism, chunk length and ε of ``grid`` (see the module docstring), keyed by
    (mechanism, chunk length, ε asked).

    Raises
    ------
    TypeError
        ``config`` is not a SessionConfig, ``plan`` not an EvaluationPlan, ``epsilon_aware`` not a bool.
    InputError
        A fold the weights cannot be fitted on (a class too few, a feature that separates the task
        more than the participants none), named with the fold and the column.

    Examples
    --------
    >>> from streamdp.offline.evaluate import feature_signals, synthetic_study
    >>> recs = feature_signals(synthetic_study(people=3, seconds=120.0))
    >>> folds = fit_folds(recs, [GridPoint("dcfpa", 25.0, 16)], SessionConfig(), EvaluationPlan())
    >>> sorted(folds[("dcfpa", 16, 25.0)].lopo["task"]), folds[("dcfpa", 16, 25.0)].chunked.allocation
    (['P0', 'P1', 'P2'], 'fitted')
    """
    if not isinstance(config, SessionConfig):
        raise TypeError(f"config must be a SessionConfig, got {type(config).__name__}")
    if not isinstance(plan, EvaluationPlan):
        raise TypeError(f"plan must be an EvaluationPlan, got {type(plan).__name__}")
    if not isinstance(epsilon_aware, bool):
        raise TypeError(f"epsilon_aware must be a bool, got {epsilon_aware!r}")
    points = {(p.mechanism, p.chunk_length, p.epsilon): p for p in grid if p.mechanism in MECHANISMS}
    if not points:
        return {}
    people = [r.participant for r in recs]
    task = allocation_task(plan)
    columns = list(dict.fromkeys([*plan.tasks, task]))
    steps = {n: _training_steps(recs, n, config) for n in dict.fromkeys(n for _, n, _ in points)}
    cross_folds = cross_session_folds(people) if "cross-session" in plan.splits else []

    def fit_all(cfg: SessionConfig, n: int, epsilon: float | None) -> tuple[Any, Any, Any]:
        lopo = {c: {p: _fit(recs, train, c, f"without {p}", cfg, epsilon) for p, train, _ in lopo_splits(people)}
                for c in columns}  # fmt: skip
        cross = [_fit(recs, train, task, f"cross-session {j + 1}", cfg, epsilon) for j, (train, _) in
                 enumerate(cross_folds)]  # fmt: skip
        chunked = None
        if "chunked" in plan.splits:
            chunked = _fit(steps[n], range(len(steps[n])), task, f"chunked (n = {n})", cfg, epsilon)
        return lopo, cross, chunked

    once: dict[int, tuple[Any, Any, Any]] = {}
    aware: dict[tuple[str, int, float], tuple[Any, Any, Any]] = {}
    out = {}
    for (mechanism, n, e), point in points.items():
        cfg = point.config(config)
        if epsilon_aware:  # a ceiling can make several ε asked one ε spent: fitted once
            spent = float(cfg.mechanism_instance().describe()["epsilon"])
            if (mechanism, n, spent) not in aware:
                aware[mechanism, n, spent] = fit_all(cfg, n, spent)
            lopo, cross, chunked = aware[mechanism, n, spent]
        else:  # fitted once, whatever the mechanism, and weighed against each point's noise
            if not once:
                once[0] = fit_all(next(iter(points.values())).config(config), n, None)
            lopo, cross, chunked = once[0]
            if "chunked" in plan.splits and n not in once:
                once[n] = (None, None, _fit(steps[n], range(len(steps[n])), task, f"chunked (n = {n})", cfg))
            chunked = once[n][2] if n in once else chunked

        def table(fitted: FittedWeights, fold: str, column: str, cfg: SessionConfig = cfg) -> WeightsTable:
            source = f"fitted on the training fold {fold} ({column!r}, protecting {PROTECT!r})"
            return WeightsTable(source, FITTED, fitted.with_noise(cfg).weights.tolist())

        out[mechanism, n, e] = FoldWeights(
            lopo={c: {p: table(f, f"without {p}", c) for p, f in by.items()} for c, by in lopo.items()},
            chunked=table(chunked, "chunked", task) if chunked is not None else None,
            cross_session=tuple(table(f, f"cross-session {j + 1}", task) for j, f in enumerate(cross)),
        )
    return out


class _Releases:
    """A grid point's releases under a fold's weights, as made and post-processed (``"no"``,
    ``"yes"``), and the features those weights release."""

    def __init__(self, recs: Sequence[LabelledRecording], config: SessionConfig, plan: EvaluationPlan,
                 point: GridPoint, noise_seed: int) -> None:  # fmt: skip
        self.recs, self.config, self.plan, self.point, self.noise_seed = recs, config, plan, point, noise_seed

    def __call__(self, weights: WeightsTable) -> tuple[dict[str, list[Released]], NDArray[np.bool_]]:
        base = replace(self.config, weights=weights)
        p = self.point
        parts = sanitize(self.recs, p.mechanism, p.epsilon, p.chunk_length, self.noise_seed, base)
        variants = {"no": parts}
        processor = post_processor(p.config(base)) if self.plan.postprocess else None
        if processor is not None:
            variants["yes"] = postprocess_parts(parts, processor, base.window_config().window)
        return variants, p.config(base).bounds_profile().released


class _Votes:
    """Each fold's predictions of its test samples, per variant and classifier, and the accuracy
    of them all (:func:`~streamdp.offline.classify.accuracy`: the order of the samples does not
    change it)."""

    def __init__(self) -> None:
        self.got: dict[tuple[str, str], list[tuple[NDArray[Any], ...]]] = {}

    def fold(self, variant: str, x: NDArray[np.float64], y: NDArray[Any], rec_of: NDArray[np.intp],
             test: NDArray[np.bool_], seed: int) -> None:  # fmt: skip
        for name in CLASSIFIERS:
            pred = fit_predict(name, x[~test], y[~test], x[test], seed)
            self.got.setdefault((variant, name), []).append((pred, y[test], rec_of[test]))

    def result(self, variant: str) -> dict[str, tuple[float, float]]:
        return {name: accuracy(*(np.concatenate(a) for a in zip(*self.got[variant, name], strict=True)))
                for name in CLASSIFIERS}  # fmt: skip


def _samples(parts: Sequence[Released], every: int) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    return stack_rows(parts, [np.arange(len(p.noisy)) for p in parts], every)


def _digests(tables: Mapping[str, WeightsTable]) -> str:
    """``fold:digest`` of each fold's weights, space-separated: a row's ``fold_weights``."""
    return " ".join(f"{fold}:{t.digest}" for fold, t in tables.items())


def fitted_job(
    recs: Sequence[LabelledRecording], config: SessionConfig, plan: EvaluationPlan,
    folds: Mapping[tuple[str, int, float], FoldWeights], point: GridPoint, noise_seed: int, repetition: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """One (grid point, seed) job of :func:`~streamdp.offline.evaluate.evaluate` with the weights
    of ``folds`` (:func:`fit_folds`): the rows of :func:`~streamdp.offline.grid.point_rows`, in the
    same order, each fold measured on releases with its own weights, and the columns ``weights`` and
    ``fold_weights``."""
    if point.mechanism not in MECHANISMS:  # no noise, or an offline mechanism's equal split: nothing fitted
        said = "-" if point.mechanism not in OFFLINE_MECHANISMS else "equal"
        plain = point_rows(recs, config, plan, point, noise_seed, repetition)
        return [{**r, "weights": said, "fold_weights": "-"} for r in plain]
    mine = folds[point.mechanism, point.chunk_length, point.epsilon]
    released = _Releases(recs, config, plan, point, noise_seed)
    people = np.asarray([r.participant for r in recs])
    variants = ["no", "yes"] if plan.postprocess and point.mechanism in SUPPORTED_MECHANISMS else ["no"]
    task = allocation_task(plan)
    # leave one person out, each column's folds; the allocation's task's also give the utility
    tasks: dict[str, _Votes] = {column: _Votes() for column in plan.tasks}
    kept: NDArray[np.bool_] | None = None
    utility_parts: dict[str, dict[int, Released]] = {v: {} for v in variants}
    for column in dict.fromkeys([*plan.tasks, task]):
        labels = np.asarray([r.label(column) for r in recs])
        for person, weights in mine.lopo[column].items():
            parts, mask = released(weights)
            for v in variants:
                if column in tasks:
                    x, rec_of = _samples(parts[v], plan.task_every)
                    tasks[column].fold(v, x, labels[rec_of], rec_of, people[rec_of] == person, repetition)
                if column == task:
                    utility_parts[v].update((int(i), parts[v][i]) for i in np.flatnonzero(people == person))
            if column == task:
                kept = mask if kept is None else kept & mask
    reid: dict[str, dict[str, dict[str, tuple[float, float]]]] = {}
    digests: dict[str, str] = {}
    if "chunked" in plan.splits:
        assert mine.chunked is not None
        parts, _ = released(mine.chunked)
        window = config.window_config().window
        reid["chunked"] = {v: reidentification(parts[v], list(people), split="chunked", window=window,
                                               every=plan.reid_every, seed=repetition) for v in variants}  # fmt: skip
        digests["chunked"] = _digests({"chunked": mine.chunked})
    if "cross-session" in plan.splits:
        votes = _Votes()
        for j, ((_, test), weights) in enumerate(zip(cross_session_folds(list(people)), mine.cross_session,
                                                     strict=True)):  # fmt: skip
            parts, _ = released(weights)
            for v in variants:
                x, rec_of = _samples(parts[v], plan.reid_every)
                # each fold's votes apart, as without fitted weights
                votes.fold(v, x, people[rec_of], rec_of + len(recs) * j, np.isin(rec_of, test), repetition)
        reid["cross-session"] = {v: votes.result(v) for v in variants}
        digests["cross-session"] = _digests({f"session{j + 1}": t for j, t in enumerate(mine.cross_session)})
    assert kept is not None
    base = point_base(point, config, repetition)
    rows: list[dict[str, Any]] = []
    for v in variants:
        at = {**base, "postprocess": v}
        utility = label_utility([utility_parts[v][i] for i in range(len(recs))], [r.task for r in recs], kept)
        rows += utility_rows(at, utility, weights=FITTED, fold_weights=_digests(mine.lopo[task]))
        for split in plan.splits:
            rows += result_rows(at, "reidentification", split, reid[split][v], 1.0 / len(set(people)),
                                weights=FITTED, fold_weights=digests[split])  # fmt: skip
        for column in plan.tasks:
            chance = 1.0 / len({r.label(column) for r in recs})
            rows += result_rows(at, "task", column, tasks[column].result(v), chance, weights=FITTED,
                                fold_weights=_digests(mine.lopo[column]))  # fmt: skip
    return rows
