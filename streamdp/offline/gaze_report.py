"""The files of ``streamdp evaluate --channel gaze``: results.csv (one row per grid point × seed ×
filter × metric × target × classifier × voting), results.md (the tables, mean ± sd over seeds)
and the plots against ε (matplotlib, from the ``evaluate`` extra, imported only when plotting).
The rows are those of :func:`streamdp.offline.evaluate_gaze.evaluate_gaze`.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..config import SessionConfig
from .gaze_sequence_attacker import attacker_rows, attackers_of
from .results import seed_stats, shared_config

#: the columns of results.csv, in order
GAZE_RESULT_KEYS = (
    "channel",
    "mechanism",
    "epsilon_tick",
    "w",
    "epsilon_w",
    "seed",
    "filter",
    "metric",
    "target",
    "classifier",
    "voting",
    "value",
    "chance",
)
#: the issue's targets at the default: dwell accuracy, median angular error (°), re-ID as a fraction of raw
TARGET_DWELL, TARGET_ERROR_DEG, TARGET_REID_FRACTION = 0.95, 2.0, 1.0 / 3.0

Setting = tuple[str, float, int]


def settings(rows: Sequence[dict[str, Any]]) -> list[Setting]:
    """The grid points of ``rows`` (mechanism, ε per tick, w) in the order they came, noised ones only."""
    seen = dict.fromkeys((r["mechanism"], r["epsilon_tick"], r["w"]) for r in rows if math.isfinite(r["epsilon_tick"]))
    return list(seen)


def filters_of(rows: Sequence[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(r["filter"] for r in rows))


def stat(rows: Sequence[dict[str, Any]], s: Setting | str, **match: Any) -> tuple[float, float, int]:
    """(mean, sd, seeds) of the rows of a setting (or a baseline, by name) matching ``match``."""
    at = {"mechanism": s} if isinstance(s, str) else {"mechanism": s[0], "epsilon_tick": s[1], "w": s[2]}
    return seed_stats(list(rows), **at, **match)


def reid(
    rows: Sequence[dict[str, Any]],
    s: Setting | str,
    filt: str = "none",
    voting: str = "yes",
    attacker: str = "features",
    metric: str = "reidentification",
) -> float:
    """Re-identification (or another attack's ``metric``, ``"task_accuracy"``) accuracy, mean over
    seeds, of ``attacker``: the features' mean over the four classifiers, or the network's (``"cnn"``)."""
    return stat(attacker_rows(rows, attacker), s, metric=metric, filter=filt, voting=voting)[0]


def _pm(st: tuple[float, float, int], digits: int = 2) -> str:
    mean, sd, _ = st
    return "–" if not np.isfinite(mean) else f"{mean:.{digits}f} ± {sd:.{digits}f}"


def _label(s: Setting) -> list[str]:
    m, e, w = s
    return [m, f"{e:g}", "any" if m == "geo-uniform" else str(w), f"{e * w:g}" if m != "geo-uniform" else f"{e:g}·w"]


def _table(head: list[str], body: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *("| " + " | ".join(r) + " |" for r in body)]


def best_app_filter(rows: Sequence[dict[str, Any]], s: Setting | str) -> tuple[str, float, float]:
    """The filter an app would choose: the first (``"none"`` first) meeting both utility targets,
    else the one with the highest dwell accuracy; with its dwell accuracy and median error."""
    scored = []
    for f in filters_of(rows):
        dwell = stat(rows, s, metric="dwell_accuracy", filter=f)[0]
        err = stat(rows, s, metric="error_median", target="has_gaze", filter=f)[0]
        scored.append((f, dwell, err))
    for f, dwell, err in scored:
        if dwell >= TARGET_DWELL and err <= TARGET_ERROR_DEG:
            return f, dwell, err
    return max(scored, key=lambda x: (np.nan_to_num(x[1], nan=-1.0), -np.nan_to_num(x[2], nan=np.inf)))


def attack(rows: Sequence[dict[str, Any]], s: Setting | str, metric: str = "reidentification") -> tuple[str, float]:
    """The best of all attackers: ``"<attacker>, <filter>"`` (``"features, median9"``,
    ``"cnn, none"``) and its voted accuracy of ``metric`` (re-identification, or the task's:
    ``"task_accuracy"``)."""
    scored = [
        (f"{a}, {f}", reid(rows, s, f, attacker=a, metric=metric))
        for a in attackers_of(rows, metric) or ["features"]
        for f in filters_of(rows)
    ]
    scored = [x for x in scored if np.isfinite(x[1])]
    return max(scored, key=lambda x: x[1]) if scored else ("none", math.nan)


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The tables: utility as released, utility after each filter, re-identification per filter,
    and each point against the issue's targets (a manifest's study, which has no dwell or pursuit
    task, has its own: :func:`~streamdp.offline.gaze_manifest_report.manifest_markdown`)."""
    pts = settings(rows)
    filts = filters_of(rows)
    seeds = len({r["seed"] for r in rows})
    chance = next((r["chance"] for r in rows if r["metric"] == "reidentification"), math.nan)
    raw_ticks, raw_gaze = attack(rows, "raw-ticks")[1], reid(rows, "raw-gaze")
    out = [
        "# The real-time gaze channel: utility and re-identification",
        "",
        f"Mean ± sd over {seeds} noise seed{'s' if seeds != 1 else ''}. ε per tick per degree of L1 displacement "
        "(ε_w/w); ε_w per degree over any w ticks (geo-uniform's noise depends on ε/tick only: ε_w = ε·w for any w). "
        "Angular error: released ticks vs raw ticks (ticks with gaze; all ticks), degrees. Dwell: 3 × 3 grid 15° "
        "apart, 1 s dwell, 7.5° cells. Pursuit: error from the target on a 10° circle at 10°/s (raw ticks have "
        "the eye's own lag). Re-identification: 52 features from the released ticks, first half trains, second "
        "tests, mean of k-NN, SVM, tree and forest, majority vote per recording.",
        "",
        "## As released (no filter)",
        "",
    ]
    head = [
        "mechanism",
        "ε/tick",
        "w",
        "ε_w",
        "ε spent/tick",
        "error median",
        "error p95",
        "median (all ticks)",
        "p95 (all ticks)",
        "dwell accuracy",
        "dwell time (s)",
        "pursuit median",
        "pursuit p95",
    ]
    body = []
    for s in [("raw-ticks", math.inf, 0), *pts]:
        key: Setting | str = "raw-ticks" if s[0] == "raw-ticks" else s
        label = ["raw-ticks", "–", "–", "–"] if s[0] == "raw-ticks" else _label(s)
        cells = [_pm(stat(rows, key, metric="epsilon_spent_tick", filter="none"), 3)]
        for metric, target in (
            ("error_median", "has_gaze"),
            ("error_p95", "has_gaze"),
            ("error_median", "all"),
            ("error_p95", "all"),
            ("dwell_accuracy", "grid3x3"),
            ("dwell_time_s", "grid3x3"),
            ("pursuit_median", "circle"),
            ("pursuit_p95", "circle"),
        ):
            cells.append(_pm(stat(rows, key, metric=metric, target=target, filter="none")))
        body.append(label + cells)
    out += _table(head, body)
    for f in filts[1:]:
        out += ["", f"## After the public filter {f} (an app's post-processing, free)", ""]
        head = [
            "mechanism",
            "ε/tick",
            "w",
            "ε_w",
            "error median",
            "error p95",
            "dwell accuracy",
            "dwell time (s)",
            "pursuit median",
            "pursuit p95",
        ]
        body = []
        for s in [("raw-ticks", math.inf, 0), *pts]:
            key = "raw-ticks" if s[0] == "raw-ticks" else s
            label = ["raw-ticks", "–", "–", "–"] if s[0] == "raw-ticks" else _label(s)
            cells = [
                _pm(stat(rows, key, metric=m, target=t, filter=f))
                for m, t in (
                    ("error_median", "has_gaze"),
                    ("error_p95", "has_gaze"),
                    ("dwell_accuracy", "grid3x3"),
                    ("dwell_time_s", "grid3x3"),
                    ("pursuit_median", "circle"),
                    ("pursuit_p95", "circle"),
                )
            ]
            body.append(label + cells)
        out += _table(head, body)
    for a in attackers_of(rows) or ["features"]:
        out += ["", "## Re-identification (voted; per sample in brackets)", ""] if a == "features" else [
            "", f"## Re-identification by the sequence model ({a}, on the ticks' velocity: voted; per window in "
            "brackets)", ""]  # fmt: skip
        head = ["mechanism", "ε/tick", "w", "ε_w", *[f"{a} of {f}" for f in filts], "its best / raw ticks' best"]
        body = []
        for s in [("raw-gaze", math.inf, 0), ("raw-ticks", math.inf, 0), *pts]:
            key = s[0] if s[0] in ("raw-gaze", "raw-ticks") else s
            label = [s[0], "–", "–", "–"] if isinstance(key, str) else _label(s)
            cells = []
            for f in filts:
                v = stat(attacker_rows(rows, a), key, metric="reidentification", filter=f, voting="yes")
                ps = reid(rows, key, f, "no", a)
                cells.append("–" if not np.isfinite(v[0]) else f"{_pm(v)} ({ps:.2f})")
            best = max((reid(rows, key, f, attacker=a) for f in filts), key=lambda x: np.nan_to_num(x, nan=-1.0))
            cells.append(f"{best / raw_ticks:.2f}" if np.isfinite(best) and raw_ticks > 0 else "–")
            body.append(label + cells)
        out += _table(head, body)
    out += [
        "",
        f"Chance: {chance:.2f}. Raw gaze (positions, pupil and blinks; features) {raw_gaze:.2f}, raw ticks "
        f"(positions only, 60 Hz; the best of all attackers: {attack(rows, 'raw-ticks')[0]}) {raw_ticks:.2f}.",
        "",
    ]
    if any(r["metric"] == "task_accuracy" for r in rows):
        who, task = attack(rows, "raw-ticks", "task_accuracy")
        chance = next(r["chance"] for r in rows if r["metric"] == "task_accuracy")
        out += [f"Task, chance {chance:.2f}: raw ticks (the best of all attackers: {who}) {task:.2f}.", ""]
    out += targets_table(rows, pts)
    return "\n".join(out) + "\n"


def targets_table(rows: Sequence[dict[str, Any]], pts: Sequence[Setting]) -> list[str]:
    """Each point against the issue's targets: dwell ≥ 0.95 and median error ≤ 2° with the app's
    filter, re-identification (the best of all attackers and filters) ≤ a third of the raw ticks'."""
    raw = attack(rows, "raw-ticks")[1]
    limit = raw * TARGET_REID_FRACTION
    out = [
        "## Against the targets",
        "",
        f"Dwell ≥ {TARGET_DWELL:.2f} and median error ≤ {TARGET_ERROR_DEG:g}° with the app's filter (none if it "
        f"suffices); re-identification by the best attacker and filter ≤ raw ticks / 3 = {limit:.2f}.",
        "",
    ]
    has_task = any(r["metric"] == "task_accuracy" for r in rows)
    head = ["mechanism", "ε/tick", "w", "ε_w", "app filter", "dwell", "error median", "best attacker", "re-ID",
            "re-ID / raw ticks", *(["task: best attacker", "task"] if has_task else []), "utility met",
            "re-ID met"]  # fmt: skip
    body = []
    for s in pts:
        f, dwell, err = best_app_filter(rows, s)
        af, r = attack(rows, s)
        task = attack(rows, s, "task_accuracy") if has_task else None
        ok_u = dwell >= TARGET_DWELL and err <= TARGET_ERROR_DEG
        verdicts = ["yes" if ok_u else "no", "yes" if r <= limit else "no"]
        cells = [*_label(s), f, f"{dwell:.3f}", f"{err:.2f}", af, f"{r:.2f}", f"{r / raw:.2f}"]
        body.append(cells + ([task[0], f"{task[1]:.2f}"] if task else []) + verdicts)
    return out + _table(head, body)


def read_gaze_results(path: str | Path) -> list[dict[str, Any]]:
    """The rows of a results.csv written by :func:`write_gaze_results`, typed as written (to
    redraw the tables or join runs).

    Examples
    --------
    >>> import tempfile
    >>> row = dict.fromkeys(GAZE_RESULT_KEYS, "-") | {"epsilon_tick": 0.5, "w": 60, "value": 1.5, "seed": 0}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = write_csv([row], Path(d) / "results.csv")
    ...     back = read_gaze_results(Path(d) / "results.csv")
    >>> back[0]["epsilon_tick"], back[0]["w"], back[0]["value"], back[0]["metric"]
    (0.5, 60, 1.5, '-')
    """
    floats, ints = ("epsilon_tick", "epsilon_w", "value", "chance"), ("w", "seed")
    with open(path, newline="") as fh:
        rows: list[dict[str, Any]] = list(csv.DictReader(fh))
    for r in rows:
        for k in floats:
            r[k] = float(r[k]) if r[k] not in ("", "-") else math.nan
        for k in ints:
            r[k] = int(r[k])
    return rows


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> Path:
    """``rows`` as results.csv (the columns of :data:`GAZE_RESULT_KEYS`)."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(GAZE_RESULT_KEYS))
        w.writeheader()
        w.writerows({k: r[k] for k in GAZE_RESULT_KEYS} for r in rows)
    return path


def write_gaze_results(
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    config: SessionConfig | None = None,
    study: dict[str, Any] | None = None,
    render: Callable[[Sequence[dict[str, Any]]], str] = markdown,
) -> list[Path]:
    """results.csv, results.md (the tables ``render`` makes of the rows), evaluation.json (the
    shared configuration and the study's parameters) and the plots; the paths written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_csv(rows, out_dir / "results.csv")
    (out_dir / "results.md").write_text(render(rows))
    written = [out_dir / "results.csv", out_dir / "results.md"]
    if config is not None or study is not None:
        meta = {"channel": "gaze", "study": study or {}, "config": shared_config(config) if config else None}
        (out_dir / "evaluation.json").write_text(json.dumps(meta, indent=1))
        written.append(out_dir / "evaluation.json")
    return [*written, *plot_gaze_results(rows, out_dir)]


def plot_gaze_results(rows: Sequence[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Against ε per tick, one line per mechanism and w, one panel per filter, error bars of one sd
    over the seeds: angular error, dwell accuracy, pursuit error, re-identification."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    rows = attacker_rows(rows, "features")  # the plots are the feature attacker's (the tables have the others)
    lines = list(dict.fromkeys((m, w) for m, _, w in settings(rows)))
    ticks = sorted({e for _, e, _ in settings(rows)})
    filts = filters_of(rows)
    measures = [
        ("error", "error_median", "has_gaze", "median angular error (°), ticks with gaze", "log"),
        ("dwell", "dwell_accuracy", "grid3x3", "dwell selection accuracy", "linear"),
        ("pursuit", "pursuit_median", "circle", "median pursuit error (°)", "log"),
        ("reidentification", "reidentification", None, "re-identification (voted, mean of 4)", "linear"),
        ("task", "task_accuracy", None, "task accuracy (voted, mean of 4)", "linear"),
    ]
    paths = []
    for stem, metric, target, ylabel, yscale in measures:
        if not any(r["metric"] == metric for r in rows):
            continue
        fig, axes = plt.subplots(1, len(filts), figsize=(4.2 * len(filts) + 1.6, 3.8), sharey=True, squeeze=False)
        for ax, f in zip(axes[0], filts, strict=True):
            match: dict[str, Any] = {"metric": metric, "filter": f}
            if target is not None:
                match["target"] = target
            if metric in ("reidentification", "task_accuracy"):
                match["voting"] = "yes"
            for m, w in lines:
                eps = sorted({r["epsilon_tick"] for r in rows if (r["mechanism"], r["w"]) == (m, w)})
                st = [stat(rows, (m, e, w), **match) for e in eps]
                ax.errorbar(
                    eps,
                    [x[0] for x in st],
                    yerr=[x[1] for x in st],
                    marker="o",
                    capsize=3,
                    label=m if m == "geo-uniform" else f"{m} w={w}",
                )
            raw = stat(rows, "raw-ticks", **match)[0]
            if np.isfinite(raw) and (metric != "error_median" or raw > 0):
                ax.axhline(raw, color="k", ls=":", label="raw ticks")
            if metric == "reidentification":
                chance = next(r["chance"] for r in rows if r["metric"] == metric)
                ax.axhline(chance, color="r", ls="--", label="chance")
                gaze = stat(rows, "raw-gaze", metric=metric, filter="none", voting="yes")[0]
                if np.isfinite(gaze):
                    ax.axhline(gaze, color="grey", ls="-.", label="raw gaze")
                if np.isfinite(raw):
                    ax.axhline(raw * TARGET_REID_FRACTION, color="g", ls=":", label="raw ticks / 3")
            elif metric == "task_accuracy":
                ax.axhline(next(r["chance"] for r in rows if r["metric"] == metric), color="r", ls="--", label="chance")
            elif metric == "dwell_accuracy":
                ax.axhline(TARGET_DWELL, color="g", ls=":", label=f"target {TARGET_DWELL:g}")
            elif metric == "error_median":
                ax.axhline(TARGET_ERROR_DEG, color="g", ls=":", label=f"target {TARGET_ERROR_DEG:g}°")
            ax.set(xscale="log", yscale=yscale, xlabel="ε per tick per degree (ε_w / w)", title=f"filter: {f}")
            ax.set_xticks(ticks, [f"{e:g}" for e in ticks])
            ax.xaxis.set_minor_formatter(NullFormatter())
            if yscale == "linear":
                ax.set(ylim=(0, 1.02))
        axes[0][0].set(ylabel=ylabel)
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="center right", fontsize=8)
        fig.tight_layout(rect=(0.0, 0.0, 1.0 - 1.6 / (4.2 * len(filts) + 1.6), 1.0))
        paths.append(out_dir / f"{stem}_vs_epsilon.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths


__all__ = [
    "GAZE_RESULT_KEYS",
    "markdown",
    "plot_gaze_results",
    "read_gaze_results",
    "targets_table",
    "write_csv",
    "write_gaze_results",
]
