"""Choose the shipped "task" allocation of ε over features on public synthetic data only.

Run: ``python benchmarks/choose_weights.py`` (writes ``streamdp/data/weights_task.json``).

Rule, per feature, on the synthetic study (6 people × reading and search, no real recordings):
the task separability ``F = between-task variance / within-task variance`` of the unsanitized
feature rows. Features with ``F`` below the median get weight 0 (dropped, released as a public
constant); the pupil features are dropped whatever their score (they carry identity, not the task,
and their bounds do not match every signal). The others get weight 1: an equal split of the total
among the features that carry the task.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from streamdp import FeaturePipeline
from streamdp.offline.evaluate import synthetic_study
from streamdp.schema import FEATURE_NAMES

OUT = Path(__file__).resolve().parent.parent / "streamdp" / "data" / "weights_task.json"


def task_separability() -> np.ndarray:
    recs = [(FeaturePipeline().run(rec).values, task) for rec, _, task in synthetic_study(6, 600.0, seed=1)]
    rows = np.concatenate([r for r, _ in recs])
    labels = np.concatenate([[task] * len(r) for r, task in recs])
    within = np.zeros(rows.shape[1])
    means = []
    for task in np.unique(labels):
        part = rows[labels == task]
        within += part.var(axis=0) * len(part)
        means.append(part.mean(axis=0))
    within /= len(rows)
    between = np.var(np.array(means), axis=0)
    return np.where(within > 0, between / np.where(within > 0, within, 1.0), 0.0)


def main() -> None:
    f = task_separability()
    keep = (f >= np.median(f)) & np.array([not n.startswith("pupil_") for n in FEATURE_NAMES])
    weights = {n: float(k) for n, k in zip(FEATURE_NAMES, keep, strict=True)}
    OUT.write_text(
        json.dumps(
            {
                "name": "task",
                "why": "chosen on public synthetic data only (benchmarks/choose_weights.py): features whose "
                "task separability (between/within-task variance, 6 synthetic people reading and "
                "searching) is at or above the median get weight 1, the others and the pupil features 0",
                "separability": {n: round(float(v), 4) for n, v in zip(FEATURE_NAMES, f, strict=True)},
                "weights": weights,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"{int(keep.sum())} features kept:", ", ".join(n for n, k in zip(FEATURE_NAMES, keep, strict=True) if k))


if __name__ == "__main__":
    main()
