"""Mechanism speed (issue: one 64 × 52 DCFPA chunk with attack-resistant noise ≤ 200 µs) and the
cost of attack-resistant noise against numpy's plain Laplace on the same vector (ratio in one
run); against diffprivlib and OpenDP when the optional ``bench`` extra is installed."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.privacy import dcfpa, default_profile, secure_generator
from streamdp.privacy.noise import lattice_laplace

N_VALUES = 64 * 52
GROUP = "noise: attack-resistant lattice Laplace / numpy Generator.laplace"


@pytest.fixture(scope="module")
def chunk():
    b = default_profile()
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.uniform(-1, 1, (64, 52)) * b.step_bound * 0.5, axis=0)
    return np.clip((b.lo + b.hi) / 2 + walk, b.lo, b.hi)


def test_dcfpa_chunk_64x52(benchmark, chunk):
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=64)
    rng = secure_generator(1)
    benchmark.extra_info["target"] = "(target <= 200 µs)"
    out = benchmark(mech.privatize, chunk, rng)
    assert out.values.shape == (64, 52)


def test_dcfpa_chunk_64x52_private_k(benchmark, chunk):
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=64, k="private")
    rng = secure_generator(1)
    out = benchmark(mech.privatize, chunk, rng)
    assert out.values.shape == (64, 52)


def test_noise_lattice_laplace(benchmark):
    benchmark.group = GROUP
    benchmark.extra_info.update(role="candidate", target="(slowdown we pay for attack resistance)")
    rng = secure_generator(2)
    x = np.zeros(N_VALUES)
    out = benchmark(lattice_laplace, rng, x, 1.0)
    assert out.shape == (N_VALUES,)


def test_noise_numpy_laplace(benchmark):
    benchmark.group = GROUP
    benchmark.extra_info["role"] = "baseline"
    rng = np.random.default_rng(2)
    x = np.zeros(N_VALUES)
    out = benchmark(lambda: x + rng.laplace(0.0, 1.0, N_VALUES))
    assert out.shape == (N_VALUES,)


def test_noise_diffprivlib(benchmark):
    mechanisms = pytest.importorskip("diffprivlib.mechanisms", exc_type=ImportError)  # fails on new sklearn
    benchmark.group = GROUP + " (diffprivlib, per value ×" + str(N_VALUES) + ")"
    mech = mechanisms.Laplace(epsilon=1.0, sensitivity=1.0)
    benchmark(lambda: [mech.randomise(0.0) for _ in range(N_VALUES)])


def test_noise_opendp(benchmark):
    dp = pytest.importorskip("opendp.prelude")
    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.l1_distance(T=float)
    meas = space >> dp.m.then_laplace(scale=1.0)
    benchmark.group = GROUP + " (OpenDP)"
    benchmark(meas, [0.0] * N_VALUES)
