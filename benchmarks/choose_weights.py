"""Choose the shipped "task" allocation of ε over features on public synthetic data only.

Run: ``python benchmarks/choose_weights.py`` (writes ``streamdp/data/weights_task.json``; about 2 min
on 2 cores). Deterministic: the studies' seeds and the inner folds' noise seed are fixed.

Which features (unchanged since #9), per feature, on the synthetic study (6 people × reading and
search, no real recordings): the task separability ``F = between-task variance / within-task
variance`` of the unsanitized feature rows. Features with ``F`` below the median get weight 0
(dropped, released as a public constant); the pupil features are dropped whatever their score (they
carry identity, not the task, and their bounds do not match every signal). The others get weight 1:
an equal split of the total among the features that carry the task.

How many of them at the ε a chunk spends (#36 item 2), by the rule of ``fit-weights --epsilon``
(:mod:`streamdp.offline.epsilon_fit`) on other synthetic people (:data:`CHOICE_SEEDS`, 10 people × 2
tasks × 240 s each): the funded features are ordered by their usefulness after the noise of the
whole budget at the default ε (task separability minus participant separability, on [0, 1]-scaled
rows: a feature that tells people apart more than tasks goes last). At each ε of :data:`EPSILONS`
the inner cross-validation (leave one person out, noise of the default mechanism's variance, a
diagonal classifier) scores funding the first ``k`` with equal weights, each fold ranking on its
training people only. The ε keeps the ``k`` of the best mean inner accuracy, the smaller on a tie:
the rule of ``fit-weights --epsilon``, which funds no feature more than the task needs. Counts are
made non-decreasing in ε (the smaller wins), and from :data:`CONCENTRATE_BELOW` up every funded
feature is funded: the inner score counts task accuracy only, and above it concentrating was
measured to re-identify people (the allocation is then the one the ceiling was chosen with,
unchanged).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from streamdp import FeaturePipeline
from streamdp.config import DEFAULT_EPSILON, SessionConfig
from streamdp.offline.epsilon_fit import inner_scores, ranked
from streamdp.offline.evaluate import synthetic_study
from streamdp.offline.fitted_weights import unit_noise
from streamdp.privacy.bounds import default_profile
from streamdp.schema import FEATURE_NAMES

OUT = Path(__file__).resolve().parent.parent / "streamdp" / "data" / "weights_task.json"
#: the synthetic studies the count is chosen on (none of them the evaluation's seeds, 1000 + s)
CHOICE_SEEDS = (11, 12, 13)
#: the ε per chunk at which the count is chosen; a band runs from one to the next
EPSILONS = (2.5, 5.0, 10.0, 25.0, 50.0, 100.0)
#: the counts scored (the last: every funded feature)
COUNTS = (1, 2, 3, 4, 6, 8, 12, 16)
#: from this ε per chunk up every funded feature is funded, whatever the inner accuracy says: the
#: concentrated default (one feature) was measured with re-identification at the floor up to ε 50
#: (24.96: 0.095 ± 0.003; 50: 0.133 ± 0.013; floor 0.130 ± 0.012) and above it at ε 100
#: (0.220 ± 0.023, +0.090 ± 0.020 over the floor) and 150 (4 features: 0.290 ± 0.039, against
#: 0.107 ± 0.003 with all 26; docs/evaluation.md)
CONCENTRATE_BELOW = 50.0


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


def choice_rows() -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]]:
    """Each choice study's rows scaled to [0, 1], each row's recording, task and person, and each
    recording's person."""
    bounds = default_profile()
    out = []
    for seed in CHOICE_SEEDS:
        recs = synthetic_study(10, 240.0, seed=seed)
        blocks = [(np.clip(FeaturePipeline().run(r).values, bounds.lo, bounds.hi) - bounds.lo) / bounds.width
                  for r, _, _ in recs]  # fmt: skip
        steps = [len(b) for b in blocks]
        people = [f"{seed}:{p}" for _, p, _ in recs]
        out.append((np.concatenate(blocks), np.repeat(np.arange(len(blocks)), steps),
                    np.repeat([t for _, _, t in recs], steps), np.repeat(people, steps), people))  # fmt: skip
    return out


def funding_order(studies: list, funded: np.ndarray, a: np.ndarray) -> list[str]:
    """The funded features, most useful after the default ε's noise first (all studies pooled);
    those no more useful for the task than for telling people apart last, in schema order."""
    z = np.concatenate([s[0] for s in studies])
    y = np.concatenate([s[2] for s in studies])
    py = np.concatenate([s[3] for s in studies])
    _, order = ranked(z, list(y), list(py), a, DEFAULT_EPSILON)
    first = [int(i) for i in order if funded[i]]
    rest = [i for i in np.flatnonzero(funded) if i not in first]
    return [FEATURE_NAMES[i] for i in first + rest]


def count_table(studies: list, funded: np.ndarray, a: np.ndarray) -> tuple[list[dict[str, float]], dict]:
    """``[{"from": ε, "k": k}, ...]`` and the inner scores each count got at each ε (scored at every
    ε of :data:`EPSILONS`, used below :data:`CONCENTRATE_BELOW` only)."""
    full = int(funded.sum())
    ks = [k for k in COUNTS if k < full] + [full]
    chosen, scores = [], {}
    for eps in EPSILONS:
        got: dict[int, list[float]] = {k: [] for k in ks}
        for z, rec, y, py, people in studies:
            part, _, _ = inner_scores(z, rec, y, py, people, unit_noise=a, epsilon=eps, ks=ks, among=funded,
                                      equal=True)  # fmt: skip
            for k in ks:
                got[k] += part[k]
        mean = {k: float(np.mean(v)) for k, v in got.items()}
        best = max(ks, key=lambda k: (mean[k], -k))
        se = float(np.std(got[best], ddof=1) / np.sqrt(len(got[best])))
        chosen.append(best)
        scores[f"{eps:g}"] = {"best": best, "best_se": round(se, 4), "mean": {str(k): round(mean[k], 4) for k in ks}}
        print(f"ε {eps:g}: k {chosen[-1]}  " + "  ".join(f"{k}:{mean[k]:.3f}" for k in ks), flush=True)
    # non-decreasing in ε: a band never funds more than a band above it
    suffix = np.minimum.accumulate(np.array(chosen)[::-1])[::-1]
    pairs = enumerate(zip(EPSILONS, suffix, strict=True))
    table = [{"from": 0.0 if i == 0 else eps, "k": int(k)} for i, (eps, k) in pairs]
    table = [row for row in table if row["from"] < CONCENTRATE_BELOW]
    table.append({"from": CONCENTRATE_BELOW, "k": full})
    merged = [row for i, row in enumerate(table) if i == 0 or row["k"] != table[i - 1]["k"]]
    return merged, scores


def main() -> None:
    f = task_separability()
    keep = (f >= np.median(f)) & np.array([not n.startswith("pupil_") for n in FEATURE_NAMES])
    weights = {n: float(k) for n, k in zip(FEATURE_NAMES, keep, strict=True)}
    a, _ = unit_noise(SessionConfig(weights="equal"))
    studies = choice_rows()
    order = funding_order(studies, keep, a)
    table, scores = count_table(studies, keep, a)
    OUT.write_text(
        json.dumps(
            {
                "name": "task",
                "why": "chosen on public synthetic data only (benchmarks/choose_weights.py): features whose "
                "task separability (between/within-task variance, 6 synthetic people reading and "
                "searching) is at or above the median get weight 1, the others and the pupil features 0",
                "separability": {n: round(float(v), 4) for n, v in zip(FEATURE_NAMES, f, strict=True)},
                "weights": weights,
                "order": order,
                "k_by_epsilon": table,
                "k_why": "at the ε a chunk spends, the first k of order get weight 1 (k: the row with the largest "
                "'from' ≤ ε); k chosen by the inner cross-validation of streamdp fit-weights --epsilon on 3 × 10 "
                "other synthetic people (leave one person out, default mechanism's noise), the count of the best "
                f"mean accuracy (the smaller on a tie), non-decreasing in ε; from ε {CONCENTRATE_BELOW:g} up (where "
                "concentrating was measured to re-identify people), every feature of weights",
                "k_scores": scores,
            },
            indent=1,
        )
        + "\n"
    )
    print(f"{int(keep.sum())} features kept:", ", ".join(n for n, k in zip(FEATURE_NAMES, keep, strict=True) if k))
    print("order:", ", ".join(order))
    print("k by ε:", table)


if __name__ == "__main__":
    main()
