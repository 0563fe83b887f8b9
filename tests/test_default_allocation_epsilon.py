"""The shipped default allocation concentrates as ε falls (issue #36 item 2): at a low ε a chunk
spends it funds fewer features than at a high ε; at a high ε (from the ceiling up at least) it is
today's ``task`` allocation bit for bit; the ledger names the allocation at the ε used; and the name rebuilds the
split (post-processing reads it back)."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from streamdp.cli.format import describe_epsilon
from streamdp.config import DEFAULT_EPSILON, DEFAULT_EPSILON_CEILING, SessionConfig
from streamdp.errors import InputError
from streamdp.postprocess import PostProcessor
from streamdp.privacy.bounds import default_profile, weights_profile
from streamdp.privacy.shipped_weights import funded_count, is_shipped, resolve_weights
from streamdp.privacy.weights_file import weights_document
from streamdp.schema import FEATURE_NAMES

#: today's shipped task allocation: 26 features of weight 1 (streamdp/data/weights_task.json)
TASK = np.array([weights_profile("task")[n] for n in FEATURE_NAMES])


def _funded(config: SessionConfig) -> int:
    return int(config.bounds_profile().released.sum())


def test_the_default_funds_fewer_features_at_a_low_epsilon_than_at_a_high_one():
    counts = [_funded(SessionConfig(epsilon=e)) for e in (1.0, DEFAULT_EPSILON, 24.96, 60.0, 150.0, 200.0, 2496.0)]
    assert counts == sorted(counts)  # never more features at a lower ε
    assert counts[1] < counts[-1] == int((TASK > 0).sum())
    assert _funded(SessionConfig()) == _funded(SessionConfig(epsilon=DEFAULT_EPSILON)) < 26


def test_the_features_funded_at_a_low_epsilon_are_among_those_funded_at_a_higher_one():
    low, mid = SessionConfig(epsilon=10.0).bounds_profile(), SessionConfig(epsilon=150.0).bounds_profile()
    assert low.released.sum() < mid.released.sum()
    assert np.all(mid.released[low.released]) and np.all(TASK[mid.released] > 0)
    # an equal split among the funded: each gets the same share of the chunk's ε
    per = SessionConfig(epsilon=150.0).mechanism_instance().describe()["epsilon_per_feature"]
    assert per == pytest.approx(150.0 / mid.released.sum())


@pytest.mark.parametrize("epsilon", [DEFAULT_EPSILON_CEILING, 500.0, 2496.0])
def test_from_the_ceiling_up_the_allocation_is_todays_task_allocation_bit_for_bit(epsilon):
    today = default_profile().with_weights(weights_profile("task"), "task")
    mine = SessionConfig(epsilon=epsilon).bounds_profile()
    assert mine.weights_name == "task"
    assert mine.feature_weights.tobytes() == today.feature_weights.tobytes()
    assert mine.digest() == today.digest() and mine.weights_digest() == today.weights_digest()
    described = SessionConfig(epsilon=epsilon).mechanism_instance().describe()
    assert described["weights"] == "task" and len(described["dropped_features"]) == 26


def test_no_ceiling_and_a_large_epsilon_is_todays_task_allocation_too():
    mine = SessionConfig(epsilon=1000.0, epsilon_ceiling=None).bounds_profile()
    assert mine.weights_name == "task" and np.array_equal(mine.feature_weights, TASK)


def test_the_epsilon_resolved_is_the_one_spent_after_the_ceiling():
    # asked 2496, ceiling 20: spends 20, and the allocation is the one for 20
    spent = SessionConfig(epsilon=2496.0, epsilon_ceiling=20.0)
    assert spent.bounds_profile().weights_name == resolve_weights("task", 20.0)[0] != "task"


def test_epsilon_per_feature_funds_every_feature_of_the_task_allocation():
    profile = SessionConfig(epsilon_per_feature=0.48).bounds_profile()
    assert profile.weights_name == "task" and np.array_equal(profile.feature_weights, TASK)


def test_the_ledger_names_the_allocation_at_the_epsilon_used():
    described = SessionConfig(epsilon=10.0).mechanism_instance().describe()
    k = funded_count("task", 10.0)
    assert k is not None and described["weights"] == f"task@k={k}"
    assert f"allocation task@k={k} for ε 10" in describe_epsilon(described)
    # at the ceiling the ledger says "task", as it always has
    assert "allocation" not in describe_epsilon(SessionConfig(epsilon=200.0).mechanism_instance().describe())


def test_the_name_rebuilds_the_split_and_post_processing_reads_it_back():
    config = SessionConfig(epsilon=10.0, chunk_length=8)
    described = config.mechanism_instance().describe()
    rebuilt = default_profile(described["weights"])
    assert rebuilt.digest() == config.bounds_profile().digest()
    assert is_shipped(described["weights"])
    # a post-processor given only the ledger finds the bounds from the name
    PostProcessor(ledger={**described, "bounds_digest": rebuilt.digest()})


def test_equal_weights_do_not_depend_on_epsilon():
    for e in (1.0, 10.0, 200.0):
        assert SessionConfig(epsilon=e, weights="equal").bounds_profile().released.all()


@pytest.mark.parametrize("name", ["task@k=0", "task@k=26", "task@k=x", "equal@k=1", "pilot"])
def test_a_name_that_is_no_shipped_split_is_refused(name):
    assert not is_shipped(name)
    with pytest.raises(ValueError, match="weights must be one of"):
        weights_profile(name)


def test_a_weights_file_named_like_a_shipped_split_is_refused(tmp_path):
    path = tmp_path / "w.json"
    path.write_text(json.dumps(weights_document({"fixation_rate": 1.0}, name="task@k=1")))
    with pytest.raises(InputError, match="shipped allocation"):
        SessionConfig(weights=str(path))


def test_a_weights_file_fitted_for_another_epsilon_still_warns(tmp_path, caplog):
    doc = weights_document({"fixation_rate": 1.0, "blink_rate": 1.0}, name="pilot", fitted={"epsilon": 24.96})
    path = tmp_path / "pilot.json"
    path.write_text(json.dumps(doc))
    config = SessionConfig(weights=str(path), epsilon=10.0)
    with caplog.at_level(logging.WARNING):
        described = config.mechanism_instance().describe()
    assert described["weights"] == "pilot"  # a file's weights are its own at every ε
    assert any("fitted for ε 24.96" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(("epsilon", "error"), [(0.0, ValueError), (-1.0, ValueError), (True, TypeError),
                                               ("10", TypeError)])
def test_funded_count_refuses_an_epsilon_that_is_not_a_positive_number(epsilon, error):
    with pytest.raises(error, match=f"epsilon must be .*got {epsilon!r}"):
        funded_count("task", epsilon)


def test_an_allocation_that_is_not_shipped_is_refused_by_name():
    with pytest.raises(ValueError, match="weights must be one of equal, task, got 'pilot'"):
        resolve_weights("pilot", 10.0)


def test_the_shipped_file_orders_its_funded_features_and_counts_them_by_epsilon():
    from importlib.resources import files

    doc = json.loads(files("streamdp").joinpath("data/weights_task.json").read_text(encoding="utf-8"))
    funded = sorted(n for n, w in doc["weights"].items() if w > 0)
    assert sorted(doc["order"]) == funded and len(set(doc["order"])) == len(funded)
    table = doc["k_by_epsilon"]
    assert table[0]["from"] == 0.0 and [r["from"] for r in table] == sorted(r["from"] for r in table)
    assert [r["k"] for r in table] == sorted(r["k"] for r in table)  # never more features at a lower ε
    assert table[-1]["k"] == len(funded) and table[-1]["from"] <= DEFAULT_EPSILON_CEILING
