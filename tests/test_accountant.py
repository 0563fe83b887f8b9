from __future__ import annotations

import pytest

from streamdp import BudgetExhausted
from streamdp.privacy.accountant import Accountant, PrivacyUnit
from streamdp.privacy.reach import raw_gaze_reach


def _acc(unit, eps_chunk=2.0):
    return Accountant(eps_chunk, unit, {"mechanism": "dcfpa"}, "abc", raw_gaze_chunks=2)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        pytest.param(
            {"kind": "user"}, ValueError, "unit must be one of chunk, w-event, session, got 'user'", id="kind"
        ),
        pytest.param({"kind": "w-event", "budget": 5.0}, TypeError, "w must be an int", id="w-missing"),
        pytest.param({"kind": "w-event", "w": 0, "budget": 5.0}, ValueError, "w must be ≥ 1, got 0", id="w-zero"),
        pytest.param(
            {"kind": "session"}, TypeError, "budget must be a number for the session unit", id="budget-missing"
        ),
        pytest.param(
            {"kind": "session", "budget": -1.0},
            ValueError,
            "budget must be finite and > 0, got -1.0",
            id="budget-negative",
        ),
        pytest.param({"kind": "session", "budget": float("nan")}, ValueError, "budget must be finite", id="budget-nan"),
    ],
)
def test_bad_units_are_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        PrivacyUnit(**kwargs)


def test_chunk_unit_composes_in_parallel_and_states_the_raw_gaze_guarantee():
    acc = _acc(PrivacyUnit())
    entries = [acc.charge() for _ in range(5)]
    assert [e["chunk_index"] for e in entries] == [0, 1, 2, 3, 4]
    assert entries[-1]["epsilon_spent"] == 10.0  # informational: sequential sum so far
    assert entries[-1]["guarantee"].startswith("each chunk: ε = 2")
    assert entries[-1]["raw_gaze_epsilon"] == 4.0
    assert entries[0]["bounds_digest"] == "abc" and entries[0]["unit"] == "chunk"


def test_session_budget_stops_releases_and_says_so():
    acc = _acc(PrivacyUnit("session", budget=5.0))
    acc.charge()
    acc.charge()
    used_up = "session budget ε = 5 is used up: ε 4 spent by 2 chunks leaves 1, less than the 2"
    with pytest.raises(BudgetExhausted, match=used_up):
        acc.charge()
    assert acc.released == 2 and acc.spent == 4.0


def test_w_event_budget_is_checked_at_construction_and_reported():
    with pytest.raises(ValueError, match=r"w-event budget 5\.0 is below w·ε_chunk = 3·2 = 6"):
        _acc(PrivacyUnit("w-event", w=3, budget=5.0))
    acc = _acc(PrivacyUnit("w-event", w=3, budget=6.0))
    entries = [acc.charge() for _ in range(5)]
    assert [e["epsilon_w"] for e in entries] == [2.0, 4.0, 6.0, 6.0, 6.0]


def test_chunks_one_gaze_sample_reaches_under_the_defaults():
    def chunks(step: float, n: int) -> int:
        return raw_gaze_reach(window=30.0, step=step, chunk_length=n, max_event_duration=8.0).chunks_per_sample

    assert (chunks(0.5, 32), chunks(0.5, 64), chunks(0.5, 128)) == (3, 2, 2)


@pytest.mark.parametrize(
    "kind, extra, message",
    [
        ("chunk", {"budget": 10.0}, "budget applies to the w-event and session units"),
        ("chunk", {"w": 3}, "w applies to the w-event unit"),
        ("session", {"budget": 10.0, "w": 3}, "w applies to the w-event unit"),
    ],
    ids=["budget-with-chunk", "w-with-chunk", "w-with-session"],
)
def test_a_budget_or_w_the_unit_does_not_use_is_refused(kind, extra, message):
    with pytest.raises(ValueError, match=message):
        PrivacyUnit(kind, **extra)
