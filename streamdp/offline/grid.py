"""The grid of ``streamdp evaluate`` (:mod:`streamdp.offline.evaluate`): the labelled recordings'
feature rows, each grid point's configuration and releases, and the rows one (grid point, seed) job
measures on them.

Features come from the session core (:meth:`Session.feature_rows
<streamdp.session.Session.feature_rows>`) and every grid point's releases from its configuration's
chunk privatizer (:func:`grid_config`), so evaluation sees what a live session releases.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..gaze import Recording
from ..privacy.mechanisms import FPA, MECHANISMS, OFFLINE_MECHANISMS
from ..session import Session
from ..stages.features import FeatureRows
from .classify import Released, label_utility, reidentification, task_classification
from .postprocessed import post_processor, postprocess_parts

__all__ = [
    "EVALUATE_MECHANISMS", "MIN_STEPS", "EvaluationPlan", "GridPoint", "LabelledRecording", "Sanitized",
    "feature_signals", "grid_config", "labelled_rows", "log_skipped", "offline_mechanism", "point_base", "point_rows",
    "result_rows", "sanitize", "utility_rows",
]

#: the evaluation's logger (a skipped recording is said there)
log = logging.getLogger("streamdp.offline.evaluate")

#: a recording with fewer feature steps is too short to train or test on: it is skipped
MIN_STEPS = 20

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
        labelled, steps = labelled_rows(rec, participant, task, cfg, labels[i] if labels is not None else None)
        if labelled is None:
            log_skipped(rec.name, steps)
        else:
            out.append(labelled)
    return out


def labelled_rows(
    rec: Recording, participant: str, task: str, config: SessionConfig, labels: Mapping[str, str] | None = None
) -> tuple[LabelledRecording | None, int]:
    """One recording's feature rows (:func:`feature_signals`) and their count; None in their place
    below :data:`MIN_STEPS` (the caller says so: :func:`log_skipped`)."""
    rows = Session.for_recording(config, rec).feature_rows(rec)
    if len(rows) < MIN_STEPS:
        return None, len(rows)
    return LabelledRecording(rec.name, participant, task, rows.values, rows.t, dict(labels or {})), len(rows)


def log_skipped(name: str, steps: int) -> None:
    log.warning("skipped %s: only %d feature steps", name, steps)


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
    # the evaluation post-processes its own way (per split, both with and without: postprocessed.py)
    base = replace(base, postprocess_releases=False)
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


def point_rows(
    recs: Sequence[LabelledRecording], config: SessionConfig, plan: EvaluationPlan, point: GridPoint, noise_seed: int,
    repetition: int,
) -> list[dict[str, Any]]:  # fmt: skip
    """One (grid point, seed) job of :func:`~streamdp.offline.evaluate.evaluate`: the recordings
    sanitized with ``noise_seed`` (:func:`sanitize`) and every measure of ``plan`` on them, as made
    and, with ``plan.postprocess``, post-processed; the classifiers seeded with ``repetition``."""
    parts = sanitize(recs, point.mechanism, point.epsilon, point.chunk_length, noise_seed, config)
    base = point_base(point, config, repetition)
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
    rows: list[dict[str, Any]] = []
    if point.mechanism != "none":
        released = grid_config(config, point.mechanism, point.epsilon, point.chunk_length).bounds_profile().released
        rows += utility_rows(base, label_utility(parts, [r.task for r in recs], released))
    for split in plan.splits:
        result = reidentification(parts, people, split=split, window=window, every=plan.reid_every, seed=base["seed"])
        rows += result_rows(base, "reidentification", split, result, 1.0 / len(set(people)))
    for column in plan.tasks:
        labels = [r.label(column) for r in recs]
        result = task_classification(parts, people, labels, every=plan.task_every, seed=base["seed"])
        rows += result_rows(base, "task", column, result, 1.0 / len(set(labels)))
    return rows


def point_base(point: GridPoint, config: SessionConfig, repetition: int) -> dict[str, Any]:
    """The columns every row of a (grid point, seed) job starts with.

    Examples
    --------
    >>> point_base(GridPoint("lpa", 2.0, 32), SessionConfig(), 1)["epsilon_chunk"]
    2.0
    """
    return {"mechanism": point.mechanism, "epsilon": point.epsilon, "epsilon_chunk": point.epsilon_chunk(config),
            "chunk_length": point.chunk_length, "seed": repetition}  # fmt: skip


def utility_rows(base: Mapping[str, Any], by_label: Mapping[str, float], **extra: Any) -> list[dict[str, Any]]:
    """The rows of the utility per task label (``extra``: columns after the others).

    Examples
    --------
    >>> [(r["target"], r["value"], r["weights"]) for r in utility_rows({"seed": 0}, {"reading": 2.5}, weights="x")]
    [('reading', 2.5, 'x')]
    """
    return [{**base, "metric": "utility", "target": label, "classifier": "-", "voting": "-", "value": u,
             "chance": float("nan"), **extra} for label, u in by_label.items()]  # fmt: skip


def result_rows(
    base: Mapping[str, Any], metric: str, target: str, result: Mapping[str, tuple[float, float]], chance: float,
    **extra: Any,
) -> list[dict[str, Any]]:  # fmt: skip
    """The rows of a classifier measure, (per-sample, voted) accuracy per classifier (``extra``:
    columns after the others).

    Examples
    --------
    >>> [(r["voting"], r["value"]) for r in result_rows({}, "task", "task", {"knn": (0.6, 1.0)}, 0.5)]
    [('no', 0.6), ('yes', 1.0)]
    """
    return [{**base, "metric": metric, "target": target, "classifier": clf, "voting": voting, "value": value,
             "chance": chance, **extra}
            for clf, (acc, voted) in result.items() for voting, value in (("no", acc), ("yes", voted))]  # fmt: skip
