"""The trade-off's curve (:mod:`streamdp.offline.frontier`) written into an evaluation's folder:
frontier.csv, frontier.md and frontier.png (task accuracy against re-identification, one panel per
chunk length). matplotlib (the ``evaluate`` extra) is imported when a plot is drawn.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .frontier import ALG1, FLOOR, FRONTIER_KEYS, NO_NOISE, REFERENCES, Frontier, FrontierPoint

__all__ = ["plot_frontier", "write_frontier"]


def write_frontier(result: Frontier, out_dir: Path) -> list[Path]:
    """frontier.csv (every point, :data:`~streamdp.offline.frontier.FRONTIER_KEYS`), frontier.md
    (:meth:`Frontier.table <streamdp.offline.frontier.Frontier.table>`) and frontier.png
    (:func:`plot_frontier`) in ``out_dir``; nothing without points.

    Raises
    ------
    OSError
        A file cannot be written.

    Examples
    --------
    >>> write_frontier(Frontier((), None, None, "no frontier: no task column was classified"), Path("."))
    []
    """
    if not result.points:
        return []
    out_dir = Path(out_dir)
    with open(out_dir / "frontier.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=FRONTIER_KEYS)
        writer.writeheader()
        writer.writerows(result.rows())
    (out_dir / "frontier.md").write_text(result.table(), encoding="utf-8")
    return [out_dir / "frontier.csv", out_dir / "frontier.md", plot_frontier(result, out_dir / "frontier.png")]


def plot_frontier(result: Frontier, path: Path) -> Path:
    """Task accuracy against re-identification, one panel per chunk length: every point with
    error bars of one SE, each curve's frontier joined (dominated points faint), ε written beside
    each point; no noise a black star, the floor a grey cross, Algorithm 1 dashed; chance
    dotted. Returns ``path``.

    Raises
    ------
    ImportError
        matplotlib (the ``evaluate`` extra) is not installed.
    IndexError
        ``result`` has no points (:func:`write_frontier` draws none then).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lengths = sorted({p.chunk_length for p in result.points if p.mechanism != NO_NOISE}) or [
        result.points[0].chunk_length]  # fmt: skip
    fig, axes = plt.subplots(1, len(lengths), figsize=(5.5 * len(lengths), 4.6), squeeze=False)
    chance = list((result.chance or {}).values())
    for ax, n in zip(axes[0], lengths, strict=True):
        mine = [p for p in result.points if p.chunk_length == n or p.mechanism == NO_NOISE]
        for curve in dict.fromkeys(p.curve for p in mine):
            pts = [p for p in mine if p.curve == curve]
            _draw_curve(ax, pts)
        if len(chance) == 2 and np.isfinite(chance[0]):
            ax.axhline(chance[0], color="0.6", ls=":", lw=1)
        if len(chance) == 2 and np.isfinite(chance[1]):
            ax.axvline(chance[1], color="0.6", ls=":", lw=1)
        ax.set(
            xlim=(0, 1.05),
            ylim=(0, 1.02),
            xlabel=f"re-identification ({result.split} split, voted)",
            ylabel=f"task accuracy ({result.task_column}, voted)",
            title=f"n = {n}: frontier across ε, ± 1 SE",
        )
        ax.legend(fontsize=6, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)


def _draw_curve(ax: Any, pts: Sequence[FrontierPoint]) -> None:
    first = pts[0]
    style: dict[str, Any] = {"marker": "o", "ls": "-"}
    label = f"{first.mechanism} ({first.allocation})" + (" post-processed" if first.postprocess == "yes" else "")
    if first.mechanism == NO_NOISE:
        style, label = {"marker": "*", "ms": 12, "color": "k", "ls": ""}, REFERENCES[NO_NOISE]
    elif first.mechanism == FLOOR:
        style, label = {"marker": "X", "ms": 9, "color": "0.45", "ls": ""}, "floor (no signal)"
    elif first.mechanism == ALG1:
        style, label = {"marker": "s", "color": "tab:brown", "ls": "--"}, "Algorithm 1"
    front = sorted((p for p in pts if p.frontier), key=lambda p: p.reid)
    line = ax.errorbar([p.reid for p in front], [p.task for p in front], xerr=[_finite(p.reid_se) for p in front],
                       yerr=[_finite(p.task_se) for p in front], capsize=2, label=label, **style)  # fmt: skip
    color = line[0].get_color()
    off = [p for p in pts if not p.frontier]
    if off:
        ax.errorbar([p.reid for p in off], [p.task for p in off], xerr=[_finite(p.reid_se) for p in off],
                    yerr=[_finite(p.task_se) for p in off], color=color, marker=style["marker"], ls="", alpha=0.3,
                    capsize=2)  # fmt: skip
    if first.mechanism not in (NO_NOISE, FLOOR):  # which ε each point is: the curve's parameter
        for p in pts:
            ax.annotate(f"{p.epsilon:g}", (p.reid, p.task), fontsize=6, xytext=(3, 3), textcoords="offset points",
                        alpha=1.0 if p.frontier else 0.4)  # fmt: skip


def _finite(se: float) -> float:
    return se if np.isfinite(se) else 0.0
