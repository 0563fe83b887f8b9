"""The noise is as large as the docstrings claim: tests that fail if a factor (√n, √k, n) is lost."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from streamdp.privacy import OFFLINE_MECHANISMS, cfpa, dcfpa, default_profile, make_mechanism, secure_generator
from streamdp.privacy.noise import discrete_gaussian, discrete_laplace, lattice_laplace, lattice_step

B = default_profile()


def test_discrete_laplace_has_the_two_sided_geometric_law():
    t = 3.0
    z = discrete_laplace(secure_generator(1), t, 200_000)
    q = math.exp(-1 / t)
    values = np.arange(-6, 7)
    expected = (1 - q) / (1 + q) * q ** np.abs(values)
    observed = np.array([(z == v).mean() for v in values])
    np.testing.assert_allclose(observed, expected, atol=4e-3)
    np.testing.assert_allclose(z.var(), 2 * q / (1 - q) ** 2, rtol=0.03)


def test_discrete_gaussian_variance():
    z = discrete_gaussian(secure_generator(2), 7.5, 100_000)
    assert abs(z.mean()) < 0.1
    np.testing.assert_allclose(z.std(), 7.5, rtol=0.02)


def test_lattice_output_lies_on_the_lattice_whatever_the_input():
    gamma = lattice_step(2.0)
    rng = secure_generator(3)
    x = np.array([0.1, 1 / 3, math.pi, 1e-17, -7.000000000000001])
    out = lattice_laplace(rng, np.repeat(x[None], 1000, axis=0), 2.0)
    k = out / gamma
    assert np.array_equal(k, np.rint(k))  # every output is an exact multiple of γ


def test_lattice_laplace_scale_matches_continuous_laplace():
    out = lattice_laplace(secure_generator(4), np.zeros(200_000), 5.0)
    # Laplace(b): E|X| = b, Var = 2b²; KS against the continuous law on the lattice this fine
    assert abs(np.abs(out).mean() - 5.0) < 0.05
    assert stats.kstest(out, stats.laplace(scale=5.0).cdf).pvalue > 1e-3


# ε is the total of a chunk, split equally over the 52 features of the default profile: the
# formulas below divide by ε_f = ε/52 themselves, so a mechanism that took ε as per-feature (52×
# too little noise) fails them
EPS_TOTAL = 52.0
EPS_F = EPS_TOTAL / 52
SHARE = 0.5  # the level-keeping DCFPA's level share


def _coefficient_noise(m, rng, runs=3000):
    """Empirical std of the noise on the released numbers at a flat chunk of the middle."""
    x = np.tile((B.lo + B.hi) / 2, (m.chunk_length, 1))
    xh, _ = m._prepare(x)
    clean = m.coefficients(m.noiseless(xh))
    noisy = np.array([m.coefficients(m.privatize(x, rng).values) for _ in range(runs)])
    return (noisy - clean).std(axis=0)  # (rows, F)


def _bozkir_delta2(n):
    return np.sqrt(B.width**2 + (n - 1) * (2 * B.step_bound) ** 2)


def _level_then(coefficient_scale, rows):
    """The level-keeping DCFPA's released rows: the level (range / its share of ε_f), then the
    coefficients of the differences at the rest of ε_f."""
    level = B.width / (SHARE * EPS_F)
    return np.vstack([level, np.tile(coefficient_scale / ((1 - SHARE) * EPS_F), (rows, 1))])


@pytest.mark.parametrize(
    ("factory", "claimed"),
    [
        pytest.param(
            lambda: make_mechanism("dcfpa-bozkir", epsilon=EPS_TOTAL, bounds=B, chunk_length=32, k=3),
            lambda: math.sqrt(32) * math.sqrt(3) * _bozkir_delta2(32) / EPS_F,
            id="dcfpa-bozkir-dft",
        ),
        pytest.param(
            lambda: make_mechanism(
                "dcfpa-bozkir", epsilon=EPS_TOTAL, bounds=B, chunk_length=32, transform="dct", k=3
            ),
            lambda: math.sqrt(3) * _bozkir_delta2(32) / EPS_F,
            id="dcfpa-bozkir-dct",
        ),
        pytest.param(
            lambda: dcfpa(epsilon=EPS_TOTAL, bounds=B, chunk_length=32, k=3, sensitivity="bound", level_share=SHARE),
            # the differences [0, d₂ … dₙ]: the first entry never moves
            lambda: _level_then(math.sqrt(32) * math.sqrt(3) * np.sqrt(31 * (2 * B.step_bound) ** 2), 5),
            id="dcfpa-level-dft",
        ),
        pytest.param(
            lambda: dcfpa(
                epsilon=EPS_TOTAL,
                bounds=B,
                chunk_length=32,
                transform="dct",
                k=3,
                sensitivity="bound",
                level_share=SHARE,
            ),
            lambda: _level_then(math.sqrt(3) * np.sqrt(31 * (2 * B.step_bound) ** 2), 3),
            id="dcfpa-level-dct",
        ),
        pytest.param(
            lambda: cfpa(epsilon=EPS_TOTAL, bounds=B, chunk_length=32, transform="dft", k=2),
            lambda: math.sqrt(32) * math.sqrt(2) * math.sqrt(32) * B.width / EPS_F,
            id="cfpa-dft",
        ),
        pytest.param(
            lambda: cfpa(epsilon=EPS_TOTAL, bounds=B, chunk_length=32, transform="dct", k=2),
            lambda: math.sqrt(2) * math.sqrt(32) * B.width / EPS_F,
            id="cfpa-dct",
        ),
    ],
)
def test_coefficient_noise_has_the_claimed_laplace_scale(factory, claimed):
    m = factory()
    std = _coefficient_noise(m, secure_generator(9))
    lam = claimed()  # computed here from the formula, independently of the mechanism's code
    ratio = std / np.broadcast_to(math.sqrt(2) * lam, std.shape)
    # each released number carries Laplace(λ) noise, std √2·λ: every one within 6 standard errors
    # (2 % each over 3000 runs), and their mean over the 52 features of a row within 1.5 % (5 SE)
    np.testing.assert_allclose(ratio, 1.0, rtol=0.12)
    np.testing.assert_allclose(ratio.mean(axis=1), 1.0, rtol=0.015)


# LPA: every value moves by the range, n of them. Steil: n/w drawn values, at the exact scale Δu/ε_f
# (the paper's 2Δu/ε is ε/2-DP: twice the noise needed)
@pytest.mark.parametrize(("name", "factor"), [("lpa", lambda n, w: n), ("steil", lambda n, w: n / w)])
def test_value_noise_of_lpa_and_steil(name, factor):
    m = make_mechanism(name, epsilon=104.0, bounds=B, chunk_length=32)
    rng = secure_generator(11)
    x = np.tile((B.lo + B.hi) / 2, (32, 1))
    vals = np.array([m.privatize(x, rng).values for _ in range(1500)])
    w = getattr(m, "window", 1)
    noise = (vals - x)[:, ::w, :].reshape(-1, 52)
    np.testing.assert_allclose(noise.std(axis=0), math.sqrt(2) * factor(32, w) * B.width / (104.0 / 52), rtol=0.08)


# Pinned outputs: a refactoring of a mechanism's code must not change what a seed gives. What is
# exact is compared exactly: the chosen k (integers only decide it, streamdp.privacy.selection) and
# the clipped fraction (a count). The values are floats: the matrix products `W @ x̂` and `R @ noisy`
# go through BLAS, whose kernels (chosen by the CPU: Haswell, Sandybridge, ...) round differently,
# so they are compared with rtol = 1e-12 and atol = 1e-12 × the feature's range (the lattice noise
# itself is integer-exact: tests/test_exact_samplers.py pins its draws). CI runs this module again
# under another OpenBLAS kernel and numpy's baseline SIMD (.ci/run). Input: a random walk that
# leaves the bounds (so values and differences are clipped), seed 42 for the noise, ε = 52 per
# chunk (1 per feature). Re-pin on purpose only: `python -m tests.test_noise --repin`.
PINNED_FILE = Path(__file__).parent / "data" / "pinned_mechanism_outputs.npz"
RTOL = 1e-12


def _walk(n, seed=3):
    rng = np.random.default_rng(seed)
    x = (B.lo + B.hi) / 2 + np.cumsum(rng.uniform(-1, 1, (n, 52)) * B.step_bound * 1.5, axis=0)
    x[2, :5] = B.hi[:5] + 1.0
    return x


PINNED_CHUNK_CASES = {
    "lpa-n32": ("lpa", dict(chunk_length=32)),
    "lpa-n64-eps15.6": ("lpa", dict(epsilon=15.6, chunk_length=64)),
    "lpa-per-feature-0.3": (
        "lpa",
        dict(epsilon=None, epsilon_per_feature=0.3, chunk_length=64),
    ),
    "steil-n32-w8": ("steil", dict(chunk_length=32)),
    "steil-n64-w4": ("steil", dict(chunk_length=64, window=4)),
    "cfpa-dft-default-k": ("cfpa", dict(chunk_length=32)),
    "cfpa-dft-k3": ("cfpa", dict(chunk_length=32, k=3)),
    "cfpa-dct-k5": ("cfpa", dict(chunk_length=32, transform='dct', k=5)),
    "cfpa-dft-tight-k2": ("cfpa", dict(chunk_length=32, k=2, sensitivity='tight')),
    "cfpa-dft-reachable-k2": ("cfpa", dict(chunk_length=32, k=2, sensitivity='reachable')),
    "cfpa-dct-private": ("cfpa", dict(chunk_length=32, transform='dct', k='private')),
    "dcfpa-dft-default": ("dcfpa", dict(chunk_length=64)),
    "dcfpa-dft-k2": ("dcfpa", dict(chunk_length=32, k=2)),
    "dcfpa-dct-k3": ("dcfpa", dict(chunk_length=32, transform='dct', k=3)),
    "dcfpa-level-share0.3": ("dcfpa", dict(chunk_length=32, level_share=0.3)),
    "dcfpa-dft-bound-k2": ("dcfpa", dict(chunk_length=64, k=2, sensitivity='bound')),
    "dcfpa-dct-tight-k3": (
        "dcfpa",
        dict(chunk_length=32, transform='dct', k=3, sensitivity='tight'),
    ),
    "dcfpa-dft-tight-upper-k16": (
        "dcfpa",
        dict(chunk_length=64, k=16, sensitivity='tight'),
    ),
    "dcfpa-dft-private": ("dcfpa", dict(chunk_length=32, k='private')),
    "dcfpa-dft-private-share0.3": (
        "dcfpa",
        dict(epsilon=104.0, chunk_length=32, k='private', k_epsilon_share=0.3),
    ),
    "dcfpa-dct-private-tight": (
        "dcfpa",
        dict(chunk_length=16, transform='dct', k='private', sensitivity='tight'),
    ),
    "dcfpa-bozkir-dft-default-k": ("dcfpa-bozkir", dict(chunk_length=64)),
    "dcfpa-bozkir-dft-k2": ("dcfpa-bozkir", dict(chunk_length=32, k=2)),
    "dcfpa-bozkir-dct-tight-k3": (
        "dcfpa-bozkir",
        dict(chunk_length=32, transform='dct', k=3, sensitivity='tight'),
    ),
    "dcfpa-bozkir-reachable": (
        "dcfpa-bozkir",
        dict(chunk_length=32, sensitivity='reachable'),
    ),
    "dcfpa-bozkir-private": ("dcfpa-bozkir", dict(chunk_length=32, k='private')),
}

WHOLE_SIGNAL_CASES = {
    "fpa-dft-k20": {},
    "fpa-dct-k7": {"transform": "dct", "k": 7},
    "fpa-dft-k200-capped": {"k": 200},
}


def _chunk_mechanism(case, scale=1.0):
    name, params = PINNED_CHUNK_CASES[case]
    args = {"epsilon": 52.0, "bounds": B, **params}
    m = make_mechanism(name, **args)
    if scale == 1.0:
        return m

    class Scaled(type(m)):  # a broken variant: the coefficients' noise at `scale` × its scale
        def __init__(self, **kw):
            super().__init__(**kw)
            self._set(noise_scales=self.noise_scales * scale)

    return Scaled(**args)


def _pinned_run(case, scale=1.0):
    if case in WHOLE_SIGNAL_CASES:
        x = np.concatenate([_walk(64, 1), _walk(64, 2), _walk(62, 4)])
        return OFFLINE_MECHANISMS["fpa"](epsilon=1.0, bounds=B, **WHOLE_SIGNAL_CASES[case]).privatize(
            x, secure_generator(42)
        )
    m = _chunk_mechanism(case, scale)
    return m.privatize(_walk(m.chunk_length), secure_generator(42))


def _mismatch(out, pinned, case):
    """What differs from the pinned output beyond its stated tolerance ("" if nothing)."""
    if not np.array_equal(np.asarray(out.k, dtype=np.int64), pinned[f"{case}/k"]):
        return f"k {np.asarray(out.k).tolist()} != pinned {pinned[f'{case}/k'].tolist()}"
    if float(out.clipped_fraction) != float(pinned[f"{case}/clipped"]):
        return f"clipped fraction {out.clipped_fraction} != pinned {float(pinned[f'{case}/clipped'])}"
    want = pinned[f"{case}/values"]
    got = np.asarray(out.values, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape} != pinned {want.shape}"
    tol = RTOL * np.abs(want) + RTOL * B.width
    over = np.abs(got - want) > tol
    if over.any():
        worst = float(np.max(np.abs(got - want) / (np.abs(want) + B.width)))
        return f"{int(over.sum())} values beyond rtol {RTOL} (worst relative difference {worst:.3g})"
    return ""


@pytest.fixture(scope="module")
def pinned():
    with np.load(PINNED_FILE) as data:
        return {key: data[key] for key in data.files}


ALL_PINNED = [*PINNED_CHUNK_CASES, *WHOLE_SIGNAL_CASES]


@pytest.mark.parametrize("case", ALL_PINNED)
def test_mechanisms_reproduce_their_pinned_outputs(case, pinned):
    assert _mismatch(_pinned_run(case), pinned, case) == ""


@pytest.mark.parametrize("case", ["dcfpa-dft-default", "cfpa-dct-private", "dcfpa-bozkir-dft-k2"])
def test_a_halved_noise_scale_fails_the_pinned_outputs(case, pinned):
    """The tolerance is far tighter than any change of the noise: half the scale is caught."""
    assert _mismatch(_pinned_run(case, scale=0.5), pinned, case) != ""


def repin():
    """Write the pinned outputs anew from this machine (only on purpose: say why in the commit)."""
    arrays = {}
    for case in ALL_PINNED:
        out = _pinned_run(case)
        arrays[f"{case}/values"] = np.asarray(out.values, dtype=np.float64)
        arrays[f"{case}/clipped"] = np.float64(out.clipped_fraction)
        arrays[f"{case}/k"] = np.asarray(out.k, dtype=np.int64)
    PINNED_FILE.parent.mkdir(exist_ok=True)
    np.savez_compressed(PINNED_FILE, **arrays)
    print(f"wrote {len(ALL_PINNED)} pinned outputs to {PINNED_FILE}")


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--repin"]:
        sys.exit("usage: python -m tests.test_noise --repin")
    repin()
