"""``streamdp evaluate --channel gaze``: what the real-time gaze channel's mechanisms cost in
utility and what they leave of a person's identity, on synthetic people (issue #20).

For a grid of gaze mechanisms × ε per tick per degree (``ε_w/w``) × window ``w``, each run with
several noise seeds, on the people of :func:`~streamdp.offline.gaze_study.gaze_study`:

- **angular error** of the released ticks from the raw ticks (median and 95th percentile, over
  the ticks with gaze and over all ticks) of the dwell and pursuit tasks (a manifest's study,
  which has neither: of all its recordings);
- **dwell selection** on the 3 × 3 grid (1 s dwell, 7.5° cells): the fraction of trials whose
  first selection is the intended target, and the mean time to it;
- **smooth pursuit**: the error from the moving target (median, 95th percentile);
- **re-identification**: the 52 features an attacker computes from the released stream of each
  reading and search recording (:func:`~streamdp.offline.gaze_study.ticks_recording`), the first
  half training and the second testing, each half's features from that half alone; k-NN, SVM,
  tree and forest (:mod:`streamdp.offline.classify`), per sample and voted per recording; with
  ``attackers`` naming ``"cnn"``, also a convolutional network over the released ticks' velocity
  trained on the same halves (:mod:`streamdp.offline.gaze_sequence_attacker`, the ``attack``
  extra), per window and voted per recording (rows of classifier ``"cnn"``);
- **task**: with task labels (a manifest's study, :mod:`streamdp.offline.gaze_manifest`), the
  same features classify each recording's task, leaving one participant out; with ``"cnn"``, the
  network classifies it too, on the halves it re-identifies on.

Every measure is taken on the stream as released (filter ``"none"``) and after each public
post-processing filter (:func:`~streamdp.offline.gaze_study.smooth`), which an app, or an
attacker, applies for free. Two baselines: ``raw-ticks`` (the ticks without noise) and
``raw-gaze`` (re-identification from the raw gaze, pupil diameters included). The noise is that
of a session's channel: the configuration's own factory makes each mechanism, and each
recording's ticks are released in the batches a session releases them
(:func:`~streamdp.offline.gaze_study.sanitize_stream`); repetition j releases recording i with
seed ``seed + j·R + i`` (R recordings).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from contextlib import closing
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..privacy.gaze_mechanisms import GAZE_MECHANISMS, GazeMechanism
from ..privacy.noise import secure_generator
from .classify import Released, reidentification, task_classification
from .executors import job_results
from .executors import progress as progress_bar
from .gaze_measures import angular_error, dwell_accuracy
from .gaze_sequence_attacker import ATTACKERS, CNN_CLASSIFIER, check_attackers, cnn_classification, require_torch
from .gaze_study import GazeStudy, check_filter, midpoint, sanitize_stream, smooth, split_features, ticks_recording

_F64 = NDArray[np.float64]

#: the baselines beside the mechanisms: the ticks without noise, and the raw gaze (re-identification only)
BASELINES = ("raw-ticks", "raw-gaze")
#: the default grid: ε per tick per degree (ε_w/w) and the windows w in ticks
DEFAULT_TICK_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_WINDOWS = (30, 60)
#: the dwell selection the issue asks for: 1 s on cells of 7.5° (half the grid's spacing)
DWELL_S, CELL_RADIUS_DEG = 1.0, 7.5
#: re-identification samples every 5th feature step, as the features evaluation
REID_EVERY = 5


@dataclass(frozen=True)
class GazePoint:
    """One grid point: a gaze mechanism (or a baseline), ε per tick per degree and the window w."""

    mechanism: str
    epsilon_tick: float = math.inf
    w: int = 0

    @property
    def epsilon_w(self) -> float:
        """ε per degree over any ``w`` consecutive ticks (``ε_tick · w``); inf for a baseline."""
        return self.epsilon_tick * self.w if self.mechanism in GAZE_MECHANISMS else math.inf

    def instance(self, config: SessionConfig) -> GazeMechanism | None:
        """The mechanism a session of ``config`` would run at this point (None for a baseline).

        Raises
        ------
        ValueError, TypeError
            A mechanism, ε or w the configuration or the mechanism refuses (named).
        """
        if self.mechanism in BASELINES:
            return None
        if self.mechanism not in GAZE_MECHANISMS:
            known = ", ".join((*GAZE_MECHANISMS, *BASELINES))
            raise ValueError(f"mechanism must be one of {known}, got {self.mechanism!r}")
        cfg = replace(
            config, gaze_channel=True, gaze_mechanism=self.mechanism, gaze_epsilon=self.epsilon_w, gaze_w=self.w
        )
        return cfg.gaze_mechanism_instance(None)


def gaze_grid(
    mechanisms: Sequence[str], tick_epsilons: Sequence[float], windows: Sequence[int], uniform_w: int = 60
) -> list[GazePoint]:
    """The baselines, then each mechanism × ε per tick × w; ``geo-uniform``'s noise depends on
    ``ε_w/w`` only, so it is run once per ε, at ``uniform_w``."""
    grid = [GazePoint(b) for b in BASELINES]
    for m in mechanisms:
        for w in [uniform_w] if m == "geo-uniform" else windows:
            grid += [GazePoint(m, float(e), int(w)) for e in tick_epsilons]
    return grid


@dataclass(frozen=True)
class GazePlan:
    """What every job measures: the filters besides ``"none"``, whether to attack, and with which
    attackers of the participant and the task (:data:`~streamdp.offline.gaze_sequence_attacker.ATTACKERS`)."""

    filters: tuple[str, ...] = ()
    reid: bool = True
    attackers: tuple[str, ...] = ("features",)


def evaluate_gaze(
    study: GazeStudy,
    grid: Sequence[GazePoint],
    *,
    seed: int = 0,
    seeds: int = 1,
    filters: Sequence[str] = (),
    reid: bool = True,
    attackers: Sequence[str] = ("features",),
    workers: int = 1,
    progress: bool = False,
) -> list[dict[str, Any]]:
    """One row per grid point × seed × filter × metric × target (× classifier × voting for the
    attack), in job order whatever order the jobs finish in. ``attackers``: the attackers of
    the participant and (with task labels) the task, ``"features"`` (the 52 features, four
    classifiers; also the raw-gaze baseline) and ``"cnn"`` (the network on the ticks).

    Raises
    ------
    ValueError, TypeError
        A point the configuration refuses, an unknown filter or attacker, ``seeds`` or
        ``workers`` below 1 (all before any work).
    ImportError
        ``"cnn"`` without PyTorch (naming the ``attack`` extra), before any work.
    """
    for point in grid:
        point.instance(study.config)
    chosen = check_attackers(attackers)
    if CNN_CLASSIFIER in chosen and reid:
        require_torch()
    for name, v in (("seeds", seeds), ("workers", workers)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be an int ≥ 1, got {v!r}")
    reid = reid and bool(study.recordings)  # a study made without its re-identification recordings
    plan = GazePlan(tuple(check_filter(f) for f in filters if f != "none"), reid, chosen)
    jobs = [(p, seed + j * len(study.streams), j) for p in grid for j in range(seeds)]
    jobs = [job for job in jobs if (reid and "features" in chosen) or job[0].mechanism != "raw-gaze"]
    results: dict[int, list[dict[str, Any]]] = {}
    # spawn, as evaluate(): no fork after scikit-learn or BLAS started threads
    done = job_results(run_gaze_job, jobs, workers=workers, shared=(study, plan), start_method="spawn")
    with closing(done):
        for i, rows in progress_bar(done, progress, len(jobs)):
            results[i] = rows
    return [row for i in range(len(jobs)) for row in results[i]]


def run_gaze_job(
    study: GazeStudy, plan: GazePlan, point: GazePoint, noise_seed: int, repetition: int
) -> list[dict[str, Any]]:
    """The rows of one (grid point, seed) job of ``study`` and ``plan``."""
    base = {
        "channel": "gaze",
        "mechanism": point.mechanism,
        "epsilon_tick": point.epsilon_tick,
        "w": point.w,
        "epsilon_w": point.epsilon_w,
        "seed": repetition,
    }
    chance = 1.0 / len(study.people)
    if point.mechanism == "raw-gaze":  # the feature attacker's baseline
        parts = [
            _split_parts(study, rec, midpoint(s.ticks.t))
            for rec, s in zip(study.recordings, study.reid_streams, strict=True)
        ]
        return _reid_rows({**base, "filter": "none"}, parts, study, repetition, "gaze", chance)
    mech = point.instance(study.config)
    released, spent = [], []
    for i, stream in enumerate(study.streams):
        if mech is None:
            released.append(stream.ticks.deg)
        else:
            positions, eps = sanitize_stream(stream, mech, secure_generator(noise_seed + i))
            released.append(positions)
            spent.append(eps)
    rows: list[dict[str, Any]] = []
    if spent:
        rows.append(
            {
                **base,
                "filter": "none",
                "metric": "epsilon_spent_tick",
                "target": "all",
                "classifier": "-",
                "voting": "-",
                "value": float(np.mean(np.concatenate(spent))),
                "chance": math.nan,
            }
        )
    for name in ("none", *plan.filters):
        values = [smooth(v, name) for v in released]
        at = {**base, "filter": name}
        rows += utility_rows(study, values, at)
        if plan.reid:
            n = len(study.dwell) + len(study.pursuit)
            parts = [
                _split_parts(study, ticks_recording(s.ticks.t, v, study.fov_deg, rec.name), midpoint(s.ticks.t))
                for rec, s, v in zip(study.recordings, study.reid_streams, values[n:], strict=True)
            ]
            if "features" in plan.attackers:
                rows += _reid_rows(at, parts, study, repetition, "ticks", chance)
            if CNN_CLASSIFIER in plan.attackers:
                rows += cnn_rows(study, values[n:], at, repetition)
    return rows


def cnn_rows(study: GazeStudy, values: Sequence[_F64], at: dict[str, Any], repetition: int) -> list[dict[str, Any]]:
    """Re-identification of ``study.person_of`` and, when the study has task labels, the
    classification of ``study.task_of``, by the network (classifier ``"cnn"``) from the released
    positions ``values`` of the re-identification recordings, each cut at its midpoint (the first
    halves train for both); the network's seed is the repetition's."""
    streams = study.reid_streams
    tracks = [(s.ticks.t, v) for s, v in zip(streams, values, strict=True)]
    mids = [midpoint(s.ticks.t) for s in streams]
    attacks = [("reidentification", study.person_of, 1.0 / len(study.people))]
    if study.task_of:
        attacks.append(("task_accuracy", study.task_of, 1.0 / len(set(study.task_of))))
    rows = []
    for metric, labels, chance in attacks:
        acc, voted = cnn_classification(tracks, labels, mids, seed=repetition)
        row = {**at, "metric": metric, "target": "ticks", "classifier": CNN_CLASSIFIER, "chance": chance}
        rows += [{**row, "voting": "no", "value": acc}, {**row, "voting": "yes", "value": voted}]
    return rows


def path_errors(t: _F64, deg: _F64, target_t: _F64, target_deg: _F64) -> _F64:
    """Euclidean distance (degrees) of each position from the target's path interpolated at its
    time, as :func:`~streamdp.offline.gaze_measures.pursuit_error` measures it."""
    true = np.stack([np.interp(t, target_t, target_deg[:, 0]), np.interp(t, target_t, target_deg[:, 1])], axis=1)
    return np.asarray(np.hypot(*(deg - true).T))


def utility_rows(study: GazeStudy, values: Sequence[_F64], at: dict[str, Any]) -> list[dict[str, Any]]:
    """Angular error, dwell selection and pursuit of the released positions ``values`` (one array
    per stream of ``study``, in its order), pooled over the people."""
    nan = math.nan
    rows: list[dict[str, Any]] = []

    def row(metric: str, target: str, value: float, chance: float = nan) -> None:
        rows.append(
            {
                **at,
                "metric": metric,
                "target": target,
                "classifier": "-",
                "voting": "-",
                "value": value,
                "chance": chance,
            }
        )

    n_dwell, n_tasks = len(study.dwell), len(study.dwell) + len(study.pursuit)
    scored = n_tasks or len(study.streams)  # no synthetic tasks (a manifest's study): every recording
    streams = study.streams[:scored]
    got = np.concatenate(list(values[:scored]))
    raw = np.concatenate([s.ticks.deg for s in streams])
    has = np.concatenate([s.ticks.has_gaze for s in streams])
    for target, mask in (("has_gaze", has), ("all", np.ones(len(has), dtype=bool))):
        err = angular_error(got[mask], raw[mask])
        row("error_median", target, err.median)
        row("error_p95", target, err.p95)
    if not n_dwell or not len(study.pursuit):
        return rows
    hits = trials = 0
    time_sum = 0.0
    for task, stream, v in zip(study.dwell, study.dwell_streams, values[:n_dwell], strict=True):
        score = dwell_accuracy(
            stream.ticks.t,
            v,
            task.targets_deg,
            task.trial_start,
            task.trial_target,
            trial_end=task.trial_end,
            dwell_s=DWELL_S,
            radius_deg=CELL_RADIUS_DEG,
        )
        h = round(score.accuracy * score.trials)
        hits, trials = hits + h, trials + score.trials
        time_sum += score.mean_time_s * h if h else 0.0
    chance = 1.0 / len(study.dwell[0].targets_deg)
    row("dwell_accuracy", "grid3x3", hits / trials, chance)
    row("dwell_time_s", "grid3x3", time_sum / hits if hits else nan)
    errs = [
        path_errors(s.ticks.t, v, task.target_t, task.target_deg)
        for task, s, v in zip(study.pursuit, study.pursuit_streams, values[n_dwell:n_tasks], strict=True)
    ]
    median, p95 = np.percentile(np.concatenate(errs), [50.0, 95.0])
    row("pursuit_median", "circle", float(median))
    row("pursuit_p95", "circle", float(p95))
    return rows


def _split_parts(study: GazeStudy, rec: Any, mid: float) -> Released:
    """One recording's feature rows, first half (chunk 0, training) and second (chunk 1, test)."""
    t_tr, x_tr, t_te, x_te = split_features(rec, mid, study.config)
    rows = np.concatenate([x_tr, x_te])
    chunk = np.concatenate([np.zeros(len(t_tr), dtype=np.intp), np.ones(len(t_te), dtype=np.intp)])
    return Released(rows, rows, np.concatenate([t_tr, t_te]), chunk)


def _reid_rows(
    at: dict[str, Any], parts: list[Released], study: GazeStudy, repetition: int, target: str, chance: float
) -> list[dict[str, Any]]:
    """Re-identification of ``study.person_of`` and, when the study has task labels, task
    classification of ``study.task_of`` (leaving one participant out), from the same rows."""
    window = study.config.window_config().window
    result = reidentification(
        list(parts), list(study.person_of), split="chunked", window=window, every=REID_EVERY, seed=repetition
    )
    attacks = [("reidentification", chance, result)]
    if study.task_of:
        tasks = task_classification(list(parts), list(study.person_of), list(study.task_of), seed=repetition)
        attacks.append(("task_accuracy", 1.0 / len(set(study.task_of)), tasks))
    return [
        {
            **at,
            "metric": metric,
            "target": target,
            "classifier": clf,
            "voting": voting,
            "value": value,
            "chance": base,
        }
        for metric, base, scores in attacks
        for clf, (acc, voted) in scores.items()
        for voting, value in (("no", acc), ("yes", voted))
    ]


__all__ = [
    "ATTACKERS",
    "BASELINES",
    "DEFAULT_TICK_EPSILONS",
    "DEFAULT_WINDOWS",
    "GazePlan",
    "GazePoint",
    "cnn_rows",
    "evaluate_gaze",
    "gaze_grid",
    "path_errors",
    "run_gaze_job",
    "utility_rows",
]
