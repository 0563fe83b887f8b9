"""Regenerate the site's figures in docs/img/ (committed PNGs; run after the figures' sources change).

``python docs/make_figures.py`` needs matplotlib (``pip install 'streamdp[evaluate]'`` or
``'streamdp[plot]'``). Two figures:

- ``tradeoff.png``: the spending ceiling's trade-off, from the measured table of the synthetic study
  (6 people × 2 tasks × 600 s, task weights, 40 paired seeds; docs/evaluation.md, "The 30 settings
  against Algorithm 1", and the site's privacy-options page): ε spent against ε asked, and voted
  re-identification against utility at ε 2496 asked, n = 64;
- ``schedule.png``: the public schedule of one chunk at the defaults, from streamdp's own constants
  (step 0.5 s, 30 s windows, n = 64, chunk reorder window 2 s, deadline slack 0.05 s).
"""

from __future__ import annotations

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from streamdp.schedule_defaults import DEFAULT_CHUNK_REORDER_WINDOW, DEFAULT_DEADLINE_SLACK

OUT = Path(__file__).resolve().parent / "img"

#: (label, utility 1/NMSE at ε 2496 asked, voted re-identification at 2496 asked, n = 64), measured
TRADEOFF = [
    ("DCFPA, no ceiling", 77.1, 0.78),
    ("DCFPA, 500", 3.95, 0.38),
    ("DCFPA, 300", 1.43, 0.24),
    ("DCFPA, 200 (default)", 0.639, 0.19),
    ("DCFPA, 150", 0.36, 0.18),
    ("DCFPA, 124.8", 0.249, 0.17),
    ("CFPA, 200", 3.4, 0.28),
    ("CFPA, 100", 0.862, 0.20),
    ("Algorithm 1 (dcfpa-bozkir)", 0.425, 0.22),
]
ASKED = [24.96, 124.8, 249.6, 1248.0, 2496.0]
CHANCE = 1 / 6


def tradeoff(path: Path) -> None:
    """Draw ε spent against ε asked for three ceilings, and re-identification against utility."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for ceiling, style in ((None, "-"), (500.0, "--"), (200.0, "-o")):
        spent = [a if ceiling is None else min(a, ceiling) for a in ASKED]
        left.plot(ASKED, spent, style, label="no ceiling" if ceiling is None else f"ceiling {ceiling:g}")
    left.set(xscale="log", yscale="log", xlabel="ε asked per chunk", ylabel="ε spent per chunk")
    left.set_title("The ceiling caps what a chunk spends")
    left.legend()
    for label, utility, reid in TRADEOFF:
        right.scatter(utility, reid, color="tab:red" if "default" in label else "tab:blue")
        right.annotate(label, (utility, reid), fontsize=7, xytext=(4, 2), textcoords="offset points")
    right.axhline(CHANCE, color="grey", linestyle=":", label="chance (6 people)")
    right.set(xscale="log", xlabel="utility 1/NMSE (higher: more useful)", ylabel="re-identification (voted)")
    right.set_title("At ε 2496 asked, n = 64 (synthetic study)")
    right.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def schedule(path: Path, *, step: float = 0.5, n: int = 64, window: float = 30.0) -> None:
    """Draw one chunk's slot on the public grid: its steps, the windows they cover, its deadline."""
    first = 1056.0  # a multiple of n × step: chunk slots lie on multiples of n steps
    last = first + (n - 1) * step
    deadline = last + DEFAULT_CHUNK_REORDER_WINDOW + DEFAULT_DEADLINE_SLACK
    fig, ax = plt.subplots(figsize=(10, 2.8))
    ax.barh(2, last + step - first, left=first, height=0.5, color="tab:blue", alpha=0.6)
    ax.text(first, 2.35, f"chunk: {n} steps × {step:g} s on multiples of {n * step:g} s", fontsize=8)
    ax.barh(1, window, left=first - window, height=0.5, color="tab:green", alpha=0.4)
    ax.text(first - window, 1.35, f"the first step's {window:g} s window of gaze", fontsize=8)
    ax.barh(1, window, left=last - window, height=0.5, color="tab:green", alpha=0.25)
    ax.text(last - window, 0.6, "the last step's window", fontsize=8)
    ax.axvline(last, color="black", linestyle=":")
    ax.axvline(deadline, color="tab:red")
    ax.text(
        deadline + 0.3,
        2.1,
        f"released at its deadline:\nlast step + {DEFAULT_CHUNK_REORDER_WINDOW:g} s "
        f"+ {DEFAULT_DEADLINE_SLACK:g} s,\nwhether or not gaze came",
        fontsize=8,
        color="tab:red",
    )
    ax.set(yticks=[], xlabel="source clock (s)", ylim=(0.4, 2.8), xlim=(first - window - 2, deadline + 18))
    ax.set_title("The public schedule: when a chunk is computed and released (defaults)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    """Write both figures into docs/img/."""
    OUT.mkdir(exist_ok=True)
    tradeoff(OUT / "tradeoff.png")
    schedule(OUT / "schedule.png")
    print(f"wrote {OUT / 'tradeoff.png'} and {OUT / 'schedule.png'}")


if __name__ == "__main__":
    main()
