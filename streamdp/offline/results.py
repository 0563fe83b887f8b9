"""The files of ``streamdp evaluate``: the rows of :func:`streamdp.offline.evaluate.evaluate` as
CSV, JSON, a Markdown table and plots (matplotlib, from the ``evaluate`` extra, imported only
when plotting)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np


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
