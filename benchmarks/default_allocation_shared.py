"""The shipped default allocation at the ε it spends against every feature of the task allocation
at every ε (the default before #36 item 2), on a real recording without labels: utility only.

Utility is Bozkir et al.'s mean 1/|NMSE| over (a) the features each allocation releases, and (b) the
26 features of the task allocation (a feature the allocation drops counts as its public constant),
paired by noise seed. Run (about 1 min on 2 shared cores)::

    python benchmarks/default_allocation_shared.py ../shared/data/cateyes_119hz/test_data_full.csv --seeds 5
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from streamdp.config import DEFAULT_EPSILON_CEILING, SessionConfig
from streamdp.offline.evaluate import feature_signals, grid_config, sanitize
from streamdp.privacy.bounds import weights_profile
from streamdp.privacy.utility import mean_utility
from streamdp.privacy.weights_file import weights_document
from streamdp.readers import read_recording

#: every feature of the task allocation
TASK = SessionConfig(epsilon=DEFAULT_EPSILON_CEILING).bounds_profile().released


def _utility(parts: list, released: np.ndarray) -> float:
    clean = np.concatenate([p.clean for p in parts if len(p.clean)])[:, released]
    noisy = np.concatenate([p.noisy for p in parts if len(p.clean)])[:, released]
    return mean_utility(clean, noisy)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("recording")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--epsilons", type=float, nargs="+", default=[10.0, 24.96, 200.0])
    ap.add_argument("--chunk-length", type=int, default=32)
    args = ap.parse_args(argv)
    recs = feature_signals([(read_recording(args.recording), "P0", "-")])
    n = args.chunk_length
    print(f"{args.recording}: {len(recs[0].features)} feature steps, DCFPA n = {n}, {args.seeds} paired seeds\n")
    print("| ε | default's allocation | released: new | released: old | 26 task features: new | old |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        old_path = Path(folder) / "task-every-epsilon.json"
        old_path.write_text(json.dumps(weights_document(weights_profile("task"), name="task-every-epsilon")))
        old = replace(SessionConfig(), weights=str(old_path))
        for e in args.epsilons:
            new_cfg = grid_config(SessionConfig(), "dcfpa", e, n)
            got: dict[str, list[float]] = {"new": [], "old": [], "new26": [], "old26": []}
            for j in range(args.seeds):
                mine = sanitize(recs, "dcfpa", e, n, j, SessionConfig())
                theirs = sanitize(recs, "dcfpa", e, n, j, old)
                got["new"].append(_utility(mine, new_cfg.bounds_profile().released))
                got["old"].append(_utility(theirs, TASK))
                got["new26"].append(_utility(mine, TASK))
                got["old26"].append(_utility(theirs, TASK))
            cells = [f"{np.mean(v):.3g} ± {np.std(v, ddof=1) / np.sqrt(len(v)):.2g}" for v in got.values()]
            name = new_cfg.mechanism_instance().describe()["weights"]
            print(f"| {e:g} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
