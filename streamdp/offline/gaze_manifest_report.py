"""results.md of ``streamdp evaluate --channel gaze --manifest``: the tables of the synthetic
study (:mod:`streamdp.offline.gaze_report`) without its dwell and pursuit tasks, with the task
column's classification beside re-identification, and each attack's best attacker (filter ×
classifier) besides the mean of the classifiers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .gaze_report import TARGET_ERROR_DEG, TARGET_REID_FRACTION, Setting, _label, _pm, _table, filters_of, settings
from .gaze_report import stat as _stat
from .gaze_sequence_attacker import attacker_rows, attackers_of

#: the attacks of a manifest's study: (metric, what the table calls it)
ATTACKS = (("reidentification", "Re-identification (participant)"), ("task_accuracy", "Task (task column)"))


def best_attacker(rows: Sequence[dict[str, Any]], s: Setting | str, metric: str) -> tuple[str, str, float]:
    """The strongest attacker of ``metric`` at ``s``: (filter, classifier, voted accuracy, mean
    over seeds), the best over every filter and classifier measured (the network ``"cnn"``
    among them); NaN when none was."""
    at = {"mechanism": s} if isinstance(s, str) else {"mechanism": s[0], "epsilon_tick": s[1], "w": s[2]}
    pairs = dict.fromkeys(
        (r["filter"], r["classifier"]) for r in rows if r["metric"] == metric and all(r[k] == v for k, v in at.items())
    )
    scored = [(f, c, _stat(rows, s, metric=metric, filter=f, classifier=c, voting="yes")[0]) for f, c in pairs]
    scored = [x for x in scored if np.isfinite(x[2])]
    return max(scored, key=lambda x: x[2]) if scored else ("none", "-", math.nan)


def _key(s: Setting) -> Setting | str:
    return s[0] if s[0] in ("raw-gaze", "raw-ticks") else s


def _name(s: Setting) -> list[str]:
    return [s[0], "–", "–", "–"] if isinstance(_key(s), str) else _label(s)


def manifest_markdown(rows: Sequence[dict[str, Any]], title: str = "the manifest's recordings") -> str:
    """The tables: angular error as released and after each filter, each attack per filter (mean
    of the classifiers, voted, per sample in brackets) with its best attacker, and a summary."""
    pts = settings(rows)
    filts = filters_of(rows)
    seeds = len({r["seed"] for r in rows})
    noised = [("raw-ticks", math.inf, 0), *pts]
    out = [
        f"# The real-time gaze channel on {title}: utility, re-identification and task",
        "",
        f"Mean ± sd over {seeds} noise seed{'s' if seeds != 1 else ''}. ε per tick per degree of L1 displacement "
        "(ε_w/w); ε_w per degree over any w ticks (geo-uniform: ε·w for any w). Angular error: released ticks vs "
        "raw ticks of every recording (ticks with gaze; all ticks), degrees. Attacks: 52 features from the "
        "released ticks; re-identification of the participant (first half of each recording trains, second "
        "tests) and classification of the task (leaving one participant out); mean of k-NN, SVM, tree and "
        "forest, majority vote per recording, per sample in brackets (cnn: a convolutional network over the "
        "ticks' velocity, the first halves training for both attacks, per window in brackets); best attacker: the "
        "strongest filter × classifier.",
        "",
        "## As released (no filter)",
        "",
    ]
    head = ["mechanism", "ε/tick", "w", "ε_w", "ε spent/tick", "error median", "error p95", "median (all ticks)",
            "p95 (all ticks)"]  # fmt: skip
    body = []
    for s in noised:
        cells = [_pm(_stat(rows, _key(s), metric="epsilon_spent_tick", filter="none"), 3)]
        for metric, target in (("error_median", "has_gaze"), ("error_p95", "has_gaze"), ("error_median", "all"),
                               ("error_p95", "all")):  # fmt: skip
            cells.append(_pm(_stat(rows, _key(s), metric=metric, target=target, filter="none")))
        body.append(_name(s) + cells)
    out += _table(head, body)
    if len(filts) > 1:
        out += ["", "## After the public filters (an app's post-processing, free): median error (p95)", ""]
        body = []
        for s in noised:
            cells = []
            for f in filts[1:]:
                med = _stat(rows, _key(s), metric="error_median", target="has_gaze", filter=f)
                p95 = _stat(rows, _key(s), metric="error_p95", target="has_gaze", filter=f)[0]
                cells.append(f"{_pm(med)} ({p95:.2f})")
            body.append(_name(s) + cells)
        out += _table(["mechanism", "ε/tick", "w", "ε_w", *filts[1:]], body)
    for metric, name in ATTACKS:
        if not any(r["metric"] == metric for r in rows):
            continue
        out += ["", f"## {name} (voted; per sample in brackets)", ""]
        attackers = attackers_of(rows, metric) or ["features"]
        columns = [(a, f) for a in attackers for f in filts]
        head = ["mechanism", "ε/tick", "w", "ε_w", *[f"{a} of {f}" for a, f in columns], "best attacker"]
        body = []
        for s in [("raw-gaze", math.inf, 0), *noised]:
            cells = []
            for a, f in columns:
                v = _stat(attacker_rows(rows, a), _key(s), metric=metric, filter=f, voting="yes")
                ps = _stat(attacker_rows(rows, a), _key(s), metric=metric, filter=f, voting="no")[0]
                cells.append("–" if not np.isfinite(v[0]) else f"{_pm(v)} ({ps:.2f})")
            bf, bc, bv = best_attacker(rows, _key(s), metric)
            cells.append("–" if not np.isfinite(bv) else f"{bv:.2f} ({bc}, {bf})")
            body.append(_name(s) + cells)
        out += _table(head, body)
        chance = next(r["chance"] for r in rows if r["metric"] == metric)
        out += ["", f"Chance: {chance:.2f}."]
    out += ["", *summary_table(rows, pts)]
    return "\n".join(out) + "\n"


def summary_table(rows: Sequence[dict[str, Any]], pts: Sequence[Setting]) -> list[str]:
    """Each point: its median error as released, each attack's best attacker, and re-identification
    against the synthetic study's target (≤ a third of the raw ticks' best attacker)."""
    raw = best_attacker(rows, "raw-ticks", "reidentification")[2]
    has_task = any(r["metric"] == "task_accuracy" for r in rows)
    out = [
        "## Summary",
        "",
        f"Median error ≤ {TARGET_ERROR_DEG:g}° as released; re-identification by the best attacker ≤ raw ticks' "
        f"best / 3 = {raw * TARGET_REID_FRACTION:.2f}.",
        "",
    ]
    head = ["mechanism", "ε/tick", "w", "ε_w", "error median", "re-ID (best)", "re-ID / raw ticks"]
    head += ["task (best)"] if has_task else []
    head += ["error met", "re-ID met"]
    body = []
    for s in [("raw-gaze", math.inf, 0), ("raw-ticks", math.inf, 0), *pts]:
        err = _stat(rows, _key(s), metric="error_median", target="has_gaze", filter="none")[0]
        r = best_attacker(rows, _key(s), "reidentification")[2]
        cells = [f"{err:.2f}" if np.isfinite(err) else "–", f"{r:.2f}" if np.isfinite(r) else "–",
                 f"{r / raw:.2f}" if np.isfinite(r) and raw > 0 else "–"]  # fmt: skip
        if has_task:
            task = best_attacker(rows, _key(s), "task_accuracy")[2]
            cells.append(f"{task:.2f}" if np.isfinite(task) else "–")
        if isinstance(_key(s), str):
            cells += ["–", "–"]
        else:
            cells += ["yes" if err <= TARGET_ERROR_DEG else "no",
                      "–" if not np.isfinite(r) else ("yes" if r <= raw * TARGET_REID_FRACTION else "no")]  # fmt: skip
        body.append(_name(s) + cells)
    return out + _table(head, body)


__all__ = ["ATTACKS", "best_attacker", "manifest_markdown", "summary_table"]
