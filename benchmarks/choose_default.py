"""Choose the default chunk mechanism configuration on public synthetic data only (issues #9, #21).

The criterion: on the synthetic multi-person study, the default beats Bozkir et al.'s Algorithm 1
(``dcfpa-bozkir``, equal weights, no ceiling) on utility and on task accuracy at equal total ε per
chunk, with re-identification no higher, at every total ε of the papers' grid (52 × {0.48, 2.4,
4.8, 24, 48}) and n ∈ {32, 64, 128}, for each mechanism family (CFPA, DCFPA): 30 settings.

Run (writes the raw rows, one JSON per candidate, then prints the tables)::

    python benchmarks/choose_default.py run --out raw --seeds 20 \
        --candidate "alg1:dcfpa-bozkir,weights=equal,epsilon_ceiling=none"
    python benchmarks/choose_default.py run --out raw --seeds 20 --epsilons 24.96 124.8 200 \
        --candidate "dcfpa:dcfpa,weights=task,epsilon_ceiling=none" \
        --candidate "cfpa:cfpa,weights=task,epsilon_ceiling=none"
    python benchmarks/choose_default.py verdict --alg1 raw/alg1.json --cfpa raw/cfpa.json \
        --dcfpa raw/dcfpa.json --ceiling 200
    python benchmarks/choose_default.py tradeoff --alg1 raw/alg1.json --candidate raw/dcfpa.json \
        --ceilings none 500 200 124.8
    python benchmarks/choose_default.py shared ../shared/data/cateyes_119hz/test_data_full.csv --seeds 20

A candidate is ``label:mechanism[,field=value…]`` with :class:`~streamdp.config.SessionConfig`
fields (``weights``, ``epsilon_ceiling``, ``level_share``, ``k``, ``transform``; ``none`` is None), or
``fit_weights=1``: ε split by weights fitted on each training fold alone, protecting the participants
(``evaluate(..., fit_weights=True)``; the configured ``weights`` are then unused). A fitted candidate's
utility is the evaluation's own (each person's releases by the fold without them, over the features
every such fold releases), and stands for both utility figures below. With it, ``protect_weight=λ``
(an experiment, not an option of streamdp) fits ``uᵢ = max(0, sᵢ − λ·pᵢ)`` instead of λ = 1: this
script replaces :func:`streamdp.offline.fit_weights`'s usefulness in its own process, where every
fold is fitted (docs/evaluation.md, "--fit-weights in the 30 settings").
Fields not given keep SessionConfig's defaults, which include the task weights and the ceiling of
200: Algorithm 1 must say ``weights=equal,epsilon_ceiling=none``. A ceiling C is read, not run
(``table --ceiling label=C``, ``compare --ceiling C``, ``verdict --ceiling C``, ``tradeoff``): at a
total ε above C a candidate run without a ceiling has the figures it has at C, which is exact, since
the ceiling builds the mechanism at the spent ε (the releases are the same bit for bit,
tests/test_epsilon_ceiling.py); C must be on the grid of that candidate's run. Every candidate is
run with the same noise seeds (repetition j seeds recording i with ``j·R + i``, the classifiers
with j), so differences between candidates are paired.

Figures per (candidate, n, ε), mean ± sd (ddof 1) over seeds of the per-seed value:

- ``utility``: Bozkir et al.'s mean 1/|NMSE| per task label, averaged over labels, over the
  released features (as the evaluation's table);
- ``utility_released``: the same, computed here (a feature of weight 0 is a public constant whose
  NMSE says nothing about the mechanism);
- ``utility_common``: the same over the 26 features the task allocation releases, for every
  candidate (Algorithm 1 releases all 52, the pupil features included);
- ``reid``: voted re-identification, chunked split with a window's gap, mean over k-NN, SVM, DT, RF;
- ``task``: voted task accuracy, leave one person out, mean over the four classifiers.

``verdict`` says per setting whether the default is better than Algorithm 1, by two rules on the
paired per-seed differences Δ = default − Algorithm 1 (mean and its standard error over seeds):
utility higher (the ratio of mean utilities > 1, over each one's released features and over the
26 common ones) and, strict, mean Δ task ≥ 0 and mean Δ re-ID ≤ 0 (a tie counts as equal), or,
within noise, mean Δ task ≥ −SE and mean Δ re-ID ≤ +SE.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from streamdp.config import DEFAULT_EPSILON_CEILING, SessionConfig
from streamdp.offline.evaluate import GridPoint, evaluate, feature_signals, grid_config, sanitize, synthetic_study
from streamdp.privacy.utility import mean_utility

#: total ε per chunk of the judging grid: 52 features × the papers' ε per feature
JUDGING_EPSILONS = tuple(round(52 * e, 2) for e in (0.48, 2.4, 4.8, 24.0, 48.0))
#: the features every candidate is compared on: those the shipped task allocation releases (26);
#: a candidate's own released set differs (Algorithm 1 releases all 52, pupil features included)
# every feature of the task allocation (at a lower ε it funds only the first few of them)
COMMON = SessionConfig(weights="task", epsilon=DEFAULT_EPSILON_CEILING).bounds_profile().released


def parse_candidate(text: str) -> tuple[str, str, dict[str, Any]]:
    label, _, rest = text.partition(":")
    mechanism, *pairs = rest.split(",")
    fields: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        fields[key] = _field_value(key, value)
    return label, mechanism, fields


def _field_value(key: str, value: str) -> Any:
    """A candidate's field value: ``none`` is None (e.g. ``epsilon_ceiling=none``), names stay text."""
    if value.lower() == "none":
        return None
    if key == "fit_weights":
        return value.lower() in ("1", "yes", "true")
    if key in ("weights", "transform", "sensitivity"):
        return value
    try:
        return float(value) if "." in value or "e" in value.lower() else int(value)
    except ValueError:  # k=private
        return value


def released_utility(parts: list, tasks: list[str], released: np.ndarray) -> float:
    per_label = []
    for label in sorted(set(tasks)):
        mine = [p for p, t in zip(parts, tasks, strict=True) if t == label and len(p.clean)]
        clean = np.concatenate([p.clean for p in mine])[:, released]
        noisy = np.concatenate([p.noisy for p in mine])[:, released]
        per_label.append(mean_utility(clean, noisy))
    return float(np.mean(per_label))


def _protect_more(weight: float) -> None:
    """Fit ``uᵢ = max(0, sᵢ − weight·pᵢ)`` in this process (the ``protect_weight`` experiment)."""
    import streamdp.offline.fit_weights as fit_module
    from streamdp.privacy.allocation import usefulness

    def penalised(task: np.ndarray, protect: np.ndarray | None = None) -> np.ndarray:
        return usefulness(task, None if protect is None else weight * np.asarray(protect))

    fit_module.usefulness = penalised  # type: ignore[assignment]


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    study = synthetic_study(args.people, args.seconds, 0)
    recs = feature_signals(study)
    tasks = [r.task for r in recs]
    for text in args.candidate:
        label, mechanism, fields = parse_candidate(text)
        fitted = bool(fields.get("fit_weights", False))
        penalty = fields.get("protect_weight")
        if penalty is not None:
            if not fitted:
                raise SystemExit(f"{label}: protect_weight needs fit_weights=1")
            _protect_more(float(penalty))
        settings = {k: v for k, v in fields.items() if k not in ("fit_weights", "protect_weight")}
        base = replace(SessionConfig(), **settings)
        grid = [GridPoint(mechanism, e, n) for n in args.n for e in args.epsilons]
        t0 = time.perf_counter()
        first = args.first_seed
        rows = evaluate(recs, grid, seed=first * len(recs), progress=False, config=base, seeds=args.seeds,
                        workers=args.workers, fit_weights=fitted)  # fmt: skip
        for row in rows:  # repetition j of this run is seed first + j (its classifiers are seeded with j)
            row["seed"] += first
        if fitted:  # each person's releases by the fold without them: evaluate's own utility
            rows += [
                {**r, "metric": metric}
                for r in rows
                if r["metric"] == "utility"
                for metric in ("utility_released", "utility_common")
            ]
        for point in grid if not fitted else ():
            # the features released at the point's ε (the task allocation funds fewer at a low ε)
            released = grid_config(base, mechanism, point.epsilon, point.chunk_length).bounds_profile().released
            for j in range(first, first + args.seeds):
                parts = sanitize(recs, mechanism, point.epsilon, point.chunk_length, j * len(recs), base)
                for metric, mask in (("utility_released", released), ("utility_common", COMMON)):
                    rows.append(
                        {
                            "mechanism": mechanism,
                            "epsilon": point.epsilon,
                            "chunk_length": point.chunk_length,
                            "seed": j,
                            "metric": metric,
                            "target": "-",
                            "classifier": "-",
                            "voting": "-",
                            "value": released_utility(parts, tasks, mask),
                        }
                    )
        doc = {
            "label": label,
            "mechanism": mechanism,
            "fields": fields,
            "seconds": args.seconds,
            "people": args.people,
            "seeds": args.seeds,
            "rows": rows,
            "spent": {f"{p.chunk_length}/{p.epsilon:g}": p.epsilon_chunk(base) for p in grid},
        }
        doc["first_seed"] = first
        name = label if first == 0 else f"{label}.from{first}"
        (out / f"{name}.json").write_text(json.dumps(doc))
        print(f"{label}: {len(grid)} points × {args.seeds} seeds in {time.perf_counter() - t0:.0f} s", flush=True)


def summarize(doc: dict[str, Any]) -> dict[tuple[int, float], dict[str, list[float]]]:
    """(n, ε) → measure → per-seed values."""
    per: dict[tuple[int, float, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in doc["rows"]:
        key = (r["chunk_length"], float(r["epsilon"]), r["seed"])
        if r["metric"] == "utility":
            per[key]["utility"].append(r["value"])
        elif r["metric"] in ("utility_released", "utility_common"):
            per[key][r["metric"]].append(r["value"])
        elif r["metric"] == "reidentification" and r["voting"] == "yes" and r["target"] == "chunked":
            per[key]["reid"].append(r["value"])
        elif r["metric"] == "task" and r["voting"] == "yes":
            per[key]["task"].append(r["value"])
    out: dict[tuple[int, float], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (n, e, _), measures in sorted(per.items()):
        for name, values in measures.items():
            out[(n, e)][name].append(float(np.mean(values)))
    return out


def fmt(values: list[float], digits: int = 2) -> str:
    a = np.asarray(values)
    sd = a.std(ddof=1) if a.size > 1 else 0.0
    if digits == 0:
        return f"{a.mean():.3g} ± {sd:.2g}"
    return f"{a.mean():.{digits}f} ± {sd:.{digits}f}"


def table(args: argparse.Namespace) -> None:
    docs = [json.loads(Path(p).read_text()) for p in args.files]
    ceilings = dict(c.split("=") for c in args.ceiling)
    print("| candidate | n | ε asked | ε spent | utility | utility (released) | re-ID voted | task voted | seeds |")
    print("|---|---|---|---|---|---|---|---|---|")
    merged: dict[str, dict[str, Any]] = {}
    for d in docs:  # files of one label (runs at other ε) are one candidate
        merged.setdefault(d["label"], {**d, "rows": []})["rows"] += d["rows"]
    summaries = {label: summarize(d) for label, d in merged.items()}
    views: list[tuple[str, str, float | None]] = [(label, label, None) for label in merged]
    views += [(f"{lab} ≤{c}", lab, float(c)) for lab, c in ceilings.items()]
    lines = []
    every = sorted({key for s in summaries.values() for key in s})
    for name, label, ceiling in views:
        s = summaries[label]
        for n, e in every if ceiling is not None else sorted(s):
            spent = e if ceiling is None or e <= ceiling else ceiling
            if (n, spent) not in s:
                continue
            m = s[(n, spent)]
            cells = [
                f"{e:g}",
                f"{spent:g}",
                fmt(m["utility"], 0),
                fmt(m["utility_released"], 0),
                fmt(m["reid"]),
                fmt(m["task"]),
                str(len(m["reid"])),
            ]
            lines.append(((n, e, name), f"| {name} | {n} | {' | '.join(cells)} |"))
    for _, line in sorted(lines):
        print(line)


def compare(args: argparse.Namespace) -> None:
    """Candidate (maybe with a ceiling) against the baseline at each (n, ε) of the baseline: the
    paired per-seed differences (seed j of both used the same classifier seeds and recordings)."""
    base = summarize(json.loads(Path(args.baseline).read_text()))
    cand_doc = _merged_doc(args.candidate)
    cand = summarize(cand_doc)
    ceiling = args.ceiling
    name = cand_doc["label"] + (f" ≤{ceiling:g}" if ceiling else "")
    print(
        f"{name} against {Path(args.baseline).stem}: Δ = candidate − baseline, mean ± standard error "
        "of the paired per-seed differences"
    )
    print()
    print("| n | ε asked | ε spent | Δ utility (released) ×| Δ task voted | Δ re-ID voted | utility | task | re-ID |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, e in sorted(base):
        spent = e if ceiling is None or e <= ceiling else ceiling
        if (n, spent) not in cand:
            continue
        b, c = base[(n, e)], cand[(n, spent)]
        k = min(len(b["reid"]), len(c["reid"]))
        ratio = np.mean(c["utility_released"]) / np.mean(b["utility_released"])
        cells = []
        ok = [ratio > 1]
        for m, sign in (("task", 1), ("reid", -1)):
            d = np.asarray(c[m][:k]) - np.asarray(b[m][:k])
            se = d.std(ddof=1) / np.sqrt(k) if k > 1 else 0.0
            cells.append(f"{d.mean():+.2f} ± {se:.2f}")
            ok.append(sign * d.mean() >= 0)
        marks = ["✓" if o else "✗" for o in ok]
        print(
            f"| {n} | {e:g} | {spent:g} | {ratio:.3g}× | {cells[0]} | {cells[1]} | {marks[0]} | {marks[1]} | "
            f"{marks[2]} |"
        )


def _merged(files: list[str]) -> dict[tuple[int, float], dict[str, list[float]]]:
    """One candidate's figures from its files (runs of one label at other ε are one candidate)."""
    return summarize(_merged_doc(files))


def _merged_doc(files: list[str]) -> dict[str, Any]:
    """One candidate's runs (files of one label, e.g. seeds 0-19 and 20-39) as one document."""
    docs = [json.loads(Path(p).read_text()) for p in files]
    return {**docs[0], "rows": [r for d in docs for r in d["rows"]]}


#: a ceiling: None (none), C per chunk, (C, n₀): C per n₀ steps, a per-time ceiling of C·n/n₀ per chunk,
#: or (C, E₀, p): a spending curve, min(ε, C·(ε/E₀)^p) spent when ε is asked (rounded to 0.01)
Ceiling = float | tuple[float, int] | tuple[float, float, float] | None


def parse_ceiling(text: str) -> Ceiling:
    """``none``, ``200`` (per chunk), ``200/64`` (200 per 64 steps: 100 per chunk at n = 32) or
    ``200@2496^0.4`` (a curve: C·(ε/E₀)^p, 200 at ε 2496)."""
    if text.lower() == "none":
        return None
    if "@" in text:
        c, _, rest = text.partition("@")
        e0, _, power = rest.partition("^")
        return (float(c), float(e0), float(power))
    c, _, n0 = text.partition("/")
    return (float(c), int(n0)) if n0 else float(c)


def ceiling_name(ceiling: Ceiling) -> str:
    if ceiling is None:
        return "none"
    if isinstance(ceiling, tuple) and len(ceiling) == 3:
        return f"curve {ceiling[0]:g}·(ε/{ceiling[1]:g})^{ceiling[2]:g}"
    return f"{ceiling[0]:g} per {ceiling[1]} steps" if isinstance(ceiling, tuple) else f"{ceiling:g}"


def _at(figures: dict[tuple[int, float], Any], n: int, e: float, ceiling: Ceiling) -> tuple[float, Any]:
    """(ε spent, figures) of a candidate asked for ε at n under a ceiling: those it has at
    min(ε, ceiling) — exactly what the ceiling makes it spend (the mechanism is built at the spent ε,
    bit for bit the same releases: tests/test_epsilon_ceiling.py)."""
    if isinstance(ceiling, tuple) and len(ceiling) == 3:
        ceiling = round(ceiling[0] * (e / ceiling[1]) ** ceiling[2], 2)
    elif isinstance(ceiling, tuple):
        ceiling = ceiling[0] * n / ceiling[1]
    spent = e if ceiling is None else min(e, ceiling)
    if (n, spent) not in figures:
        raise SystemExit(f"no figures at n = {n}, ε = {spent:g}: run the candidate there")
    return spent, figures[(n, spent)]


def _paired(c: list[float], b: list[float]) -> tuple[float, float, int]:
    """Mean and standard error of the paired per-seed differences c − b (seeds 0…k−1 of both)."""
    k = min(len(c), len(b))
    d = np.asarray(c[:k]) - np.asarray(b[:k])
    return float(d.mean()), float(d.std(ddof=1) / np.sqrt(k)) if k > 1 else 0.0, k


def verdict_rows(
    alg1: dict, families: dict[str, dict], ceiling: Ceiling, ceilings: dict[str, Ceiling] | None = None
) -> list[dict[str, Any]]:
    """Each of the 30 settings (family × n × ε of the judging grid): the default of that mechanism
    family (at ε asked, under the ceiling, or the family's own in ``ceilings``) against Algorithm 1
    at the same ε and n, paired."""
    out = []
    for family, cand in families.items():
        ceiling_f = (ceilings or {}).get(family, ceiling)
        for n in (32, 64, 128):
            for e in JUDGING_EPSILONS:
                _, b = _at(alg1, n, e, None)
                spent, c = _at(cand, n, e, ceiling_f)
                task, task_se, k = _paired(c["task"], b["task"])
                reid, reid_se, _ = _paired(c["reid"], b["reid"])
                u_c, u_b = np.asarray(c["utility_released"][:k]), np.asarray(b["utility_released"][:k])
                common = np.mean(c["utility_common"][:k]) / np.mean(b["utility_common"][:k])
                row = {
                    "family": family,
                    "n": n,
                    "epsilon": e,
                    "spent": spent,
                    "seeds": k,
                    "utility": float(u_c.mean()),
                    "utility_alg1": float(u_b.mean()),
                    "utility_ratio": float(u_c.mean() / u_b.mean()),
                    "utility_common_ratio": float(common),
                    "utility_seeds_higher": int((u_c > u_b).sum()),
                    "task": float(np.mean(c["task"][:k])),
                    "task_alg1": float(np.mean(b["task"][:k])),
                    "d_task": task,
                    "d_task_se": task_se,
                    "reid": float(np.mean(c["reid"][:k])),
                    "reid_alg1": float(np.mean(b["reid"][:k])),
                    "d_reid": reid,
                    "d_reid_se": reid_se,
                }
                utility_ok = row["utility_ratio"] > 1 and row["utility_common_ratio"] > 1
                # strict: the paired mean differences themselves; a tie (Δ = 0) counts as "equal"/"no higher"
                row["strict"] = bool(utility_ok and task >= 0 and reid <= 0)
                # within noise: task lower, or re-ID higher, by at most one standard error of the paired mean
                row["within_se"] = bool(utility_ok and task >= -task_se and reid <= reid_se)
                row["within_2se"] = bool(utility_ok and task >= -2 * task_se and reid <= 2 * reid_se)
                row["utility_ok"], row["task_ok"], row["reid_ok"] = utility_ok, task >= 0, reid <= 0
                out.append(row)  # fmt: skip
    return out


def verdict(args: argparse.Namespace) -> None:
    """The 30 settings: streamdp's default of each family against Algorithm 1, and the count."""
    alg1 = _merged(args.alg1)
    families = {name: _merged(files) for name, files in (("CFPA", args.cfpa), ("DCFPA", args.dcfpa)) if files}
    cfpa_ceiling = args.ceiling if args.cfpa_ceiling is None else args.cfpa_ceiling
    rows = verdict_rows(alg1, families, args.ceiling, {"CFPA": cfpa_ceiling})
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    first = json.loads(Path((args.cfpa or args.dcfpa)[0]).read_text())["fields"]
    split = f"{first.get('weights', 'task')} weights"
    if first.get("fit_weights"):
        split = "weights fitted on each training fold"
    print(
        f"streamdp ({split}, ceiling {ceiling_name(args.ceiling)}; CFPA {ceiling_name(cfpa_ceiling)}) "
        "against Algorithm 1 "
        "(dcfpa-bozkir, equal weights, no ceiling); Δ = default − Algorithm 1, paired mean ± standard error over seeds"
    )
    print()
    print(
        "| mechanism | n | ε asked | ε spent | utility: default / Alg. 1 (released) | × (26 common) | seeds higher | "
        "task: default / Alg. 1 | Δ task | re-ID: default / Alg. 1 | Δ re-ID | strict | within 1 SE |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['family']} | {r['n']} | {r['epsilon']:g} | {r['spent']:g} | {r['utility']:.3g} / "
            f"{r['utility_alg1']:.3g} ({r['utility_ratio']:.3g}×) | {r['utility_common_ratio']:.3g}× | "
            f"{r['utility_seeds_higher']}/{r['seeds']} | {r['task']:.2f} / {r['task_alg1']:.2f} | "
            f"{r['d_task']:+.2f} ± {r['d_task_se']:.2f} | {r['reid']:.2f} / {r['reid_alg1']:.2f} | "
            f"{r['d_reid']:+.2f} ± {r['d_reid_se']:.2f} | {'✓' if r['strict'] else '✗'} | "
            f"{'✓' if r['within_se'] else '✗'} |"
        )
    print()
    total = len(rows)
    for key, what in (
        ("utility_ok", "utility higher (released and 26 common features)"),
        ("task_ok", "task accuracy higher or equal (paired mean Δ ≥ 0)"),
        ("reid_ok", "re-identification no higher (paired mean Δ ≤ 0)"),
        ("strict", "better, strict rule (all three)"),
        ("within_se", "better, within one standard error (utility higher, Δ task ≥ −SE, Δ re-ID ≤ +SE)"),
        ("within_2se", "better, within two standard errors (utility higher, Δ task ≥ −2 SE, Δ re-ID ≤ +2 SE)"),
    ):
        print(f"- {what}: {sum(r[key] for r in rows)} of {total}")  # fmt: skip


def tradeoff(args: argparse.Namespace) -> None:
    """The ceiling's trade-off: one allocation run without a ceiling, read at each ceiling."""
    alg1 = _merged(args.alg1)
    cand = _merged(args.candidate)
    ceilings = [parse_ceiling(c) for c in args.ceilings]
    print(
        "| ceiling | n | ε asked | ε spent | utility (released) | × Alg. 1 | re-ID voted | Δ re-ID vs Alg. 1 | "
        "task voted | Δ task vs Alg. 1 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    compact: dict[tuple[float, Any], str] = {}
    for n in args.n:
        for e in JUDGING_EPSILONS:
            _, b = _at(alg1, n, e, None)
            compact[(e, "alg1")] = (
                f"{np.mean(b['utility_released']):.3g} / {np.mean(b['reid']):.2f} / {np.mean(b['task']):.2f}"
                if n == args.compact_n
                else compact.get((e, "alg1"), "")
            )
            print(
                f"| Alg. 1 | {n} | {e:g} | {e:g} | {fmt(b['utility_released'], 0)} | 1× | {fmt(b['reid'])} | – | "
                f"{fmt(b['task'])} | – |"
            )
            for ceiling in ceilings:
                spent, c = _at(cand, n, e, ceiling)
                reid, reid_se, _ = _paired(c["reid"], b["reid"])
                task, task_se, _ = _paired(c["task"], b["task"])
                ratio = np.mean(c["utility_released"]) / np.mean(b["utility_released"])
                name = ceiling_name(ceiling)
                print(
                    f"| {name} | {n} | {e:g} | {spent:g} | {fmt(c['utility_released'], 0)} | {ratio:.3g}× | "
                    f"{fmt(c['reid'])} | {reid:+.2f} ± {reid_se:.2f} | {fmt(c['task'])} | "
                    f"{task:+.2f} ± {task_se:.2f} |"
                )
                if n == args.compact_n:
                    compact[(e, name)] = (
                        f"{spent:g} | {np.mean(c['utility_released']):.3g} / "
                        f"{np.mean(c['reid']):.2f} / {np.mean(c['task']):.2f}"
                    )
    names = [ceiling_name(c) for c in ceilings]
    print()
    print(f"n = {args.compact_n}; each cell: utility / re-ID / task (voted); ε spent per chunk before it")
    print()
    print(
        "| ε asked per chunk | "
        + " | ".join(f"ceiling {m}: ε spent | utility / re-ID / task" for m in names)
        + " | Algorithm 1: utility / re-ID / task |"
    )
    print("|---|" + "---|---|" * len(names) + "---|")
    for e in JUDGING_EPSILONS:
        print(f"| {e:g} | " + " | ".join(compact[(e, m)] for m in names) + f" | {compact[(e, 'alg1')]} |")
    print()
    print(
        "Settings (n × ε of the judging grid) where this allocation under the ceiling is better than Algorithm 1 "
        "(the rules of verdict):"
    )
    print()
    print(
        "| ceiling | utility higher | task ≥ | re-ID ≤ | better, strict | better, within 1 SE | within 2 SE | "
        "fails (1 SE) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for ceiling, name in zip(ceilings, names, strict=True):
        rows = verdict_rows(alg1, {"x": cand}, ceiling)
        fails = ", ".join(f"{r['n']}/{r['epsilon']:g}" for r in rows if not r["within_se"])
        counts = " | ".join(f"{sum(r[k] for r in rows)}/{len(rows)}" for k in
                            ("utility_ok", "task_ok", "reid_ok", "strict", "within_se", "within_2se"))  # fmt: skip
        print(f"| {name} | {counts} | {fails or '–'} |")
    print()
    print(f"One line per ceiling (utility and task at n = {args.compact_n}; re-ID voted at n = 32 / 64 / 128):")
    print()
    print(
        "| ceiling | ε spent at 249.6 / 1248 / 2496 asked | utility at 2496 | task at 2496 | re-ID at 249.6 | "
        "re-ID at 2496 | better than Alg. 1 (of 15: strict / 1 SE / 2 SE) |"
    )
    print("|---|---|---|---|---|---|---|")
    big = JUDGING_EPSILONS[-1]
    for ceiling, name in zip(ceilings, names, strict=True):
        rows = verdict_rows(alg1, {"x": cand}, ceiling)
        spent = " / ".join(f"{_at(cand, args.compact_n, e, ceiling)[0]:g}" for e in JUDGING_EPSILONS[2:])
        c = _at(cand, args.compact_n, big, ceiling)[1]
        reid = {e: " / ".join(f"{np.mean(_at(cand, n, e, ceiling)[1]['reid']):.2f}" for n in (32, 64, 128))
                for e in (JUDGING_EPSILONS[2], big)}  # fmt: skip
        counts = " / ".join(str(sum(r[k] for r in rows)) for k in ("strict", "within_se", "within_2se"))
        print(f"| {name} | {spent} | {np.mean(c['utility_released']):.3g} | {np.mean(c['task']):.2f} | "
              f"{reid[JUDGING_EPSILONS[2]]} | {reid[big]} | {counts} |")  # fmt: skip
    b = {e: {n: _at(alg1, n, e, None)[1] for n in (32, 64, 128)} for e in (JUDGING_EPSILONS[2], big)}
    print(f"| Algorithm 1 | 249.6 / 1248 / 2496 | {np.mean(b[big][args.compact_n]['utility_released']):.3g} | "
          f"{np.mean(b[big][args.compact_n]['task']):.2f} | "
          + " | ".join(" / ".join(f"{np.mean(b[e][n]['reid']):.2f}" for n in (32, 64, 128)) for e in b)
          + " | – |")  # fmt: skip


def shared(args: argparse.Namespace) -> None:
    """Utility only, on a real recording without labels: the 30 settings, default against
    Algorithm 1 with the same noise seeds (seed j sanitizes the recording with j, as ``run``)."""
    from streamdp.readers import read_recording

    recs = feature_signals([(read_recording(args.recording), "P0", "-")])
    steps = len(recs[0].features)
    alg1 = replace(SessionConfig(), weights="equal", epsilon_ceiling=None)
    cfpa_ceiling = args.ceiling if args.cfpa_ceiling is None else args.cfpa_ceiling
    rows = []
    for family, mechanism in (("CFPA", "cfpa"), ("DCFPA", "dcfpa")):
        ceiling = cfpa_ceiling if family == "CFPA" else args.ceiling
        default = replace(SessionConfig(), weights="task", epsilon_ceiling=ceiling)
        for n in (32, 64, 128):
            for e in JUDGING_EPSILONS:
                per: dict[str, list[float]] = defaultdict(list)
                for j in range(args.seeds):
                    for name, mech, cfg in (("alg1", "dcfpa-bozkir", alg1), ("default", mechanism, default)):
                        parts = sanitize(recs, mech, e, n, j, cfg)
                        released = grid_config(cfg, mech, e, n).bounds_profile().released  # at this ε
                        per[name].append(released_utility(parts, ["-"], released))
                        per[name + "_common"].append(released_utility(parts, ["-"], COMMON))
                d, b = np.asarray(per["default"]), np.asarray(per["alg1"])
                dc, bc = np.asarray(per["default_common"]), np.asarray(per["alg1_common"])
                spent = grid_config(default, mechanism, e, n).mechanism_instance().epsilon_chunk
                rows.append({"family": family, "n": n, "epsilon": e, "spent": spent, "chunks": (steps // n),
                             "utility": d.tolist(), "utility_alg1": b.tolist(), "utility_common": dc.tolist(),
                             "utility_common_alg1": bc.tolist(), "seeds_higher": int((d > b).sum()),
                             "seeds_higher_common": int((dc > bc).sum())})  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(
        f"{args.recording}: {steps} feature steps; utility (1/NMSE) of the released features, default (task "
        f"weights, ceiling {args.ceiling:g}; CFPA {cfpa_ceiling:g}) against Algorithm 1, {args.seeds} paired seeds"
    )
    print()
    print(
        "| mechanism | n | chunks | ε asked | ε spent | default (released) | Alg. 1 (released) | × | seeds higher | "
        "× on the 26 common | seeds higher |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = np.mean(r["utility"]) / np.mean(r["utility_alg1"])
        common = np.mean(r["utility_common"]) / np.mean(r["utility_common_alg1"])
        print(
            f"| {r['family']} | {r['n']} | {r['chunks']} | {r['epsilon']:g} | {r['spent']:g} | "
            f"{fmt(r['utility'], 0)} | {fmt(r['utility_alg1'], 0)} | {ratio:.3g}× | {r['seeds_higher']}/{args.seeds} | "
            f"{common:.3g}× | {r['seeds_higher_common']}/{args.seeds} |"
        )
    print()
    for key, what in (("utility", "released features"), ("utility_common", "the 26 common features")):
        higher = sum(np.mean(r[key]) > np.mean(r[key + "_alg1"]) for r in rows)
        every = sum(all(np.asarray(r[key]) > np.asarray(r[key + "_alg1"])) for r in rows)
        print(
            f"- utility over {what}: default higher on average in {higher} of {len(rows)}, "
            f"on every seed in {every} of {len(rows)}"
        )


def floor(args: argparse.Namespace) -> None:
    """Each candidate against a release without signal at the same n (its ``floor`` run: Algorithm
    1 at a total ε so small that its utility is ~0), paired by seed: where a baseline is within
    two standard errors of the floor, "re-identification no higher than it" asks for a release
    with no signal (docs/evaluation.md)."""
    zero = _merged(args.floor)
    print("| candidate | n | ε asked | ε spent | Δ re-ID − floor | Δ task − floor | at the floor (re-ID within 2 SE) |")
    print("|---|---|---|---|---|---|---|")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for spec in args.candidate:
        files, _, ceiling = spec.partition("@")
        doc = _merged_doc(files.split(","))
        cand, label = summarize(doc), doc["label"] + (f" ≤{ceiling}" if ceiling else "")
        for n, e in [(n, e) for n in sorted({k[0] for k in cand}) for e in args.epsilons]:
            spent = e if not ceiling or e <= float(ceiling) else float(ceiling)
            base = [m for (bn, _), m in zero.items() if bn == n]
            if len(base) != 1 or (n, spent) not in cand:
                continue
            m = cand[(n, spent)]
            d_reid = np.subtract(m["reid"], base[0]["reid"])
            d_task = np.subtract(m["task"], base[0]["task"])
            se = [d.std(ddof=1) / np.sqrt(d.size) for d in (d_reid, d_task)]
            at_floor = bool(d_reid.mean() <= 2 * se[0])
            counts[label][0] += at_floor
            counts[label][1] += 1
            print(f"| {label} | {n} | {e:g} | {spent:g} | {d_reid.mean():+.3f} ± {se[0]:.3f} | "
                  f"{d_task.mean():+.3f} ± {se[1]:.3f} | {'yes' if at_floor else 'no'} |")  # fmt: skip
    print()
    for label, (at, of) in counts.items():
        print(f"- {label}: re-identification within 2 SE of the floor in {at} of {of}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--candidate", action="append", required=True)
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--first-seed", type=int, default=0, help="more seeds for an earlier run: start here")
    r.add_argument("--seconds", type=float, default=600.0)
    r.add_argument("--people", type=int, default=6)
    r.add_argument("--workers", type=int, default=1)
    r.add_argument("--n", type=int, nargs="+", default=[32, 64, 128])
    r.add_argument("--epsilons", type=float, nargs="+", default=list(JUDGING_EPSILONS))
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    t.add_argument("--ceiling", action="append", default=[])
    c = sub.add_parser("compare")
    c.add_argument("baseline")
    c.add_argument("candidate", nargs="+", help="one candidate's files (their rows are merged)")
    c.add_argument("--ceiling", type=float)
    v = sub.add_parser("verdict", help="the 30 settings: the default of each family against Algorithm 1")
    v.add_argument("--alg1", nargs="+", required=True, help="Algorithm 1's files (weights=equal, no ceiling)")
    v.add_argument("--cfpa", nargs="+", default=[], help="the CFPA default's files (task weights, no ceiling)")
    v.add_argument("--dcfpa", nargs="+", default=[], help="the DCFPA default's files (task weights, no ceiling)")
    v.add_argument("--ceiling", type=parse_ceiling, default=DEFAULT_EPSILON_CEILING, help="as tradeoff's")
    v.add_argument("--cfpa-ceiling", type=parse_ceiling, help="CFPA's own ceiling (default: --ceiling)")
    v.add_argument("--json", help="write the 30 rows here")
    o = sub.add_parser("tradeoff", help="one allocation read at several ceilings, against Algorithm 1")
    o.add_argument("--alg1", nargs="+", required=True)
    o.add_argument("--candidate", nargs="+", required=True, help="files of one candidate run without a ceiling")
    o.add_argument(
        "--ceilings", nargs="+", default=["none", "500", "200", "124.8"], help="none, C per chunk or C/n₀ per n₀ steps"
    )
    o.add_argument("--n", type=int, nargs="+", default=[32, 64, 128])
    o.add_argument("--compact-n", type=int, default=64, help="n of the one-table summary")
    h = sub.add_parser("shared", help="utility on a real recording without labels, the 30 settings")
    h.add_argument("recording")
    h.add_argument("--seeds", type=int, default=10)
    h.add_argument("--ceiling", type=float, default=DEFAULT_EPSILON_CEILING)
    h.add_argument("--cfpa-ceiling", type=float, help="CFPA's own ceiling (default: --ceiling)")
    h.add_argument("--json")
    f = sub.add_parser("floor", help="candidates against a release without signal, paired by seed")
    f.add_argument("--floor", nargs="+", required=True, help="the floor run's files (one ε per n)")
    f.add_argument("--candidate", action="append", required=True,
                   help="one candidate's files, comma-separated, then @C to read it at a ceiling C on its grid")
    f.add_argument("--epsilons", type=float, nargs="*", default=list(JUDGING_EPSILONS), help="the ε asked to read")
    args = ap.parse_args(argv)
    commands = {
        "run": run,
        "table": table,
        "compare": compare,
        "verdict": verdict,
        "tradeoff": tradeoff,
        "shared": shared,
        "floor": floor,
    }
    commands[args.command](args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
