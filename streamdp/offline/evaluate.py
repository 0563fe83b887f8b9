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
seconds. The result files are written by :mod:`streamdp.offline.results`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..gaze import Recording
from ..privacy.mechanisms import FPA, MECHANISMS, OFFLINE_MECHANISMS
from ..session import Session
from ..stages.features import FeatureRows
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
from .manifest import read_manifest, read_manifest_rows
from .postprocessed import post_processor, postprocess_parts
from .splits import chunked_split, cross_session_folds, lopo_splits
from .synthetic_study import synthetic_study

__all__ = [
    "CLASSIFIERS", "EVALUATE_MECHANISMS", "REID_SPLITS", "GridPoint", "LabelledRecording", "Released",
    "chunked_split", "cross_session_folds", "default_workers", "evaluate", "feature_signals", "grid_config",
    "label_utility", "lopo_splits", "make_classifier", "read_manifest", "read_manifest_rows", "reidentification",
    "sanitize", "synthetic_study", "task_classification",
]

log = logging.getLogger(__name__)

#: what a grid point may name: no noise, a streaming mechanism of the registry, or an offline one
EVALUATE_MECHANISMS: tuple[str, ...] = ("none", *MECHANISMS, *OFFLINE_MECHANISMS)


@dataclass(frozen=True)
class LabelledRecording:
    name: str
    participant: str
    task: str
    features: NDArray[np.float64]  # (steps, 52), unsanitized
    #: step times (steps,); None: consecutive steps of the configured step
    t: NDArray[np.float64] | None = None
    #: the manifest's other columns (gender, session, …)
    labels: Mapping[str, str] = field(default_factory=dict)

    def label(self, column: str) -> str:
        """The recording's value in a manifest column (``"task"``, ``"participant"`` or another).

        Raises
        ------
        KeyError
            The recording has no such column.
        """
        if column in ("task", "participant"):
            return str(getattr(self, column))
        return self.labels[column]


def feature_signals(
    items: Sequence[tuple[Recording, str, str]],
    config: SessionConfig | None = None,
    labels: Sequence[Mapping[str, str]] | None = None,
) -> list[LabelledRecording]:
    """Each recording's unsanitized feature rows, computed once by the session core as
    :meth:`Session.run <streamdp.session.Session.run>` computes them (camera, units, diameter
    unit, blinks; default :class:`SessionConfig`), to be sanitized many ways.

    Raises
    ------
    InputError
        ``blinks="given"`` and a recording has no blink events; gaze the session refuses.
    """
    cfg = config or SessionConfig()
    out = []
    for i, (rec, participant, task) in enumerate(items):
        rows = Session.for_recording(cfg, rec).feature_rows(rec)
        if len(rows) < 20:
            log.warning("skipped %s: only %d feature steps", rec.name, len(rows))
            continue
        extra = dict(labels[i]) if labels is not None else {}
        out.append(LabelledRecording(rec.name, participant, task, rows.values, rows.t, extra))
    return out


#: the released steps of one recording (the old name)
Sanitized = Released


def grid_config(base: SessionConfig, mechanism: str, epsilon: float, chunk_length: int) -> SessionConfig:
    """The configuration whose chunk privatizer sanitizes one grid point, checked.

    A streaming mechanism: ``base`` with the point's mechanism, ε and chunk length. ``"none"`` and
    an offline mechanism: a configuration that only marks where ``base``'s chunker cuts chunks of
    ``chunk_length`` (its noise is discarded, so it is LPA under the chunk unit, charging no budget).

    Raises
    ------
    ValueError
        ``mechanism`` is none of :data:`EVALUATE_MECHANISMS`; a parameter out of range.
    TypeError
        A parameter of the wrong type, or one the mechanism does not take (e.g. ``k`` for lpa).

    Examples
    --------
    >>> grid_config(SessionConfig(), "lpa", 2.0, 32).mechanism_instance()
    LPA(epsilon=2.0, chunk_length=32, bounds=<'default', 52 features>)
    >>> grid_config(SessionConfig(k=3), "lpa", 2.0, 32)
    Traceback (most recent call last):
    ...
    TypeError: lpa does not take parameter 'k'
    """
    if mechanism not in EVALUATE_MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(EVALUATE_MECHANISMS)}, got {mechanism!r}")
    if mechanism in MECHANISMS:
        return replace(base, mechanism=mechanism, epsilon=epsilon, chunk_length=chunk_length).check()
    if mechanism in OFFLINE_MECHANISMS:
        offline_mechanism(base, mechanism, epsilon)
    cut = replace(base, mechanism="lpa", epsilon=1.0, chunk_length=chunk_length, unit="chunk", budget=None, w=None)
    return replace(cut, transform=None, k=None, sensitivity=None).check()


def offline_mechanism(config: SessionConfig, mechanism: str, epsilon: float) -> FPA:
    """The offline mechanism ``mechanism`` at total ε ``epsilon`` (all features together, split
    equally: the grid's ε is a total for every mechanism), with ``config``'s bounds and the
    mechanism parameters ``config`` sets.

    Raises
    ------
    TypeError, ValueError
        A parameter the mechanism does not take (named), or of the wrong type or out of range.

    Examples
    --------
    >>> offline_mechanism(SessionConfig(), "fpa", 52.0).epsilon
    1.0
    """
    cls = OFFLINE_MECHANISMS[mechanism]
    params = {key: v for key, v in config.mechanism_params().items() if key not in ("epsilon", "chunk_length")}
    for key in params:
        if key not in cls.parameters:
            raise TypeError(f"{mechanism} does not take parameter {key!r}")
    bounds = config.bounds_profile()
    return cls(epsilon=epsilon / len(bounds.names), bounds=bounds, **params)


def sanitize(
    recs: Sequence[LabelledRecording],
    mechanism: str,
    epsilon: float,
    n: int,
    seed: int,
    config: SessionConfig | None = None,
) -> list[Released]:
    """Each recording's rows through the chunk privatizer of :func:`grid_config` (chunker,
    mechanism and accountant, as live; the i-th recording seeded ``seed + i``). Chunks hold
    consecutive steps only and a partial chunk is dropped, as live; each released step keeps its
    time and its chunk. ``"none"`` returns the released
    steps' rows unchanged, and an offline mechanism (``"fpa"``) perturbs them as one whole signal.

    Raises
    ------
    ValueError, TypeError
        From :func:`grid_config`.
    """
    base = config or SessionConfig()
    cfg = grid_config(base, mechanism, epsilon, n)
    offline = offline_mechanism(base, mechanism, epsilon) if mechanism in OFFLINE_MECHANISMS else None
    out = []
    for i, r in enumerate(recs):
        t = r.t if r.t is not None else np.arange(len(r.features), dtype=np.float64) * cfg.step
        privatizer = cfg.chunk_privatizer(seed + i)
        releases = privatizer.update(FeatureRows(t, r.features)) + privatizer.flush()
        steps = np.concatenate([rel.t for rel in releases]) if releases else np.empty(0)
        chunk = np.repeat(np.arange(len(releases), dtype=np.intp), [len(rel.t) for rel in releases])
        clean = r.features[np.searchsorted(t, steps)]
        if mechanism in MECHANISMS and releases:
            noisy = np.concatenate([rel.values for rel in releases])
        elif offline is not None and len(clean):
            noisy = offline.privatize(clean, cfg.rng(seed + i)).values
        else:
            noisy = clean
        out.append(Released(clean, noisy, steps, chunk))
    return out


@dataclass(frozen=True)
class GridPoint:
    mechanism: str
    epsilon: float
    chunk_length: int

    def config(self, base: SessionConfig) -> SessionConfig:
        """This point's configuration (:func:`grid_config`), checked: raises what it raises."""
        return grid_config(base, self.mechanism, self.epsilon, self.chunk_length)

    def epsilon_chunk(self, base: SessionConfig) -> float:
        """ε of one chunk of all features at this point; an offline mechanism releases a whole
        recording at once, so its figure is the ε of that one release (which covers every chunk);
        NaN without noise."""
        if self.mechanism in OFFLINE_MECHANISMS:
            mech = offline_mechanism(base, self.mechanism, self.epsilon)
            return float(mech.epsilon * mech.n_features)
        if self.mechanism not in MECHANISMS:
            return float("nan")
        return float(self.config(base).mechanism_instance().epsilon_chunk)


@dataclass(frozen=True)
class EvaluationPlan:
    """What every (grid point, seed) job measures: the targets, the splits, the sampling."""

    tasks: tuple[str, ...] = ("task",)
    splits: tuple[str, ...] = ("chunked",)
    reid_every: int = 5
    task_every: int = 10
    postprocess: bool = False


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

    Raises
    ------
    TypeError, ValueError
        A grid point's configuration is refused, an unknown split, a task column some recording
        lacks, ``seeds`` or ``workers`` below 1, ``postprocess`` not a bool, an unknown ``executor``,
        a ``scheduler`` without ``executor="dask"`` (all checked before any work).
    StreamdpError
        ``executor="dask"`` without the ``dask`` extra.
    """
    base = config or SessionConfig()
    for point in grid:
        point.config(base)
    for name, v in (("seeds", seeds), ("workers", workers)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"{name} must be an int, got {v!r}")
        if v < 1:
            raise ValueError(f"{name} must be ≥ 1, got {v!r}")
    if not isinstance(postprocess, bool):
        raise TypeError(f"postprocess must be a bool, got {postprocess!r}")
    check_executor(executor, scheduler)
    for split in splits:
        if split not in REID_SPLITS:
            raise ValueError(f"split must be one of {', '.join(REID_SPLITS)}, got {split!r}")
    for column in tasks:
        lacking = [r.name for r in recs if column not in ("task", "participant") and column not in r.labels]
        if lacking:
            raise ValueError(f"task column {column!r} is missing for {', '.join(lacking[:3])}")
    plan = EvaluationPlan(tuple(tasks), tuple(splits), postprocess=postprocess)
    jobs = [(point, seed + j * len(recs), j) for point in grid for j in range(seeds)]
    results: dict[int, list[dict[str, Any]]] = {}
    # spawn, not fork: a fork after scikit-learn or BLAS started threads can deadlock the child
    done = job_results(_job, jobs, workers=workers, executor=executor, scheduler=scheduler,
                       shared=(list(recs), base, plan), start_method="spawn")  # fmt: skip
    with closing(done):
        for i, rows in _progress(done, progress, len(jobs)):
            results[i] = rows
    return [row for i in range(len(jobs)) for row in results[i]]


def _job(
    recs: Sequence[LabelledRecording], config: SessionConfig, plan: EvaluationPlan, point: GridPoint, noise_seed: int,
    repetition: int,
) -> list[dict[str, Any]]:  # fmt: skip
    parts = sanitize(recs, point.mechanism, point.epsilon, point.chunk_length, noise_seed, config)
    base = {"mechanism": point.mechanism, "epsilon": point.epsilon, "epsilon_chunk": point.epsilon_chunk(config),
            "chunk_length": point.chunk_length, "seed": repetition}
    window = config.window_config().window
    variants = [("no", parts)]
    processor = post_processor(point.config(config)) if plan.postprocess and point.mechanism in MECHANISMS else None
    if processor is not None:
        variants.append(("yes", postprocess_parts(parts, processor, window)))
    rows: list[dict[str, Any]] = []
    for label, variant in variants:
        rows += _measure(variant, recs, point, config, plan, {**base, "postprocess": label}, window)
    return rows


def _measure(
    parts: list[Released],
    recs: Sequence[LabelledRecording],
    point: GridPoint,
    config: SessionConfig,
    plan: EvaluationPlan,
    base: dict[str, Any],
    window: float,
) -> list[dict[str, Any]]:
    people = [r.participant for r in recs]
    nan = float("nan")
    rows: list[dict[str, Any]] = []
    if point.mechanism != "none":
        released = grid_config(config, point.mechanism, point.epsilon, point.chunk_length).bounds_profile().released
        for label, u in label_utility(parts, [r.task for r in recs], released).items():
            rows.append({**base, "metric": "utility", "target": label, "classifier": "-", "voting": "-",
                         "value": u, "chance": nan})
    measured = []
    for split in plan.splits:
        result = reidentification(parts, people, split=split, window=window, every=plan.reid_every, seed=base["seed"])
        measured.append(("reidentification", split, result, 1.0 / len(set(people))))
    for column in plan.tasks:
        labels = [r.label(column) for r in recs]
        result = task_classification(parts, people, labels, every=plan.task_every, seed=base["seed"])
        measured.append(("task", column, result, 1.0 / len(set(labels))))
    for metric, target, result, chance in measured:
        for clf, (acc, voted) in result.items():
            for voting, value in (("no", acc), ("yes", voted)):
                rows.append({**base, "metric": metric, "target": target, "classifier": clf, "voting": voting,
                             "value": value, "chance": chance})
    return rows
