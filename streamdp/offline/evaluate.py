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

Without a manifest it runs on synthetic people from the generator, so a new user sees the
trade-off in a minute.
"""

from __future__ import annotations

import csv
import json
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
from ..privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from ..privacy.utility import mean_utility
from ..stages.chunker import Chunker
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
    """Each recording's unsanitized feature rows, computed once (with ``config``'s window, event
    thresholds and camera; default :class:`SessionConfig`), to be sanitized many ways."""
    cfg = config or SessionConfig()
    out = []
    for rec, participant, task in items:
        rows = cfg.feature_pipeline(rec.camera).run(rec)
        if len(rows) < 20:
            log.warning("skipped %s: only %d feature steps", rec.name, len(rows))
            continue
        out.append(LabelledRecording(rec.name, participant, task, rows.values, rows.t))
    return out


class Sanitized(NamedTuple):
    """One recording's released steps: their unsanitized rows and what the mechanism made."""

    clean: NDArray[np.float64]
    noisy: NDArray[np.float64]


def sanitize(
    recs: Sequence[LabelledRecording],
    mechanism: str,
    epsilon: float,
    n: int,
    seed: int,
    config: SessionConfig | None = None,
) -> list[Sanitized]:
    """Each recording's rows through the chunk privatizer of the session configuration with
    ``mechanism``, ``epsilon`` and chunk length ``n`` (chunker, mechanism and accountant, as live;
    the i-th recording seeded ``seed + i``). Chunks hold consecutive steps only and a partial chunk
    is dropped, as live. Two special cases: ``"none"`` returns the chunked rows unchanged, and an
    offline mechanism (``"fpa"``) perturbs the chunked rows as one whole signal.

    Raises
    ------
    ValueError
        ``mechanism`` is none of :data:`EVALUATE_MECHANISMS`; a parameter out of range.
    TypeError
        A parameter of the wrong type.
    """
    if mechanism not in EVALUATE_MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(EVALUATE_MECHANISMS)}, got {mechanism!r}")
    base = config or SessionConfig()
    streaming = mechanism in MECHANISMS
    cfg = replace(base, mechanism=mechanism if streaming else base.mechanism, epsilon=epsilon, chunk_length=n)
    out = []
    for i, r in enumerate(recs):
        t = r.t if r.t is not None else np.arange(len(r.features), dtype=np.float64) * cfg.step
        rows = FeatureRows(t, r.features)
        if streaming:
            privatizer = cfg.chunk_privatizer(seed + i)
            releases = privatizer.update(rows) + privatizer.flush()
            steps = np.concatenate([rel.t for rel in releases]) if releases else np.empty(0)
            noisy = np.concatenate([rel.values for rel in releases]) if releases else r.features[:0]
            out.append(Sanitized(r.features[np.searchsorted(t, steps)], noisy))
            continue
        chunks = Chunker(n, cfg.step).update(rows)
        clean = np.concatenate([c.values for c in chunks]) if chunks else r.features[:0]
        if mechanism == "none" or not len(clean):
            out.append(Sanitized(clean, clean))
            continue
        offline = OFFLINE_MECHANISMS[mechanism](epsilon=epsilon, bounds=cfg.bounds_profile())
        out.append(Sanitized(clean, offline.privatize(clean, cfg.rng(seed + i)).values))
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


def evaluate(
    recs: Sequence[LabelledRecording],
    grid: Sequence[GridPoint],
    seed: int = 0,
    progress: bool = True,
    config: SessionConfig | None = None,
) -> list[dict[str, Any]]:
    """One row per grid point × metric × classifier × voting."""
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


def write_results(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """results.csv, results.md, results.json and the plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    keys = ["mechanism", "chunk_length", "epsilon", "metric", "classifier", "voting", "value", "chance"]
    with open(out_dir / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows({k: r[k] for k in keys} for r in rows)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=1))
    (out_dir / "results.md").write_text(markdown_table(rows))
    return [out_dir / "results.csv", out_dir / "results.md", *plot_results(rows, out_dir)]


def _mean(rows: list[dict[str, Any]], **match: Any) -> float:
    """The mean ``value`` of the rows whose fields equal ``match`` (NaN when none does)."""
    v = [r["value"] for r in rows if all(r[k] == want for k, want in match.items())]
    return float(np.mean(v)) if v else float("nan")


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Utility and the mean accuracy over the four classifiers (with majority voting), per setting."""
    settings = sorted({(r["mechanism"], r["chunk_length"], r["epsilon"]) for r in rows})
    lines = [
        "| mechanism | n | ε/feature | utility 1/|NMSE| | re-identification (voting) | re-id per sample "
        "| task (voting) | task per sample |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m, n, e in settings:
        mean = {
            (metric, voting): _mean(rows, mechanism=m, chunk_length=n, epsilon=e, metric=metric, voting=voting)
            for metric, voting in (("utility", "-"), ("reidentification", "yes"), ("reidentification", "no"),
                                   ("task", "yes"), ("task", "no"))
        }
        eps, utility = ("–", "–") if m == "none" else (f"{e:g}", f"{mean['utility', '-']:.3g}")
        lines.append(
            f"| {m} | {n} | {eps} | {utility} | "
            f"{mean['reidentification', 'yes']:.2f} | {mean['reidentification', 'no']:.2f} | "
            f"{mean['task', 'yes']:.2f} | {mean['task', 'no']:.2f} |"
        )
    chance = {r["metric"]: r["chance"] for r in rows if r["metric"] != "utility"}
    lines.append("")
    lines.append(
        f"Chance: re-identification {chance.get('reidentification', float('nan')):.2f}, "
        f"task {chance.get('task', float('nan')):.2f}."
    )
    return "\n".join(lines) + "\n"


def plot_results(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    settings = sorted({(r["mechanism"], r["chunk_length"]) for r in rows if r["mechanism"] != "none"})
    fig, ax = plt.subplots(figsize=(6, 4))
    for m, n in settings:
        pts = sorted(
            (r["epsilon"], r["value"])
            for r in rows
            if (r["mechanism"], r["chunk_length"], r["metric"]) == (m, n, "utility")
        )
        if pts:
            ax.plot(*zip(*pts, strict=True), marker="o", label=f"{m}-{n}")
    ax.set(
        xscale="log", yscale="log", xlabel="ε per feature per chunk", ylabel="utility 1/|NMSE|", title="Utility vs ε"
    )
    plots = [(fig, ax, "utility")]
    for metric, title in (("reidentification", "Re-identification attack"), ("task", "Task classification")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for m, n in settings:
            eps = sorted({r["epsilon"] for r in rows if (r["mechanism"], r["chunk_length"]) == (m, n)})
            acc = [_mean(rows, mechanism=m, chunk_length=n, epsilon=e, metric=metric, voting="yes") for e in eps]
            ax.plot(eps, acc, marker="o", label=f"{m}-{n}")
        clean = _mean(rows, mechanism="none", metric=metric, voting="yes")
        if np.isfinite(clean):
            ax.axhline(clean, color="k", ls=":", label="no noise")
        chance = next((r["chance"] for r in rows if r["metric"] == metric), None)
        if chance is not None:
            ax.axhline(chance, color="r", ls="--", label="chance")
        ax.set(
            xscale="log",
            ylim=(0, 1.02),
            xlabel="ε per feature per chunk",
            ylabel="accuracy (majority vote, mean of 4 classifiers)",
            title=f"{title} vs ε",
        )
        plots.append((fig, ax, metric))
    for fig, ax, metric in plots:
        ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(out_dir / f"{metric}_vs_epsilon.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths
