"""DCFPA beats LPA and FPA at equal ε on real and synthetic data (Bozkir et al.'s utility).
The full table is in docs/privacy.md."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp import FeaturePipeline
from streamdp.privacy import WholeSignalFPA, default_profile, make_mechanism, secure_generator
from streamdp.privacy.utility import mean_utility, nmse, utility
from streamdp.readers import read_recording
from streamdp.synthetic import generate

from .conftest import shared

B = default_profile()


def test_nmse_and_utility_follow_equations_4_to_6():
    x = np.array([[1.0, 0.0], [3.0, 0.0]])
    y = np.array([[2.0, 1.0], [2.0, 1.0]])
    np.testing.assert_allclose(nmse(x, y), [0.25, np.nan])  # mean sq. error 1 over means 2·2
    np.testing.assert_allclose(utility(x, y), [4.0, np.nan])
    assert mean_utility(x, y) == 4.0


def _utilities(x, eps, seed=0, repeats=4):
    rng = secure_generator(seed)
    out = {}
    for name in ("lpa", "dcfpa"):
        # the papers' convention: ε per feature (per chunk here, for the whole signal for FPA)
        m = make_mechanism(name, epsilon_per_feature=eps, bounds=B, chunk_length=32)
        n = (len(x) // 32) * 32
        us = []
        for _ in range(repeats):
            y = np.concatenate([m.privatize(x[i : i + 32], rng).values for i in range(0, n, 32)])
            us.append(mean_utility(x[:n], y))
        out[name] = float(np.mean(us))
    f = WholeSignalFPA(epsilon=eps, bounds=B, k=20)
    out["fpa"] = float(np.mean([mean_utility(x, f.privatize(x, rng).values) for _ in range(repeats)]))
    return out


@pytest.mark.parametrize("eps", [1.0, 10.0, 48.0])
def test_dcfpa_beats_lpa_and_fpa_on_synthetic_gaze(eps):
    x = np.concatenate(
        [FeaturePipeline().run(generate(duration=400.0, seed=s, person=s).recording).values for s in range(2)]
    )
    u = _utilities(x, eps)
    assert u["dcfpa"] > u["lpa"] and u["dcfpa"] > u["fpa"]


@pytest.mark.parametrize("eps", [1.0, 10.0, 48.0])
def test_dcfpa_beats_lpa_and_fpa_on_real_gaze(eps):
    x = FeaturePipeline().run(read_recording(shared("cateyes_119hz", "test_data_full.csv"))).values
    u = _utilities(x, eps)
    assert u["dcfpa"] > u["lpa"] and u["dcfpa"] > u["fpa"]
