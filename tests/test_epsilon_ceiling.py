"""The per-chunk spending ceiling: ε spent ≤ ε allowed, charged as spent, stated in the ledger."""

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import DEFAULT_EPSILON_CEILING, SessionConfig
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate


@pytest.fixture(scope="module")
def recording():
    return generate(duration=80.0, rate=120.0, seed=2).recording


def _releases(recording, **config):
    sink = CollectingSink()
    Session.for_recording(SessionConfig(chunk_length=32, seed=1, **config), recording, sinks=[sink]).run(recording)
    assert len(sink.releases) >= 2
    return sink.releases


@pytest.mark.parametrize(
    ("config", "spent", "asked"),
    [
        pytest.param({"epsilon": 1000.0}, DEFAULT_EPSILON_CEILING, 1000.0, id="above-the-default-ceiling"),
        pytest.param({"epsilon": 150.0}, 150.0, None, id="below-it"),
        pytest.param({"epsilon": 1000.0, "epsilon_ceiling": 400.0}, 400.0, 1000.0, id="a-configured-ceiling"),
        pytest.param({"epsilon": 1000.0, "epsilon_ceiling": None}, 1000.0, None, id="no-ceiling"),
        pytest.param({"epsilon_per_feature": 48.0}, DEFAULT_EPSILON_CEILING, 48.0 * 26, id="per-feature-above-it"),
    ],
)
def test_a_chunk_spends_at_most_the_ceiling_and_the_ledger_charges_what_it_spent(recording, config, spent, asked):
    releases = _releases(recording, **config)
    for i, rel in enumerate(releases, start=1):
        assert rel.ledger["epsilon_chunk"] == rel.ledger["epsilon"] == pytest.approx(spent)
        assert rel.ledger["epsilon_spent"] == pytest.approx(i * spent)
        # what was asked, beside what is spent, only when the ceiling lowered it
        assert rel.ledger.get("epsilon_asked") == (None if asked is None else pytest.approx(asked))
    # the noise follows what is spent, not what was allowed: capped chunks equal an uncapped
    # session at the ceiling's ε, bit for bit
    if "epsilon_per_feature" not in config:
        same = _releases(recording, epsilon=spent, epsilon_ceiling=None)
        for a, b in zip(releases, same, strict=True):
            np.testing.assert_array_equal(a.values, b.values)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        pytest.param(0.0, ValueError, r"epsilon_ceiling must be > 0 \(or None: no ceiling\), got 0.0", id="zero"),
        pytest.param(-5.0, ValueError, r"epsilon_ceiling must be > 0 .*got -5.0", id="negative"),
        pytest.param(float("nan"), ValueError, r"epsilon_ceiling must be finite, got nan", id="nan"),
        pytest.param("200", TypeError, r"epsilon_ceiling must be a number, got '200'", id="text"),
    ],
)
def test_a_bad_ceiling_is_refused_by_name(value, error, match):
    with pytest.raises(error, match=match):
        SessionConfig(epsilon_ceiling=value)


def test_the_command_line_takes_none_for_no_ceiling(capsys):
    assert main(["demo", "--seed", "1", "--seconds", "100", "--epsilon", "1000", "--epsilon-ceiling", "none"]) == 0
    assert "ε 1000 for this whole chunk" in capsys.readouterr().out
    assert main(["demo", "--seed", "1", "--seconds", "100", "--epsilon", "1000"]) == 0
    assert "ε 200 for this whole chunk" in capsys.readouterr().out


def test_what_needs_the_mechanism_without_its_epsilon_is_unaffected_by_the_ceiling():
    """epsilon_asked belongs to the mechanism that spends: the weights' noise model and the
    offline mechanisms take the configuration's other parameters and must not see it."""
    from streamdp.offline.fitted_weights import unit_noise
    from streamdp.offline.grid import offline_mechanism

    capped = SessionConfig(epsilon=40.0, epsilon_ceiling=10.0)
    assert capped.mechanism_instance().describe()["epsilon_asked"] == 40.0
    assert "epsilon_asked" not in capped.mechanism_params()
    np.testing.assert_array_equal(unit_noise(capped)[0], unit_noise(SessionConfig(epsilon_ceiling=None))[0])
    assert offline_mechanism(SessionConfig(epsilon=1000.0), "fpa", 52.0).epsilon == 1.0


def test_a_per_feature_epsilon_whose_total_overflows_is_refused_by_name():
    with pytest.raises(ValueError, match=r"epsilon_per_feature 1e\+307 × 26 released features is not finite"):
        SessionConfig(epsilon_per_feature=1e307).mechanism_instance()
