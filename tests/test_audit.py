"""Empirical audit: the audited lower bound stays at or below the claimed ε, and the same audit
catches a deliberately broken variant of every mechanism and transform."""

from __future__ import annotations

import math

import numpy as np
import pytest

from streamdp.privacy import cfpa, dcfpa, default_profile, make_mechanism
from streamdp.privacy.audit import audit, clopper_pearson_upper

ONE = default_profile().select([0])  # ε is per feature: audit one feature at a time


def _broken(m, attr, factor):
    object.__setattr__(m, attr, getattr(m, attr) / factor)  # bypass immutability on purpose
    return m


CASES = [
    pytest.param(
        lambda: make_mechanism("lpa", epsilon=1.0, bounds=ONE, chunk_length=32), "noise_scale", 32, id="lpa-without-n"
    ),
    pytest.param(
        lambda: make_mechanism("steil", epsilon=1.0, bounds=ONE, chunk_length=32, window=8),
        "noise_scale",
        8,
        id="steil-without-2n/w",
    ),
    pytest.param(
        lambda: cfpa(epsilon=1.0, bounds=ONE, chunk_length=32, transform="dft", k=2),
        "noise_scales",
        math.sqrt(32),
        id="cfpa-dft-without-sqrt-n",
    ),
    pytest.param(
        lambda: cfpa(epsilon=1.0, bounds=ONE, chunk_length=32, transform="dct", k=2, sensitivity="tight"),
        "noise_scales",
        4,
        id="cfpa-dct-quarter-noise",
    ),
    pytest.param(
        lambda: dcfpa(epsilon=1.0, bounds=ONE, chunk_length=32, transform="dft", k=2),
        "noise_scales",
        math.sqrt(32),
        id="dcfpa-dft-without-sqrt-n",
    ),
    pytest.param(
        lambda: dcfpa(epsilon=1.0, bounds=ONE, chunk_length=32, transform="dft", k=2, sensitivity="tight"),
        "noise_scales",
        4,
        id="dcfpa-dft-tight-quarter-noise",
    ),
    pytest.param(
        lambda: dcfpa(epsilon=1.0, bounds=ONE, chunk_length=32, transform="dct", k=2, sensitivity="tight"),
        "noise_scales",
        4,
        id="dcfpa-dct-quarter-noise",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("factory", "attr", "factor"), CASES)
def test_audit_respects_the_claim_and_catches_the_broken_variant(factory, attr, factor):
    ok = audit(factory(), runs=20000, seed=0)
    assert ok.epsilon_lower_bound <= ok.epsilon_claimed
    broken = audit(_broken(factory(), attr, factor), runs=20000, seed=1)
    assert broken.epsilon_lower_bound > 1.5 * broken.epsilon_claimed


def test_audit_refuses_multi_feature_and_private_k_mechanisms():
    with pytest.raises(ValueError, match="one-feature"):
        audit(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=32))
    with pytest.raises(ValueError, match="fixed k"):
        audit(dcfpa(epsilon=1.0, bounds=ONE, chunk_length=32, k="private"))


def test_clopper_pearson_upper_bound():
    assert clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert clopper_pearson_upper(100, 100, 0.05) == 1.0
    assert 0.5 < clopper_pearson_upper(50, 100, 0.05) < 0.6
    assert np.isfinite(clopper_pearson_upper(3, 10, 0.01))
