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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import Recording
from ..pipeline import FeaturePipeline
from ..privacy import WholeSignalFPA, default_profile, make_mechanism, secure_generator
from ..privacy.utility import mean_utility

log = logging.getLogger(__name__)

CLASSIFIERS = ("knn", "svm", "tree", "forest")


@dataclass(frozen=True)
class LabelledRecording:
    name: str
    participant: str
    task: str
    features: NDArray[np.float64]  # (steps, 52), unsanitized


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


def feature_signals(items: Sequence[tuple[Recording, str, str]]) -> list[LabelledRecording]:
    out = []
    for rec, participant, task in items:
        rows = FeaturePipeline().run(rec)
        if len(rows) < 20:
            log.warning("skipped %s: only %d feature steps", rec.name, len(rows))
            continue
        out.append(LabelledRecording(rec.name, participant, task, rows.values))
    return out


def sanitize(
    recs: Sequence[LabelledRecording], mechanism: str, epsilon: float, n: int, seed: int
) -> list[NDArray[np.float64]]:
    """Each recording's signal through the mechanism ('none' returns it unchanged; 'fpa' runs on
    the whole signal, others chunk by chunk; a trailing partial chunk is dropped, as live)."""
    bounds = default_profile()
    out = []
    for i, r in enumerate(recs):
        rng = secure_generator(seed + i)
        x = r.features
        if mechanism == "none":
            out.append(x[: (len(x) // n) * n])
        elif mechanism == "fpa":
            f = WholeSignalFPA(epsilon=epsilon, bounds=bounds)
            out.append(f.privatize(x[: (len(x) // n) * n], rng).values)
        else:
            m = make_mechanism(mechanism, epsilon=epsilon, bounds=bounds, chunk_length=n)
            full = (len(x) // n) * n
            out.append(
                np.concatenate([m.privatize(x[i0 : i0 + n], rng).values for i0 in range(0, full, n)]) if full else x[:0]
            )
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
) -> list[dict[str, Any]]:
    """One row per grid point × metric × classifier × voting."""
    from tqdm import tqdm

    people = [r.participant for r in recs]
    tasks = [r.task for r in recs]
    chance_reid = 1.0 / len(set(people))
    chance_task = 1.0 / len(set(tasks))
    rows: list[dict[str, Any]] = []
    for point in tqdm(grid, desc="evaluate", unit="setting", disable=not progress or None):
        signals = sanitize(recs, point.mechanism, point.epsilon, point.chunk_length, seed)
        clean = [r.features[: len(s)] for r, s in zip(recs, signals, strict=True)]
        base = {"mechanism": point.mechanism, "epsilon": point.epsilon, "chunk_length": point.chunk_length}
        if point.mechanism != "none":
            u = mean_utility(np.concatenate(clean), np.concatenate(signals))
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


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Utility and the mean accuracy over the four classifiers (with majority voting), per setting."""
    settings = sorted({(r["mechanism"], r["chunk_length"], r["epsilon"]) for r in rows})
    lines = [
        "| mechanism | n | ε/feature | utility 1/|NMSE| | re-identification (voting) | re-id per sample "
        "| task (voting) | task per sample |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def mean(metric: str, voting: str, s: tuple[Any, ...]) -> float:
        v = [
            r["value"]
            for r in rows
            if (r["mechanism"], r["chunk_length"], r["epsilon"]) == s
            and r["metric"] == metric
            and r["voting"] == voting
        ]
        return float(np.mean(v)) if v else float("nan")

    for s in settings:
        u = mean("utility", "-", s)
        lines.append(
            f"| {s[0]} | {s[1]} | {'–' if s[0] == 'none' else f'{s[2]:g}'} | {'–' if s[0] == 'none' else f'{u:.3g}'} | "
            f"{mean('reidentification', 'yes', s):.2f} | {mean('reidentification', 'no', s):.2f} | "
            f"{mean('task', 'yes', s):.2f} | {mean('task', 'no', s):.2f} |"
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
    mechs = sorted({r["mechanism"] for r in rows if r["mechanism"] != "none"})
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in mechs:
        for n in sorted({r["chunk_length"] for r in rows if r["mechanism"] == m}):
            pts = sorted(
                (r["epsilon"], r["value"])
                for r in rows
                if r["mechanism"] == m and r["chunk_length"] == n and r["metric"] == "utility"
            )
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{m}-{n}")
    ax.set(
        xscale="log", yscale="log", xlabel="ε per feature per chunk", ylabel="utility 1/|NMSE|", title="Utility vs ε"
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(out_dir / "utility_vs_epsilon.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    for metric, title in (("reidentification", "Re-identification attack"), ("task", "Task classification")):
        fig, ax = plt.subplots(figsize=(6, 4))
        for m in mechs:
            for n in sorted({r["chunk_length"] for r in rows if r["mechanism"] == m}):
                eps = sorted({r["epsilon"] for r in rows if r["mechanism"] == m and r["chunk_length"] == n})
                acc = [
                    np.mean(
                        [
                            r["value"]
                            for r in rows
                            if r["mechanism"] == m
                            and r["chunk_length"] == n
                            and r["epsilon"] == e
                            and r["metric"] == metric
                            and r["voting"] == "yes"
                        ]
                    )
                    for e in eps
                ]
                ax.plot(eps, acc, marker="o", label=f"{m}-{n}")
        clean = [
            r["value"] for r in rows if r["mechanism"] == "none" and r["metric"] == metric and r["voting"] == "yes"
        ]
        if clean:
            ax.axhline(float(np.mean(clean)), color="k", ls=":", label="no noise")
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
        ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(out_dir / f"{metric}_vs_epsilon.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths
