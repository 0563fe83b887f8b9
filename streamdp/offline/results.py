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

from ..config import SessionConfig
from ..errors import InputError

#: configuration fields never written into an output folder: the seed removes the noise, the
#: identity names the person, the ledger folder is local
LOCAL_CONFIG_FIELDS = ("seed", "identity", "ledger_dir")


def shared_config(config: SessionConfig) -> dict[str, Any]:
    """The configuration as written beside the data: :meth:`SessionConfig.describe` with the
    local fields (:data:`LOCAL_CONFIG_FIELDS`) unset.

    Examples
    --------
    >>> shared = shared_config(SessionConfig(seed=7, unit="session", budget=100.0, identity="alice"))
    >>> shared["seed"], shared["identity"], shared["budget"]
    (None, None, 100.0)
    """
    described = config.describe()
    return {k: (None if k in LOCAL_CONFIG_FIELDS else v) for k, v in described.items()}


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


#: the columns of results.csv and results.parquet, in order
RESULT_KEYS = (
    "mechanism", "chunk_length", "epsilon", "epsilon_chunk", "postprocess", "seed", "metric", "target", "classifier",
    "voting", "value", "chance",
)
#: the columns added when the weights were fitted on each training fold (``evaluate(fit_weights=True)``)
FITTED_KEYS = ("weights", "fold_weights")
#: how the tables say a row's weights were fitted
FITTED_SAID = "fitted on the training fold"


def write_results(
    rows: list[dict[str, Any]], out_dir: Path, config: SessionConfig | None = None
) -> list[Path]:
    """results.csv, results.md, results.json, results.parquet (with the parquet extra), the plots
    and, given the base ``config``, evaluation.json with it as :func:`shared_config` writes it
    (never the seed, the identity or the ledger folder)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    keys = list(RESULT_KEYS) + (list(FITTED_KEYS) if any("weights" in r for r in rows) else [])
    with open(out_dir / "results.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows({k: r.get(k, "no") if k == "postprocess" else r[k] for k in keys} for r in rows)
    (out_dir / "results.json").write_text(json.dumps(rows, indent=1))
    (out_dir / "results.md").write_text(markdown_table(rows))
    written = [out_dir / "results.csv", out_dir / "results.md"]
    if config is not None:
        (out_dir / "evaluation.json").write_text(json.dumps({"config": shared_config(config)}, indent=1))
        written.append(out_dir / "evaluation.json")
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass  # Parquet is written where the parquet extra is installed
    else:
        columns = {k: [r.get(k, "no") if k == "postprocess" else r[k] for r in rows] for k in keys}
        pq.write_table(pa.table(columns), out_dir / "results.parquet")
        written.append(out_dir / "results.parquet")
    return [*written, *plot_results(rows, out_dir)]


def seed_stats(rows: list[dict[str, Any]], **match: Any) -> tuple[float, float, int]:
    """(mean, sd, seeds) over noise seeds of the per-seed mean ``value`` of the rows whose fields
    equal ``match`` (e.g. the mean over the four classifiers); sd with ``ddof=1``, 0 for one seed,
    NaN when no row matches.

    Examples
    --------
    >>> rows = [{"seed": s, "metric": "task", "value": v} for s, v in ((0, 0.5), (0, 0.7), (1, 0.8))]
    >>> tuple(round(x, 3) for x in seed_stats(rows, metric="task"))
    (0.7, 0.141, 2)
    """
    per_seed: dict[Any, list[float]] = {}
    for r in rows:
        if all(r[k] == want for k, want in match.items()):
            per_seed.setdefault(r["seed"], []).append(r["value"])
    if not per_seed:
        return float("nan"), float("nan"), 0
    means = np.array([np.mean(v) for v in per_seed.values()])
    sd = float(np.std(means, ddof=1)) if len(means) > 1 else 0.0
    return float(means.mean()), sd, len(means)


def _pm(stats: tuple[float, float, int], digits: int = 2) -> str:
    mean, sd, _ = stats
    if not np.isfinite(mean):
        return "–"
    if digits < 0:  # utility: three significant digits
        return f"{mean:.3g} ± {sd:.2g}"
    return f"{mean:.{digits}f} ± {sd:.{digits}f}"


def _targets(rows: list[dict[str, Any]], metric: str) -> list[str]:
    return list(dict.fromkeys(r["target"] for r in rows if r["metric"] == metric))


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """Per setting: utility (mean over task labels) and the accuracy averaged over the four
    classifiers, with majority voting and per sample, each as mean ± sd over noise seeds; then
    utility per task label. Rows measured on post-processed releases (``postprocess == "yes"``)
    get their own lines, marked in a ``post-processed`` column shown only when there are some;
    rows whose weights were fitted on each training fold say so in a ``weights`` column."""
    rows = [r if "postprocess" in r else {**r, "postprocess": "no"} for r in rows]
    post = any(r["postprocess"] == "yes" for r in rows)
    weights = {(r["mechanism"], r["chunk_length"], r["epsilon"]): r["weights"] for r in rows if "weights" in r}
    settings = sorted({(r["mechanism"], r["chunk_length"], r["epsilon"], r["postprocess"]) for r in rows})
    chunk_eps = {(r["mechanism"], r["chunk_length"], r["epsilon"]): r.get("epsilon_chunk") for r in rows}
    columns = [("reidentification", t) for t in _targets(rows, "reidentification")]
    columns += [("task", t) for t in _targets(rows, "task")]
    seeds = len({r["seed"] for r in rows})
    head = ["mechanism", "n", "ε", "ε per chunk", *(["weights"] if weights else []),
            *(["post-processed"] if post else []), "utility 1/|NMSE|"]  # fmt: skip
    for metric, target in columns:
        name = f"re-id {target}" if metric == "reidentification" else target
        head += [f"{name} (voting)", f"{name} per sample"]
    lines = [
        f"Mean ± sd over {seeds} noise seed{'s' if seeds != 1 else ''}; accuracies averaged over the four classifiers.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for m, n, e, pp in settings:
        at = {"mechanism": m, "chunk_length": n, "epsilon": e, "postprocess": pp}
        ec = chunk_eps[m, n, e]
        cells = [m, str(n), "–" if m == "none" else f"{e:g}", f"{ec:g}" if ec is not None and np.isfinite(ec) else "–"]
        if weights:
            cells.append({"fitted": FITTED_SAID, "-": "–"}.get(weights[m, n, e], weights[m, n, e]))
        cells += [pp] if post else []
        cells.append("–" if m == "none" else _pm(seed_stats(rows, **at, metric="utility"), -1))
        for metric, target in columns:
            for voting in ("yes", "no"):
                cells.append(_pm(seed_stats(rows, **at, metric=metric, target=target, voting=voting)))
        lines.append("| " + " | ".join(cells) + " |")
    chance = {(r["metric"], r["target"]): r["chance"] for r in rows if r["metric"] != "utility"}
    reid_chance = next((c for (m, _), c in chance.items() if m == "reidentification"), float("nan"))
    said = [f"re-identification {reid_chance:.2f}"]
    said += [f"{t} {c:.2f}" for (m, t), c in chance.items() if m == "task"]
    lines += ["", "Chance: " + ", ".join(said) + "."]
    if "fitted" in weights.values():
        lines += ["", f"Weights {FITTED_SAID}: each fold's releases split ε as fitted on that fold's training "
                  "recordings (the chunked split: training steps) alone, never a test one, protecting the "
                  "participants, for the ε of the point (how many features to fund chosen by an inner "
                  "cross-validation on the fold, grouped by person); results.csv names each fold's weights "
                  "(fold_weights)."]  # fmt: skip
    labels = _targets(rows, "utility")
    if labels:
        extra = " post-processed |" if post else ""
        lines += ["", "Utility per task label:", "", f"| mechanism | n | ε |{extra} " + " | ".join(labels) + " |",
                  "|" + "---|" * (3 + post + len(labels))]
        for m, n, e, pp in settings:
            if m != "none":
                at = {"mechanism": m, "chunk_length": n, "epsilon": e, "postprocess": pp, "metric": "utility"}
                cells = [_pm(seed_stats(rows, **at, target=label), -1) for label in labels]
                lines.append(f"| {m} | {n} | {e:g} |{f' {pp} |' if post else ''} " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_results(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """One plot per measure against ε, one line per mechanism and chunk length, error bars of one
    sd over the noise seeds; no noise dotted and chance dashed. Of the releases as made: rows
    measured after post-processing are in the tables, not in the plots."""
    rows = [r for r in rows if r.get("postprocess", "no") == "no"]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = sorted({(r["mechanism"], r["chunk_length"]) for r in rows if r["mechanism"] != "none"})
    measures: list[tuple[str, str | None, str, str, str]] = [
        ("utility", None, "utility", "utility 1/|NMSE| (mean over task labels)", "Utility")
    ]
    for split in _targets(rows, "reidentification"):
        stem = "reidentification" if split == "chunked" else f"reidentification_{split}"
        measures.append(("reidentification", split, stem, "accuracy", f"Re-identification ({split} split)"))
    for column in _targets(rows, "task"):
        stem = "task" if column == "task" else f"task_{column}"
        measures.append(("task", column, stem, "accuracy", f"Classification of {column}"))
    paths = []
    for metric, target, stem, ylabel, title in measures:
        match = {"metric": metric} if target is None else {"metric": metric, "target": target}
        fig, ax = plt.subplots(figsize=(6, 4))
        for m, n in settings:
            eps = sorted({r["epsilon"] for r in rows if (r["mechanism"], r["chunk_length"]) == (m, n)})
            voted = {} if metric == "utility" else {"voting": "yes"}
            stats = [seed_stats(rows, mechanism=m, chunk_length=n, epsilon=e, **match, **voted) for e in eps]
            ax.errorbar(eps, [s[0] for s in stats], yerr=[s[1] for s in stats], marker="o", capsize=3,
                        label=f"{m}-{n}")
        if metric != "utility":
            clean = seed_stats(rows, mechanism="none", voting="yes", **match)[0]
            if np.isfinite(clean):
                ax.axhline(clean, color="k", ls=":", label="no noise")
            chance = next((r["chance"] for r in rows if all(r[k] == v for k, v in match.items())), None)
            if chance is not None:
                ax.axhline(chance, color="r", ls="--", label="chance")
            ax.set(ylim=(0, 1.02), ylabel=f"{ylabel} (majority vote, mean of 4 classifiers)")
        else:
            ax.set(yscale="log", ylabel=ylabel)
        ax.set(xscale="log", xlabel="ε (as configured)", title=f"{title} vs ε, mean ± sd over seeds")
        ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(out_dir / f"{stem}_vs_epsilon.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    return paths
