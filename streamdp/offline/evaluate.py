"""``streamdp evaluate``: what a setting of mechanism, ε and chunk length costs, measured
honestly.

For labelled recordings (a manifest gives each one's participant, task and any other labels) and
a grid of mechanisms × ε × chunk lengths, each run with several noise seeds:

- **utility**: Bozkir et al.'s ``1/|NMSE|`` per feature, computed per task label over that
  label's recordings (as the paper did), averaged over the released features (a feature of
  weight 0 is a public constant, not a utility);
- **re-identification attack** (labels = participants), split without leaks
  (:mod:`streamdp.offline.splits`): within a recording by whole chunks with at least one window
  between training and test steps (``"chunked"``), or across recordings (``"cross-session"``);
- **task classification**, for the ``task`` column or any other manifest column: leave one
  person out;

each with k-NN, SVM, a decision tree and a random forest (:mod:`streamdp.offline.classify`), per
sample and with majority voting. The grid's (point, seed) jobs run on local worker processes or a
dask.distributed cluster (:mod:`streamdp.offline.executors`), with the same rows.

Features come from the session core (:meth:`Session.feature_rows
<streamdp.session.Session.feature_rows>`) and every grid point's releases from its configuration's
chunk privatizer (:func:`grid_config`), so evaluation sees what a live session releases. Without a
manifest it runs on synthetic people from the generator, so a new user sees the trade-off in
seconds. The result files are written by :mod:`streamdp.offline.results`. The grid points, their
releases and the rows of one job are :mod:`streamdp.offline.grid`'s; with ``fit_weights`` each
training fold's releases split ε by weights fitted on that fold alone
(:mod:`streamdp.offline.fold_weights`). With ``baselines`` it also measures the references of the
trade-off's curve (:mod:`streamdp.offline.frontier`): Algorithm 1 as published at each ε and chunk
length of the grid, and the floor, a release without signal, at each chunk length
(:func:`baseline_points`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

from ..config import SessionConfig
from .classify import (
    CLASSIFIERS,
    REID_SPLITS,
    Released,
    label_utility,
    make_classifier,
    reidentification,
    task_classification,
)
from .executors import check_executor, default_workers, job_results
from .executors import progress as _progress
from .frontier import ALG1, FLOOR, FLOOR_EPSILON
from .grid import (
    EVALUATE_MECHANISMS,
    EvaluationPlan,
    GridPoint,
    LabelledRecording,
    Sanitized,
    feature_signals,
    grid_config,
    offline_mechanism,
    point_rows,
    sanitize,
)
from .manifest import read_manifest, read_manifest_rows
from .splits import chunked_split, cross_session_folds, lopo_splits
from .synthetic_study import synthetic_study

__all__ = [
    "CLASSIFIERS", "EVALUATE_MECHANISMS", "REID_SPLITS", "Baseline", "EvaluationPlan", "GridPoint", "LabelledRecording",
    "Released", "Sanitized", "baseline_points", "chunked_split", "cross_session_folds", "default_workers", "evaluate",
    "feature_signals", "grid_config", "label_utility", "lopo_splits", "make_classifier", "offline_mechanism",
    "published", "read_manifest", "read_manifest_rows", "reidentification", "sanitize", "synthetic_study",
    "task_classification",
]

#: the mechanism of the references: Bozkir et al.'s Algorithm 1
ALGORITHM_1 = "dcfpa-bozkir"


def published(config: SessionConfig) -> SessionConfig:
    """``config`` as Algorithm 1 was published: equal weights, no ceiling, the mechanism's own
    transform, k and sensitivity (the configured ones are the user's mechanism's); bounds, signal
    and the rest as configured.

    Examples
    --------
    >>> cfg = published(SessionConfig(level_share=0.3))
    >>> cfg.weights, cfg.epsilon_ceiling, cfg.level_share
    ('equal', None, None)
    """
    return replace(config, weights="equal", epsilon_ceiling=None, transform=None, k=None, sensitivity=None,
                   level_share=None)  # fmt: skip


@dataclass(frozen=True)
class Baseline(GridPoint):
    """A reference point of the trade-off's curve: Algorithm 1 (:data:`ALGORITHM_1`) as
    :func:`published`, its rows' ``mechanism`` said as ``label`` (:data:`~streamdp.offline.frontier.ALG1`,
    or :data:`~streamdp.offline.frontier.FLOOR` at ε :data:`~streamdp.offline.frontier.FLOOR_EPSILON`).

    Examples
    --------
    >>> Baseline(ALGORITHM_1, 400.0, 32, ALG1).epsilon_chunk(SessionConfig())  # no ceiling: all of it
    400.0
    """

    label: str = ALG1

    def config(self, base: SessionConfig) -> SessionConfig:
        return grid_config(published(base), self.mechanism, self.epsilon, self.chunk_length)


def baseline_points(grid: Sequence[GridPoint]) -> list[Baseline]:
    """The references of ``grid``'s curves: Algorithm 1 at every (chunk length, ε) of its noised
    points, then the floor at every chunk length of the grid (one point each: the floor's cost).

    Examples
    --------
    >>> [(b.label, b.epsilon, b.chunk_length) for b in baseline_points([GridPoint("none", 0.0, 32),
    ...     GridPoint("dcfpa", 25.0, 32), GridPoint("cfpa", 25.0, 32)])]
    [('alg1', 25.0, 32), ('floor', 0.5, 32)]
    """
    noised = dict.fromkeys((p.chunk_length, p.epsilon) for p in grid if p.mechanism != "none")
    lengths = dict.fromkeys(p.chunk_length for p in grid)
    return [Baseline(ALGORITHM_1, e, n, ALG1) for n, e in noised] + [
        Baseline(ALGORITHM_1, FLOOR_EPSILON, n, FLOOR) for n in lengths]  # fmt: skip


def _rows(job: Callable[..., list[dict[str, Any]]], recs: Sequence[LabelledRecording], config: SessionConfig,
          plan: EvaluationPlan, *more: Any) -> list[dict[str, Any]]:  # fmt: skip
    """One (point, seed) job: a grid point's by ``job``; a :class:`Baseline`'s measured on the
    releases as made (never post-processed, never fitted: the references are as published)."""
    *shared, point, noise_seed, repetition = more
    if not isinstance(point, Baseline):
        return job(recs, config, plan, *shared, point, noise_seed, repetition)
    as_made = replace(plan, postprocess=False)
    rows = point_rows(recs, published(config), as_made, point, noise_seed, repetition)
    fitted = {"weights": "equal", "fold_weights": "-"} if shared else {}  # the columns of fitted rows
    return [{**r, "mechanism": point.label, **fitted} for r in rows]


def evaluate(
    recs: Sequence[LabelledRecording],
    grid: Sequence[GridPoint],
    seed: int = 0,
    progress: bool = True,
    config: SessionConfig | None = None,
    *,
    seeds: int = 1,
    tasks: Sequence[str] = ("task",),
    splits: Sequence[str] = ("chunked",),
    workers: int = 1,
    postprocess: bool = False,
    executor: str = "processes",
    scheduler: Any = None,
    fit_weights: bool = False,
    baselines: bool = False,
    on_job: Callable[[], object] | None = None,
) -> list[dict[str, Any]]:
    """One row per grid point × noise seed × metric × target × classifier × voting × post-processing.

    Repetition j sanitizes recording i with seed ``seed + j·len(recs) + i`` (no two share
    noise) and seeds the classifiers with j. Utility rows have one row per task label (target =
    the label); re-identification rows name the split; task rows name the manifest column.
    ``workers > 1`` runs the jobs on that many local processes; ``executor="dask"`` runs them on a
    dask.distributed cluster instead (``scheduler``: its address, a ``distributed.Client``, a
    cluster object, or None for a local cluster; ``workers`` is then the cluster's business and
    unused). The rows come back in job order whatever the order they finish in, and are the same
    wherever the jobs ran, byte for byte.

    Every row says ``postprocess``: ``"no"`` for the releases as made; with ``postprocess=True``
    a point whose mechanism has a stated noise model (:data:`streamdp.postprocess.SUPPORTED_MECHANISMS`)
    also gets its rows measured on the same releases post-processed (``"yes"``:
    :mod:`streamdp.offline.postprocessed`; no ε is spent).

    ``fit_weights=True`` splits each streaming mechanism's ε by weights fitted on each training
    fold alone (:mod:`streamdp.offline.fold_weights`: never on a test recording, step or person),
    instead of the configured ``weights``; every row then says ``weights`` (``"fitted"``; ``"-"``
    without noise, ``"equal"`` for an offline mechanism) and ``fold_weights`` (the digest of each
    fold's weights, as the ledgers of its releases state it). Without it the rows are those of
    earlier versions, byte for byte.

    ``baselines=True`` also measures the references of :func:`streamdp.offline.frontier.frontier`
    (:func:`baseline_points`: Algorithm 1 as :func:`published` at each ε and chunk length, the floor
    at each chunk length) with the same seeds, after the grid's rows, their ``mechanism`` said as
    ``"alg1"`` and ``"floor"``; never post-processed or fitted.

    ``on_job``, when given, is called in this process each time a job (a grid point × seed) has
    finished: a progress report's count of the work done.

    Raises
    ------
    TypeError, ValueError
        A grid point's configuration is refused, an unknown split, a task column some recording
        lacks, ``seeds`` or ``workers`` below 1, ``postprocess``, ``fit_weights`` or ``baselines`` not a bool, an
        unknown ``executor``, a ``scheduler`` without ``executor="dask"`` (all checked before any
        work).
    InputError
        ``fit_weights``: a training fold the weights cannot be fitted on (named, before any work).
    StreamdpError
        ``executor="dask"`` without the ``dask`` extra.
    """
    if on_job is not None and not callable(on_job):
        raise TypeError(f"on_job must be callable or None, got {on_job!r}")
    base = config or SessionConfig()
    for point in grid:
        point.config(base)
    for name, v in (("seeds", seeds), ("workers", workers)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int, got {v!r}")
        if v < 1:
            raise ValueError(f"{name} must be ≥ 1, got {v!r}")
    for name, flag in (("postprocess", postprocess), ("fit_weights", fit_weights), ("baselines", baselines)):
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be a bool, got {flag!r}")
    points = [*grid, *(baseline_points(grid) if baselines else ())]
    for point in points[len(grid) :]:
        point.config(base)
    check_executor(executor, scheduler)
    for split in splits:
        if split not in REID_SPLITS:
            raise ValueError(f"split must be one of {', '.join(REID_SPLITS)}, got {split!r}")
    for column in tasks:
        lacking = [r.name for r in recs if column not in ("task", "participant") and column not in r.labels]
        if lacking:
            raise ValueError(f"task column {column!r} is missing for {', '.join(lacking[:3])}")
    plan = EvaluationPlan(tuple(tasks), tuple(splits), postprocess=postprocess)
    jobs = [(point, seed + j * len(recs), j) for point in points for j in range(seeds)]
    results: dict[int, list[dict[str, Any]]] = {}
    job: Callable[..., list[dict[str, Any]]] = point_rows
    shared: tuple[Any, ...] = (list(recs), base, plan)
    if fit_weights:  # every fold fitted here, before any job: what the workers get is plain values
        from .fold_weights import fit_folds, fitted_job

        job, shared = fitted_job, (*shared, fit_folds(recs, grid, base, plan))
    if baselines:
        job, shared = _rows, (job, *shared)
    # spawn, not fork: a fork after scikit-learn or BLAS started threads can deadlock the child
    done = job_results(job, jobs, workers=workers, executor=executor, scheduler=scheduler,
                       shared=shared, start_method="spawn")  # fmt: skip
    with closing(done):
        for i, rows in _progress(done, progress, len(jobs)):
            results[i] = rows
            if on_job is not None:
                on_job()
    return [row for i in range(len(jobs)) for row in results[i]]
