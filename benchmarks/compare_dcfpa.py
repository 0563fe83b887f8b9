"""Compare the Fourier chunk mechanisms at equal total ε on public synthetic data (no recordings).

Run: ``python benchmarks/compare_dcfpa.py [--seeds 5]``. Prints, per chunk length and total ε per
chunk, the mean over features of the RMSE in units of each feature's standard deviation (lower is
better), and Bozkir et al.'s mean utility (1/NMSE, higher is better), averaged over noise seeds.
The default of :class:`streamdp.privacy.DCFPA` (k per n, level share) was chosen from this table.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable

import numpy as np

from streamdp import FeaturePipeline
from streamdp.offline.evaluate import synthetic_study
from streamdp.privacy import default_profile, secure_generator
from streamdp.privacy.mechanisms import CFPA, DCFPA, DCFPABozkir, Mechanism
from streamdp.privacy.utility import mean_utility

EPS_PER_FEATURE = (0.48, 4.8, 48.0)  # the papers' grid; the total is 52× it


@functools.lru_cache(maxsize=1)
def study_rows() -> list[np.ndarray]:
    return [FeaturePipeline().run(rec).values for rec, _, _ in synthetic_study(people=6, seconds=600.0, seed=0)]


def candidates(eps_total: float, n: int) -> dict[str, Callable[[], Mechanism]]:
    b = default_profile()
    out: dict[str, Callable[[], Mechanism]] = {
        "bozkir dft k=1 bound (old default)": lambda: DCFPABozkir(epsilon=eps_total, bounds=b, chunk_length=n),
        "bozkir dft k=1 reachable": lambda: DCFPABozkir(
            epsilon=eps_total, bounds=b, chunk_length=n, sensitivity="reachable"
        ),
        "cfpa dft k=1 bound": lambda: CFPA(epsilon=eps_total, bounds=b, chunk_length=n),
        "cfpa dct k=2 reachable": lambda: CFPA(
            epsilon=eps_total, bounds=b, chunk_length=n, transform="dct", k=2, sensitivity="reachable"
        ),
    }
    for transform, ks in (("dft", (1, 2)), ("dct", (1, 2, 3))):
        for k in ks:
            for share in (0.5, 0.7, 0.9):
                out[f"dcfpa {transform} k={k} level={share}"] = functools.partial(
                    DCFPA, epsilon=eps_total, bounds=b, chunk_length=n, transform=transform, k=k, level_share=share
                )
    return out


def score(make: Callable[[], Mechanism], n: int, seeds: int) -> tuple[float, float]:
    mech = make()
    rows = study_rows()
    sd = np.concatenate(rows).std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    errs, utils = [], []
    for seed in range(seeds):
        rng = secure_generator(seed)
        clean_all, noisy_all = [], []
        for rec in rows:
            for start in range(0, len(rec) - n + 1, n):
                clean = rec[start : start + n]
                clean_all.append(clean)
                noisy_all.append(mech.privatize(clean, rng).values)
        clean_a, noisy_a = np.concatenate(clean_all), np.concatenate(noisy_all)
        rmse = np.sqrt(np.mean((clean_a - noisy_a) ** 2, axis=0)) / sd
        errs.append(float(np.mean(rmse)))
        utils.append(mean_utility(clean_a, noisy_a))
    return float(np.mean(errs)), float(np.mean(utils))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, nargs="*", default=[32, 64, 128])
    args = ap.parse_args(argv)
    print("| n | total ε / chunk | mechanism | RMSE (feature SD) | utility 1/NMSE |")
    print("|---|---|---|---|---|")
    for n in args.n:
        for eps_f in (1e9, *EPS_PER_FEATURE):
            eps_total = 52 * eps_f
            label = "∞ (no noise)" if eps_f == 1e9 else f"{eps_total:g}"
            seeds = 1 if eps_f == 1e9 else args.seeds
            results = {name: score(make, n, seeds) for name, make in candidates(eps_total, n).items()}
            for name, (err, util) in sorted(results.items(), key=lambda kv: kv[1][0]):
                print(f"| {n} | {label} | {name} | {err:.3f} | {util:.3g} |")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
