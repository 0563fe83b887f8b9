"""Choose the default chunk mechanism configuration on public synthetic data only (issue #9).

The criterion: on the synthetic multi-person study, the default beats Bozkir et al.'s Algorithm 1
(``dcfpa-bozkir``, equal weights) on utility and on task accuracy at equal total ε per chunk, with
re-identification no higher, at every total ε of the papers' grid (52 × {0.48, 2.4, 4.8, 24, 48})
and n ∈ {32, 64, 128}.

Run (writes the raw rows, one JSON per candidate, then prints the tables)::

    python benchmarks/choose_default.py run --out /tmp/h4/raw --seeds 5 --seconds 600 \
        --candidate "alg1:dcfpa-bozkir" --candidate "default:dcfpa" \
        --candidate "task:dcfpa,weights=task"
    python benchmarks/choose_default.py table /tmp/h4/raw/*.json --ceiling default=250
    python benchmarks/choose_default.py compare /tmp/h4/raw/alg1.json /tmp/h4/raw/task.json --ceiling 200

A candidate is ``label:mechanism[,field=value…]`` with :class:`~streamdp.config.SessionConfig`
fields (``weights``, ``level_share``, ``k``, ``transform``). ``--ceiling label=C`` in ``table``
emulates a per-chunk spending ceiling C: at a total ε above C the candidate's figures are those it
has at C (so C must be on the grid of that candidate's run). Every candidate is run with the same
noise seeds (repetition j seeds recording i with ``j·R + i``), so differences between candidates
are paired.

Figures per (candidate, n, ε), mean ± sd (ddof 1) over seeds of the per-seed value:

- ``utility``: Bozkir et al.'s mean 1/|NMSE| per task label, averaged over labels (as the
  evaluation's table);
- ``utility_released``: the same over the released features only (a feature of weight 0 is a
  public constant whose NMSE says nothing about the mechanism);
- ``reid``: voted re-identification, chunked split with a window's gap, mean over k-NN, SVM, DT, RF;
- ``task``: voted task accuracy, leave one person out, mean over the four classifiers.
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

from streamdp.config import SessionConfig
from streamdp.offline.evaluate import GridPoint, evaluate, feature_signals, sanitize, synthetic_study
from streamdp.privacy.utility import mean_utility

#: total ε per chunk of the judging grid: 52 features × the papers' ε per feature
JUDGING_EPSILONS = tuple(round(52 * e, 2) for e in (0.48, 2.4, 4.8, 24.0, 48.0))


def parse_candidate(text: str) -> tuple[str, str, dict[str, Any]]:
    label, _, rest = text.partition(":")
    mechanism, *pairs = rest.split(",")
    fields: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        fields[key] = value if key in ("weights", "transform") else (float(value) if "." in value else int(value))
    return label, mechanism, fields


def released_utility(parts: list, tasks: list[str], released: np.ndarray) -> float:
    per_label = []
    for label in sorted(set(tasks)):
        mine = [p for p, t in zip(parts, tasks, strict=True) if t == label and len(p.clean)]
        clean = np.concatenate([p.clean for p in mine])[:, released]
        noisy = np.concatenate([p.noisy for p in mine])[:, released]
        per_label.append(mean_utility(clean, noisy))
    return float(np.mean(per_label))


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    study = synthetic_study(args.people, args.seconds, 0)
    recs = feature_signals(study)
    tasks = [r.task for r in recs]
    for text in args.candidate:
        label, mechanism, fields = parse_candidate(text)
        base = replace(SessionConfig(), **fields)
        grid = [GridPoint(mechanism, e, n) for n in args.n for e in args.epsilons]
        t0 = time.perf_counter()
        rows = evaluate(recs, grid, seed=0, progress=False, config=base, seeds=args.seeds, workers=1)
        released = base.bounds_profile().released
        for point in grid:
            for j in range(args.seeds):
                parts = sanitize(recs, mechanism, point.epsilon, point.chunk_length, j * len(recs), base)
                rows.append({"mechanism": mechanism, "epsilon": point.epsilon, "chunk_length": point.chunk_length,
                             "seed": j, "metric": "utility_released", "target": "-", "classifier": "-",
                             "voting": "-", "value": released_utility(parts, tasks, released)})
        doc = {"label": label, "mechanism": mechanism, "fields": fields, "seconds": args.seconds,
               "people": args.people, "seeds": args.seeds, "rows": rows}
        (out / f"{label}.json").write_text(json.dumps(doc))
        print(f"{label}: {len(grid)} points × {args.seeds} seeds in {time.perf_counter() - t0:.0f} s", flush=True)


def summarize(doc: dict[str, Any]) -> dict[tuple[int, float], dict[str, list[float]]]:
    """(n, ε) → measure → per-seed values."""
    per: dict[tuple[int, float, int], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in doc["rows"]:
        key = (r["chunk_length"], float(r["epsilon"]), r["seed"])
        if r["metric"] == "utility":
            per[key]["utility"].append(r["value"])
        elif r["metric"] == "utility_released":
            per[key]["utility_released"].append(r["value"])
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
            cells = [f"{e:g}", f"{spent:g}", fmt(m["utility"], 0), fmt(m["utility_released"], 0), fmt(m["reid"]),
                     fmt(m["task"]), str(len(m["reid"]))]
            lines.append(((n, e, name), f"| {name} | {n} | {' | '.join(cells)} |"))
    for _, line in sorted(lines):
        print(line)


def compare(args: argparse.Namespace) -> None:
    """Candidate (maybe with a ceiling) against the baseline at each (n, ε) of the baseline: the
    paired per-seed differences (seed j of both used the same classifier seeds and recordings)."""
    base = summarize(json.loads(Path(args.baseline).read_text()))
    docs = [json.loads(Path(p).read_text()) for p in args.candidate]
    cand_doc = {**docs[0], "rows": [r for d in docs for r in d["rows"]]}
    cand = summarize(cand_doc)
    ceiling = args.ceiling
    name = cand_doc["label"] + (f" ≤{ceiling:g}" if ceiling else "")
    print(f"{name} against {Path(args.baseline).stem}: Δ = candidate − baseline, mean ± standard error "
          "of the paired per-seed differences")
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
        print(f"| {n} | {e:g} | {spent:g} | {ratio:.3g}× | {cells[0]} | {cells[1]} | {marks[0]} | {marks[1]} | "
              f"{marks[2]} |")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--candidate", action="append", required=True)
    r.add_argument("--seeds", type=int, default=5)
    r.add_argument("--seconds", type=float, default=600.0)
    r.add_argument("--people", type=int, default=6)
    r.add_argument("--n", type=int, nargs="+", default=[32, 64, 128])
    r.add_argument("--epsilons", type=float, nargs="+", default=list(JUDGING_EPSILONS))
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    t.add_argument("--ceiling", action="append", default=[])
    c = sub.add_parser("compare")
    c.add_argument("baseline")
    c.add_argument("candidate", nargs="+", help="one candidate's files (their rows are merged)")
    c.add_argument("--ceiling", type=float)
    args = ap.parse_args(argv)
    {"run": run, "table": table, "compare": compare}[args.command](args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
