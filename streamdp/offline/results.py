"""The output folders of the offline commands, and the files of ``streamdp evaluate``.

An output folder appears whole or not at all (:func:`staged_folder`): it is written as a hidden
sibling and renamed into place at the end, and an existing one is refused unless overwriting was
asked for. The rows of :func:`streamdp.offline.evaluate.evaluate` are written as CSV, JSON, a
Markdown table and plots (matplotlib, from the ``evaluate`` extra, imported only when plotting).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InputError


def check_writable_place(path: Path, what: str) -> None:
    """That ``path`` can be created: its nearest existing ancestor is a folder in which files can
    be made (tried with a temporary file, removed at once). Nothing is created.

    Raises
    ------
    InputError
        ``path`` would lie under a file, or the folder refuses new files (read-only, ``/proc``,
        no permission), named with ``what`` (e.g. ``"--out out.csv"``).

    Examples
    --------
    >>> check_writable_place(Path("/proc/streamdp/out.csv"), "--out /proc/streamdp/out.csv")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: --out /proc/streamdp/out.csv: cannot create files in /proc
    """
    folder = Path(os.path.abspath(path)).parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise InputError(f"{what}: lies under {folder}, which is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".streamdp-probe-"):
            pass
    except OSError:
        raise InputError(f"{what}: cannot create files in {folder}") from None


def check_output_folder(out: Path, *, overwrite: bool, option: str = "--out") -> None:
    """That ``out`` may become an output folder: not a file, absent unless ``overwrite``, and its
    place writable.

    Raises
    ------
    InputError
        ``out`` is a file, exists without ``overwrite``, or cannot be created (named).
    """
    what = f"{option} {out}"
    if out.exists() and not out.is_dir():
        raise InputError(f"{what}: is a file, not a folder")
    if out.exists() and not overwrite:
        raise InputError(f"{out}: exists; pass --overwrite to replace it")
    check_writable_place(out, what)


@dataclass
class Staging:
    """The hidden folder an output is written into; ``publish = False`` discards it at the end."""

    path: Path
    publish: bool = True


@contextmanager
def staged_folder(out: Path, *, overwrite: bool = False, option: str = "--out") -> Iterator[Staging]:
    """A hidden sibling of ``out`` to write into, renamed to ``out`` (replacing it) when the block
    ends normally and ``publish`` is still set; removed in every other case (an error,
    KeyboardInterrupt, SIGTERM turned into an exception).

    Raises
    ------
    InputError
        From :func:`check_output_folder`, before anything is created.
    """
    check_output_folder(out, overwrite=overwrite, option=option)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    except OSError as exc:
        raise InputError(f"{option} {out}: cannot be created ({exc.strerror})") from None
    umask = os.umask(0)
    os.umask(umask)
    staging.chmod(0o777 & ~umask)  # mkdtemp makes it private; the result is an ordinary folder
    stage = Staging(staging)
    try:
        yield stage
        if stage.publish:
            if out.exists():
                shutil.rmtree(out)
            staging.rename(out)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def write_results(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """results.csv, results.md, results.json, results.parquet (with the parquet extra) and the plots."""
    out_dir.mkdir(parents=True, exist_ok=True)
    keys = ["mechanism", "chunk_length", "epsilon", "metric", "classifier", "voting", "value", "chance"]
    with open(out_dir / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows({k: r[k] for k in keys} for r in rows)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=1))
    (out_dir / "results.md").write_text(markdown_table(rows))
    written = [out_dir / "results.csv", out_dir / "results.md"]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass  # Parquet is written where the parquet extra is installed
    else:
        pq.write_table(pa.table({k: [r[k] for r in rows] for k in keys}), out_dir / "results.parquet")
        written.append(out_dir / "results.parquet")
    return [*written, *plot_results(rows, out_dir)]


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
