"""Mechanism speed (issue #12: one 64 × 52 DCFPA chunk with the exact samplers and the OS's CSPRNG
≤ 150 µs) and the cost of exact, attack-resistant noise against numpy's plain (float, PCG64)
Laplace on the same number of values (ratio in one run); against diffprivlib and OpenDP when the
optional ``bench`` extra is installed."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.privacy import DCFPA, cfpa, dcfpa, default_profile, secure_generator
from streamdp.privacy.noise import lattice_laplace

N_VALUES = 64 * 52
GROUP = "noise: exact lattice Laplace (OS CSPRNG) / numpy Generator.laplace, 64×52 values"


@pytest.fixture(scope="module")
def chunk():
    b = default_profile()
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.uniform(-1, 1, (64, 52)) * b.step_bound * 0.5, axis=0)
    return np.clip((b.lo + b.hi) / 2 + walk, b.lo, b.hi)


CHUNK_GROUP = "mechanism: one 64×52 DCFPA chunk, exact noise (OS CSPRNG) / numpy Generator.laplace noise"


class FloatLaplaceDCFPA(DCFPA):
    """The same chunk mechanism with numpy's float Laplace (PCG64) instead of the exact lattice
    noise: not private (Mironov's attack, predictable bits), only the baseline of the ratio."""

    def perturb(self, xh, rng):
        t = self._transform
        scale = np.broadcast_to(self._row_scales(self.noise_scale), (self._release.shape[0], xh.shape[1]))
        noisy = self._release @ xh + rng.laplace(0.0, scale)
        return self._output @ noisy, np.full(xh.shape[1], t.k, dtype=np.int64)


def test_dcfpa_chunk_64x52(benchmark, chunk):
    benchmark.group = CHUNK_GROUP
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=64)
    rng = secure_generator()  # the OS's CSPRNG, as releases use it
    benchmark.extra_info.update(role="candidate", target="(target <= 150 µs)")
    out = benchmark(mech.privatize, chunk, rng)
    assert out.values.shape == (64, 52)


def test_dcfpa_chunk_64x52_numpy_laplace(benchmark, chunk):
    benchmark.group = CHUNK_GROUP
    benchmark.extra_info.update(role="baseline", note="float Laplace from PCG64: not private, the ratio's baseline")
    mech = FloatLaplaceDCFPA(epsilon=1.0, bounds=default_profile(), chunk_length=64)
    out = benchmark(mech.privatize, chunk, np.random.default_rng(0))
    assert out.values.shape == (64, 52)


PRIVATE_K_GROUP = "mechanism: one 64×52 DCFPA chunk, k chosen privately: exact selection / float Gumbel argmax"


class FloatGumbelDCFPA(DCFPA):
    """The same chunk mechanism with the exponential mechanism sampled as it was before issue
    #26: Gumbel noise through a float logarithm and an argmax (the law is the same; the choice
    depends on the CPU's SIMD and on float comparisons). Only the baseline of the ratio."""

    def _choose_k(self, v, rng):
        eps_k = self._noise_epsilons * self.k_epsilon_share
        logits = eps_k[None, :] * self._k_utility(v) / (2.0 * self.delta2[None, :])
        return np.asarray(self.k_candidates[np.argmax(logits + rng.gumbel(size=logits.shape), axis=0)])


def test_dcfpa_chunk_64x52_private_k(benchmark, chunk):
    benchmark.group = PRIVATE_K_GROUP
    benchmark.extra_info.update(role="candidate", target="(target <= 2x the float selection)")
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=64, k="private")
    rng = secure_generator()
    out = benchmark(mech.privatize, chunk, rng)
    assert out.values.shape == (64, 52)


def test_dcfpa_chunk_64x52_private_k_float_selection(benchmark, chunk):
    benchmark.group = PRIVATE_K_GROUP
    benchmark.extra_info.update(role="baseline", note="float Gumbel argmax: the selection before issue #26")
    mech = FloatGumbelDCFPA(epsilon=1.0, bounds=default_profile(), chunk_length=64, k="private")
    rng = secure_generator()
    out = benchmark(mech.privatize, chunk, rng)
    assert out.values.shape == (64, 52)


#: two features funded, the rest 0: what an allocation fitted for a small ε ships (issue #36: "with
#: little ε, one or two features released well")
CONCENTRATED = {"fixation_duration_mean": 2.0, "saccade_amplitude_mean": 1.0}


def _allocation_group(mechanism: str) -> str:
    return f"mechanism: one 64×52 {mechanism} chunk at ε 24.96, the shipped task allocation / 2 features funded"


@pytest.mark.parametrize("mechanism", ["dcfpa", "cfpa"])
@pytest.mark.parametrize("role", ["baseline", "candidate"])
def test_chunk_cost_of_a_concentrated_allocation(benchmark, chunk, mechanism, role):
    """A chunk's mechanism cost does not depend on how many features the allocation funds: the
    concentrated allocation is the candidate, the shipped one the baseline, in the same run."""
    benchmark.group = _allocation_group(mechanism)
    task = default_profile("task")
    bounds = task.with_weights(CONCENTRATED, "concentrated") if role == "candidate" else task
    make = dcfpa if mechanism == "dcfpa" else cfpa
    mech = make(epsilon=24.96, bounds=bounds, chunk_length=64)
    benchmark.extra_info.update(role=role, funded=int(bounds.released.sum()))
    if role == "candidate":
        benchmark.extra_info["target"] = "(target: ratio >= 0.9, the chunk's cost unchanged)"
    out = benchmark(mech.privatize, chunk, secure_generator())
    assert out.values.shape == (64, 52)
    # the unfunded features are released as their public constant, the funded ones noised
    if role == "candidate":
        unfunded = ~bounds.released
        assert np.all(out.values[:, unfunded] == out.values[0, unfunded])


def test_noise_lattice_laplace(benchmark):
    benchmark.group = GROUP
    benchmark.extra_info.update(role="candidate", target="(slowdown we pay for exact, attack-resistant noise)")
    rng = secure_generator()
    x = np.zeros(N_VALUES)
    out = benchmark(lattice_laplace, rng, x, 1.0)
    assert out.shape == (N_VALUES,)


def test_noise_lattice_laplace_seeded(benchmark):
    benchmark.group = GROUP
    benchmark.extra_info["role"] = "candidate, seeded PCG64 bits (reproducible, not private)"
    rng = secure_generator(2)
    x = np.zeros(N_VALUES)
    out = benchmark(lattice_laplace, rng, x, 1.0)
    assert out.shape == (N_VALUES,)


def test_noise_lattice_laplace_one_row(benchmark):
    benchmark.group = "noise: one row of 52 values (a DCFPA chunk's coefficients at k = 1)"
    rng = secure_generator()
    x = np.zeros(52)
    out = benchmark(lattice_laplace, rng, x, np.full(52, 54.3))
    assert out.shape == (52,)


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
