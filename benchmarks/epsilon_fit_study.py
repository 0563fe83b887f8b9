"""Issue #36's criterion on synthetic people: the allocation fitted for its ε against today's fitted
allocation (for any ε), the shipped default (at the ε it spends: #36 item 2), the old default (every
feature of the task allocation at every ε), Algorithm 1 (``dcfpa-bozkir``) and a release without
signal (the floor: Algorithm 1 at ε 0.5 a chunk), under the evaluation's honest split.

Each seed is a new synthetic study (``synthetic_study(seed=...)``, its people and their noise) and
the releases' noise seed; every candidate of a seed is measured on the same recordings, so the
differences are paired by seed. Task accuracy: leave one person out, voted per recording, mean of
the four classifiers; re-identification: the chunked split, voted, mean of the four.

Run (about 1 min a seed and mechanism on 2 shared cores)::

    python benchmarks/epsilon_fit_study.py run --seeds 10 --out raw/eps36.json
    python benchmarks/epsilon_fit_study.py table raw/eps36.json
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np

#: the candidates, in the table's order ("old default": every feature of the shipped task allocation
#: at every ε, as shipped before it concentrated at a low ε)
CANDIDATES = ("fitted for ε", "fitted, any ε", "default", "old default", "Alg. 1", "floor")


def _scores(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Voted task accuracy and re-identification, each the mean over the classifiers."""
    out = {}
    for metric, target in (("task", "task"), ("reidentification", "chunked")):
        got = [r["value"] for r in rows if r["metric"] == metric and r["target"] == target and r["voting"] == "yes"
               and r.get("postprocess", "no") == "no"]  # fmt: skip
        out[metric] = float(np.mean(got))
    return out


def _old_default(folder: str) -> str:
    """A weights file holding every feature of the shipped task allocation, at any ε."""
    from pathlib import Path

    from streamdp.privacy.bounds import weights_profile
    from streamdp.privacy.weights_file import weights_document

    path = Path(folder) / "task-every-epsilon.json"
    path.write_text(json.dumps(weights_document(weights_profile("task"), name="task-every-epsilon")))
    return str(path)


def one_seed(seed: int, people: int, seconds: float, epsilon: float, n: int, mechanism: str) -> dict[str, Any]:
    import tempfile

    from streamdp.config import SessionConfig
    from streamdp.offline.evaluate import EvaluationPlan, GridPoint, feature_signals, synthetic_study
    from streamdp.offline.fold_weights import fit_folds, fitted_job
    from streamdp.offline.grid import point_rows

    recs = feature_signals(synthetic_study(people=people, seconds=seconds, seed=1000 + seed))
    base, plan = SessionConfig(), EvaluationPlan()
    point = GridPoint(mechanism, epsilon, n)
    equal = replace(base, weights="equal", epsilon_ceiling=None)
    out: dict[str, Any] = {"seed": seed}
    for name, aware in (("fitted for ε", True), ("fitted, any ε", False)):
        folds = fit_folds(recs, [point], base, plan, epsilon_aware=aware)
        out[name] = _scores(fitted_job(recs, base, plan, folds, point, seed, seed))
        if aware:
            mine = folds[mechanism, n, epsilon]
            out["funded"] = [int(sum(w > 0 for w in t.weights)) for t in mine.lopo["task"].values()]
    out["default"] = _scores(point_rows(recs, base, plan, point, seed, seed))
    out["default weights"] = point.config(base).mechanism_instance().describe()["weights"]
    with tempfile.TemporaryDirectory() as folder:
        old = replace(base, weights=_old_default(folder))
        out["old default"] = _scores(point_rows(recs, old, plan, point, seed, seed))
    out["Alg. 1"] = _scores(point_rows(recs, equal, plan, GridPoint("dcfpa-bozkir", epsilon, n), seed, seed))
    out["floor"] = _scores(point_rows(recs, equal, plan, GridPoint("dcfpa-bozkir", 0.5, n), seed, seed))
    print(json.dumps(out), flush=True)
    return out


def run(args: argparse.Namespace) -> None:
    jobs = [(s, args.people, args.seconds, args.epsilon, args.chunk_length, args.mechanism)
            for s in range(args.first_seed, args.first_seed + args.seeds)]  # fmt: skip
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(one_seed, *zip(*jobs, strict=True)))
    doc = {"args": {k: v for k, v in vars(args).items() if k != "func"}, "seeds": results}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)


def _paired(a: list[float], b: list[float]) -> str:
    d = np.asarray(a) - np.asarray(b)
    return f"{d.mean():+.3f} ± {d.std(ddof=1) / np.sqrt(d.size):.3f}"


def table(args: argparse.Namespace) -> None:
    seeds = [s for path in args.files for s in json.load(open(path, encoding="utf-8"))["seeds"]]
    names = sorted({s.get("default weights", "?") for s in seeds})
    print(f"{len(seeds)} seeds; the default's allocation: {', '.join(names)}\n")
    print("| candidate | task | re-ID | Δ task − fitted for any ε | Δ task − old default | Δ task − floor "
          "| Δ re-ID − floor |")
    print("|---|---|---|---|---|---|---|")
    for name in CANDIDATES:
        task = [s[name]["task"] for s in seeds]
        reid = [s[name]["reidentification"] for s in seeds]
        se = np.sqrt(len(seeds))
        print(f"| {name} | {np.mean(task):.3f} ± {np.std(task, ddof=1) / se:.3f} | "
              f"{np.mean(reid):.3f} ± {np.std(reid, ddof=1) / se:.3f} | "
              f"{_paired(task, [s['fitted, any ε']['task'] for s in seeds])} | "
              f"{_paired(task, [s['old default']['task'] for s in seeds])} | "
              f"{_paired(task, [s['floor']['task'] for s in seeds])} | "
              f"{_paired(reid, [s['floor']['reidentification'] for s in seeds])} |")  # fmt: skip
    funded = [k for s in seeds for k in s.get("funded", [])]
    if funded:
        values, counts = np.unique(funded, return_counts=True)
        print(f"\nfeatures funded by the fit for ε (folds): {dict(zip(values.tolist(), counts.tolist(), strict=True))}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True)
    r = sub.add_parser("run")
    r.add_argument("--seeds", type=int, default=10)
    r.add_argument("--first-seed", type=int, default=0)
    r.add_argument("--people", type=int, default=10)
    r.add_argument("--seconds", type=float, default=240.0)
    r.add_argument("--epsilon", type=float, default=24.96)
    r.add_argument("--chunk-length", type=int, default=32)
    r.add_argument("--mechanism", default="dcfpa")
    r.add_argument("--workers", type=int, default=2)
    r.add_argument("--out", required=True)
    r.set_defaults(func=run)
    t = sub.add_parser("table")
    t.add_argument("files", nargs="+")
    t.set_defaults(func=table)
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
