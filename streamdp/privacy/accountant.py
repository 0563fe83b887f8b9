"""Privacy accounting: what every release costs, under a declared unit of privacy.

ε is per feature per chunk; the F features of a chunk compose sequentially, so one chunk costs
``ε_chunk = F·ε``. The unit of privacy is declared, never implied:

- ``chunk`` (Bozkir et al.'s): neighbouring inputs differ in one chunk. Chunks are disjoint, so
  they compose in parallel and the guarantee stays ``ε_chunk`` however long the session.
- ``w-event``: any ``w`` consecutive chunks together. With the same ε every chunk this is
  ``w·ε_chunk``; the accountant refuses a mechanism whose ``w·ε_chunk`` exceeds the declared
  ``ε_w`` budget.
- ``session`` (user level): all chunks of the session compose sequentially; when the next chunk
  would take the total past the budget nothing more is released (:class:`BudgetExhausted`).

Raw gaze: a window of ``W`` seconds moved every ``s`` seconds makes one gaze sample influence
``⌈W/s⌉`` consecutive steps, which can fall into ``c = ⌈(⌈W/s⌉ - 1)/n⌉ + 1`` chunks of n steps.
Event-level privacy of a single gaze sample (or of any stretch of gaze shorter than a step) is
therefore ``c·ε_chunk`` under the ``chunk`` unit. Every ledger entry states it.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..errors import BudgetExhausted

UNITS = ("chunk", "w-event", "session")


@dataclass(frozen=True)
class PrivacyUnit:
    """The unit of privacy and its budget.

    Raises
    ------
    TypeError, ValueError
        An unknown kind, a missing or non-positive ``w`` (w-event) or ``budget`` (w-event,
        session), named with the value; a ``budget`` or ``w`` the unit does not use (it would be
        ignored, and a user would believe a cap holds).
    """

    kind: str = "chunk"
    w: int | None = None
    budget: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in UNITS:
            raise ValueError(f"unit must be one of {', '.join(UNITS)}, got {self.kind!r}")
        if self.kind == "w-event":
            if isinstance(self.w, bool) or not isinstance(self.w, int):
                raise TypeError(f"w must be an int for the w-event unit, got {self.w!r}")
            if self.w < 1:
                raise ValueError(f"w must be ≥ 1, got {self.w}")
        if self.kind == "chunk" and self.budget is not None:
            raise ValueError("budget applies to the w-event and session units, not to the chunk unit")
        if self.kind != "w-event" and self.w is not None:
            raise ValueError(f"w applies to the w-event unit, not to the {self.kind} unit")
        if self.kind in ("w-event", "session"):
            b = self.budget
            if isinstance(b, bool) or not isinstance(b, (int, float)):
                raise TypeError(f"budget must be a number for the {self.kind} unit, got {b!r}")
            if not (math.isfinite(b) and b > 0):
                raise ValueError(f"budget must be finite and > 0, got {b!r}")


def chunks_touched(window: float, step: float, chunk_length: int) -> int:
    """How many chunks one gaze sample can influence (see the module docstring).

    Examples
    --------
    >>> chunks_touched(30.0, 0.5, 64), chunks_touched(30.0, 0.5, 32)
    (2, 3)
    """
    steps = math.ceil(window / step - 1e-9)
    return math.ceil((steps - 1) / chunk_length) + 1


@dataclass(frozen=True)
class Accountant:
    """Charges each chunk before it is released and writes its ledger entry.

    Its parameters are frozen; what it has spent changes only through :meth:`charge` (and
    :meth:`carry_from`), never by assignment: ``spent`` and ``released`` are read-only.
    """

    epsilon_chunk: float
    unit: PrivacyUnit
    mechanism: dict[str, Any]
    bounds_digest: str
    raw_gaze_chunks: int
    _state: dict[str, Any] = field(default_factory=lambda: {"spent": 0.0, "released": 0}, repr=False)
    _recent: deque[float] = field(default_factory=deque, repr=False)

    @property
    def spent(self) -> float:
        """ε spent so far (sequential composition of every chunk charged)."""
        return float(self._state["spent"])

    @property
    def released(self) -> int:
        """Chunks charged so far."""
        return int(self._state["released"])

    def carry_from(self, other: Accountant) -> None:
        """Take over what ``other`` spent (a session replacing another after a settings change):
        a new configuration never resets a budget."""
        self._state.update(other._state)
        self._recent.clear()
        self._recent.extend(other._recent)

    def __post_init__(self) -> None:
        if self.unit.kind == "w-event":
            assert self.unit.w is not None and self.unit.budget is not None
            need = self.unit.w * self.epsilon_chunk
            if need > self.unit.budget * (1 + 1e-12):
                raise ValueError(
                    f"w-event budget {self.unit.budget} is below w·ε_chunk = {self.unit.w}·{self.epsilon_chunk:g} "
                    f"= {need:g}: lower ε or raise the budget"
                )
        if self.unit.kind == "session" and self.unit.budget is not None and self.epsilon_chunk > self.unit.budget:
            raise ValueError(
                f"session budget {self.unit.budget} is below the cost of one chunk ({self.epsilon_chunk:g})"
            )

    @property
    def exhausted(self) -> bool:
        return (
            self.unit.kind == "session"
            and self.unit.budget is not None
            and self.spent + self.epsilon_chunk > self.unit.budget * (1 + 1e-12)
        )

    def charge(self) -> dict[str, Any]:
        """Record one release and return its ledger entry.

        Raises
        ------
        BudgetExhausted
            Under the session unit, when this chunk would take the total past the budget.
        """
        if self.exhausted:
            raise BudgetExhausted(
                f"session budget ε = {self.unit.budget:g} spent ({self.spent:g} used by {self.released} chunks; "
                f"the next needs {self.epsilon_chunk:g}): nothing more is released"
            )
        self._state["spent"] += self.epsilon_chunk
        self._state["released"] += 1
        entry: dict[str, Any] = {
            **self.mechanism,
            "chunk_index": self.released - 1,
            "epsilon_chunk": self.epsilon_chunk,
            "epsilon_spent": self.spent,
            "unit": self.unit.kind,
            "bounds_digest": self.bounds_digest,
            "raw_gaze_epsilon": self.raw_gaze_chunks * self.epsilon_chunk,
        }
        if self.unit.kind == "w-event":
            self._recent.append(self.epsilon_chunk)
            if len(self._recent) > (self.unit.w or 1):
                self._recent.popleft()
            entry.update(w=self.unit.w, epsilon_w=sum(self._recent), budget=self.unit.budget)
            entry["guarantee"] = f"any {self.unit.w} consecutive chunks: ε ≤ {self.unit.budget:g}"
        elif self.unit.kind == "session":
            assert self.unit.budget is not None
            entry.update(budget=self.unit.budget, budget_left=self.unit.budget - self.spent)
            entry["guarantee"] = f"whole session: ε = {self.spent:g} so far, capped at {self.unit.budget:g}"
        else:
            entry["guarantee"] = f"each chunk: ε = {self.epsilon_chunk:g} (parallel composition across chunks)"
        entry["raw_gaze_guarantee"] = (
            f"one gaze sample influences ≤ {self.raw_gaze_chunks} chunks: "
            f"ε ≤ {self.raw_gaze_chunks * self.epsilon_chunk:g} for it under the chunk unit"
        )
        return entry
