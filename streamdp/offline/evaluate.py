"""``streamdp evaluate``: what a setting of mechanism, ε and chunk length costs, measured as the
papers do.

For labelled recordings (a manifest gives each one's participant and task) and a grid of
mechanisms × ε × chunk lengths:

- **utility**: Bozkir et al.'s ``1/|NMSE|`` per feature over every recording, averaged;
- **re-identification attack**: classifiers trained on the first half of each recording and
  tested on the second half (both papers' best case for the adversary), labels = participants;
- **task classification**: leave-one-person-out, labels = tasks;

each with k-NN (k = 11, or fewer when the training set is smaller), SVM (RBF, C = 1), a
decision tree and a random forest (10 trees), per sample and with majority voting over each
recording's test samples. Features are standardized with statistics of the training fold only
(a scikit-learn pipeline). Samples are every ``subsample``-th step (5 for the attack, 10 for the
task, as Bozkir et al. did) so that overlapping 30 s windows do not dominate.

Features come from the session core (:meth:`Session.feature_rows
<streamdp.session.Session.feature_rows>`) and every grid point's releases from its configuration's
chunk privatizer (:func:`grid_config`), so evaluation sees what a live session releases. Without a
manifest it runs on synthetic people from the generator, so a new user sees the trade-off in a
minute. The result files are written by :mod:`streamdp.offline.results`.
"""

from __future__ import annotations

import csv
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..errors import InputError
from ..gaze import Recording
from ..privacy.mechanisms import FPA, MECHANISMS, OFFLINE_MECHANISMS
from ..privacy.utility import mean_utility
from ..session import Session
from ..stages.features import FeatureRows

log = logging.getLogger(__name__)

CLASSIFIERS = ("knn", "svm", "tree", "forest")
#: what a grid point may name: no noise, a streaming mechanism of the registry, or an offline one
EVALUATE_MECHANISMS: tuple[str, ...] = ("none", *MECHANISMS, *OFFLINE_MECHANISMS)

_T = TypeVar("_T")


@dataclass(frozen=True)
class LabelledRecording:
    name: str
    participant: str
    task: str
    features: NDArray[np.float64]  # (steps, 52), unsanitized
    #: step times (steps,); None: consecutive steps of the configured step
    t: NDArray[np.float64] | None = None


def read_manifest(path: str | Path) -> list[tuple[Path, str, str]]:
    """A CSV with columns ``recording``, ``participant``, ``task``; paths relative to the manifest.

    Raises
    ------
    InputError
        Missing columns, an empty manifest, or a recording that does not exist (named with its line).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"{p}: cannot read manifest: {exc.strerror}") from None
    rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise InputError(f"{p}: the manifest lists no recording")
    missing = {"recording", "participant", "task"} - set(rows[0])
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(sorted(missing))}")
    out = []
    for i, row in enumerate(rows, start=2):
        rec = (p.parent / row["recording"]).resolve()
        if not rec.exists():
            raise InputError(f"{p}: line {i}: recording {row['recording']!r} does not exist")
        if not row["participant"] or not row["task"]:
            raise InputError(f"{p}: line {i}: participant and task must not be empty")
        out.append((rec, row["participant"], row["task"]))
    return out


def synthetic_study(people: int = 6, seconds: float = 240.0, seed: int = 0) -> list[tuple[Recording, str, str]]:
    """Each synthetic person reads and searches once (two tasks)."""
    from ..synthetic import Task, generate

    out: list[tuple[Recording, str, str]] = []
    for p in range(people):
        tasks: tuple[Task, Task] = ("reading", "search")
        for j, task in enumerate(tasks):
            rec = generate(duration=seconds, rate=120.0, seed=seed * 1000 + 2 * p + j, person=p, task=task).recording
            out.append((rec, f"P{p}", task))
    return out


def feature_signals(
    items: Sequence[tuple[Recording, str, str]], config: SessionConfig | None = None
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
    for rec, participant, task in items:
        rows = Session.for_recording(cfg, rec).feature_rows(rec)
        if len(rows) < 20:
            log.warning("skipped %s: only %d feature steps", rec.name, len(rows))
            continue
        out.append(LabelledRecording(rec.name, participant, task, rows.values, rows.t))
    return out


class Sanitized(NamedTuple):
    """One recording's released steps: their unsanitized rows and what the mechanism made."""

    clean: NDArray[np.float64]
    noisy: NDArray[np.float64]


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
    """The offline mechanism ``mechanism`` with ε ``epsilon``, ``config``'s bounds and the
    mechanism parameters ``config`` sets.

    Raises
    ------
    TypeError, ValueError
        A parameter the mechanism does not take (named), or of the wrong type or out of range.
    """
    cls = OFFLINE_MECHANISMS[mechanism]
    params = {key: v for key, v in config.mechanism_params().items() if key not in ("epsilon", "chunk_length")}
    for key in params:
        if key not in cls.parameters:
            raise TypeError(f"{mechanism} does not take parameter {key!r}")
    return cls(epsilon=epsilon, bounds=config.bounds_profile(), **params)


def sanitize(
    recs: Sequence[LabelledRecording],
    mechanism: str,
    epsilon: float,
    n: int,
    seed: int,
    config: SessionConfig | None = None,
) -> list[Sanitized]:
    """Each recording's rows through the chunk privatizer of :func:`grid_config` (chunker,
    mechanism and accountant, as live; the i-th recording seeded ``seed + i``). Chunks hold
    consecutive steps only and a partial chunk is dropped, as live. ``"none"`` returns the released
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
        clean = r.features[np.searchsorted(t, steps)]
        if mechanism in MECHANISMS and releases:
            noisy = np.concatenate([rel.values for rel in releases])
        elif offline is not None and len(clean):
            noisy = offline.privatize(clean, cfg.rng(seed + i)).values
        else:
            noisy = clean
        out.append(Sanitized(clean, noisy))
    return out


def make_classifier(name: str, n_train: int, seed: int = 0) -> Any:
    """A scikit-learn pipeline: standardization fitted on the training fold only, then the model."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    models: dict[str, Callable[[], Any]] = {
        "knn": lambda: KNeighborsClassifier(n_neighbors=max(1, min(11, n_train))),
        "svm": lambda: SVC(kernel="rbf", C=1.0, gamma="scale"),
        "tree": lambda: DecisionTreeClassifier(random_state=seed),
        "forest": lambda: RandomForestClassifier(n_estimators=10, random_state=seed),
    }
    return make_pipeline(StandardScaler(), models[name]())


def reid_split(lengths: Sequence[int]) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Train: the first half of each recording's samples; test: the second half."""
    train: list[int] = []
    test: list[int] = []
    start = 0
    for n in lengths:
        half = n // 2
        train.extend(range(start, start + half))
        test.extend(range(start + half, start + n))
        start += n
    return np.asarray(train, dtype=np.intp), np.asarray(test, dtype=np.intp)


def lopo_splits(groups: Sequence[str]) -> Iterator[tuple[str, NDArray[np.intp], NDArray[np.intp]]]:
    """Leave one participant out: (participant, train indices, test indices) per participant."""
    g = np.asarray(groups)
    for person in sorted(set(groups)):
        yield person, np.flatnonzero(g != person), np.flatnonzero(g == person)


def _accuracy(pred: NDArray[Any], truth: NDArray[Any], rec_of: NDArray[np.intp]) -> tuple[float, float]:
    """(per-sample accuracy, accuracy of each recording's majority vote)."""
    per_sample = float(np.mean(pred == truth))
    votes = []
    for r in np.unique(rec_of):
        m = rec_of == r
        labels, counts = np.unique(pred[m], return_counts=True)
        votes.append(labels[np.argmax(counts)] == truth[m][0])
    return per_sample, float(np.mean(votes))


def _samples(
    signals: Sequence[NDArray[np.float64]], every: int
) -> tuple[NDArray[np.float64], NDArray[np.intp], list[int]]:
    xs, rec_of, lengths = [], [], []
    for i, s in enumerate(signals):
        sub = s[::every]
        xs.append(sub)
        rec_of.append(np.full(len(sub), i))
        lengths.append(len(sub))
    return np.concatenate(xs), np.concatenate(rec_of), lengths


def reidentification(
    signals: Sequence[NDArray[np.float64]], people: Sequence[str], every: int = 5, seed: int = 0
) -> dict[str, tuple[float, float]]:
    x, rec_of, lengths = _samples(signals, every)
    y = np.asarray(people)[rec_of]
    train, test = reid_split(lengths)
    out = {}
    for name in CLASSIFIERS:
        clf = make_classifier(name, len(train), seed).fit(x[train], y[train])
        out[name] = _accuracy(clf.predict(x[test]), y[test], rec_of[test])
    return out


def task_classification(
    signals: Sequence[NDArray[np.float64]], people: Sequence[str], tasks: Sequence[str], every: int = 10, seed: int = 0
) -> dict[str, tuple[float, float]]:
    x, rec_of, _ = _samples(signals, every)
    y = np.asarray(tasks)[rec_of]
    groups = list(np.asarray(people)[rec_of])
    out = {}
    for name in CLASSIFIERS:
        preds = np.empty(len(y), dtype=y.dtype)
        for _, train, test in lopo_splits(groups):
            clf = make_classifier(name, len(train), seed).fit(x[train], y[train])
            preds[test] = clf.predict(x[test])
        out[name] = _accuracy(preds, y, rec_of)
    return out


@dataclass(frozen=True)
class GridPoint:
    mechanism: str
    epsilon: float
    chunk_length: int

    def config(self, base: SessionConfig) -> SessionConfig:
        """This point's configuration (:func:`grid_config`), checked: raises what it raises."""
        return grid_config(base, self.mechanism, self.epsilon, self.chunk_length)


def evaluate(
    recs: Sequence[LabelledRecording],
    grid: Sequence[GridPoint],
    seed: int = 0,
    progress: bool = True,
    config: SessionConfig | None = None,
) -> list[dict[str, Any]]:
    """One row per grid point × metric × classifier × voting.

    Raises
    ------
    TypeError, ValueError
        A grid point's configuration is refused (checked for every point before any work).
    """
    for point in grid:
        point.config(config or SessionConfig())
    people = [r.participant for r in recs]
    tasks = [r.task for r in recs]
    chance_reid = 1.0 / len(set(people))
    chance_task = 1.0 / len(set(tasks))
    rows: list[dict[str, Any]] = []
    for point in _progress(grid, progress):
        pairs = sanitize(recs, point.mechanism, point.epsilon, point.chunk_length, seed, config)
        signals = [p.noisy for p in pairs]
        base = {"mechanism": point.mechanism, "epsilon": point.epsilon, "chunk_length": point.chunk_length}
        if point.mechanism != "none":
            u = mean_utility(np.concatenate([p.clean for p in pairs]), np.concatenate(signals))
            rows.append(
                {**base, "metric": "utility", "classifier": "-", "voting": "-", "value": u, "chance": float("nan")}
            )
        for metric, result, chance in (
            ("reidentification", reidentification(signals, people, seed=seed), chance_reid),
            ("task", task_classification(signals, people, tasks, seed=seed), chance_task),
        ):
            for clf, (acc, voted) in result.items():
                rows.append(
                    {**base, "metric": metric, "classifier": clf, "voting": "no", "value": acc, "chance": chance}
                )
                rows.append(
                    {**base, "metric": metric, "classifier": clf, "voting": "yes", "value": voted, "chance": chance}
                )
    return rows


def _progress(items: Iterable[_T], show: bool) -> Iterable[_T]:
    """A tqdm bar over ``items`` when tqdm (an optional extra) is installed and progress is wanted."""
    if not show:
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, desc="evaluate", unit="setting", disable=None)
