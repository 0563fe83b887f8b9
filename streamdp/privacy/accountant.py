"""Privacy accounting: what every release costs, under a declared unit of privacy.

``ε_chunk`` is what one chunk costs in total, all its features together. The unit of privacy is
declared, never implied:

- ``chunk`` (Bozkir et al.'s): neighbouring inputs differ in one chunk. Chunks are disjoint, so
  they compose in parallel and the guarantee stays ``ε_chunk`` however long the session.
- ``w-event``: any ``w`` consecutive chunks together. With the same ε every chunk this is
  ``w·ε_chunk``; the accountant refuses a mechanism whose ``w·ε_chunk`` exceeds the declared
  ``ε_w`` budget, and a chunk that would take the last ``w`` past it.
- ``session`` (user level): all chunks compose sequentially; when the next chunk would take the
  total past the budget nothing more is released (:class:`BudgetExhausted`).

For the ``session`` and ``w-event`` units, a unit with an ``identity`` keeps what that person
spent in a durable ledger on the device (:class:`~streamdp.privacy.ledger_store.LedgerStore`):
the budget survives restarts of the relay, Capture, the plugin and the machine, and every
recording replayed under one identity charges one budget. Each charge is written ahead of its
release, as one record of an append-only chain (each record holds the running total and the hash
of the one before); a ledger whose total went down, that was edited, cut back or deleted while the
ledger folder remembers it is refused, and ``streamdp budget reset`` is the only way to start over.
Without an identity the budget lives in memory and starts again with the process; the ledger says
so.

Raw gaze: one gaze sample reaches the steps whose windows hold the events it is part of; events
are cut at public blocks of ``max_event_duration`` s, so the reach is bounded by the public
configuration (:func:`streamdp.privacy.reach.raw_gaze_reach`: 3 chunks at n = 32, 2 at n = 64 with
the defaults). Event-level privacy of a single gaze sample is ``c·ε_chunk`` under the ``chunk``
unit for those ``c`` chunks. Every ledger entry states it (:mod:`streamdp.privacy.guarantee`).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..errors import BudgetExhausted
from .guarantee import RawGazeReach, raw_gaze_sentence
from .ledger_store import LedgerState, LedgerStore, check_identity

UNITS = ("chunk", "w-event", "session")


@dataclass(frozen=True)
class PrivacyUnit:
    """The unit of privacy and its budget, and for ``session`` and ``w-event`` optionally whose
    budget it is: ``identity`` (a name the user chooses, e.g. ``"alice@headset1"``) keeps the ε
    spent in that person's durable ledger, in ``ledger_dir`` (default: the user's state folder,
    :func:`~streamdp.privacy.ledger_store.default_ledger_dir`).

    Raises
    ------
    TypeError, ValueError
        An unknown kind, a missing or non-positive ``w`` (w-event) or ``budget`` (w-event,
        session), named with the value; a ``budget``, ``w``, ``identity`` or ``ledger_dir`` the
        unit does not use (it would be ignored, and a user would believe a cap holds).

    Examples
    --------
    >>> PrivacyUnit("session", budget=500.0, identity="alice@headset1").durable
    True
    >>> PrivacyUnit("chunk", identity="alice@headset1")
    Traceback (most recent call last):
    ...
    ValueError: identity applies to the session and w-event units (a budget to keep), not to the chunk unit
    """

    kind: str = "chunk"
    w: int | None = None
    budget: float | None = None
    identity: str | None = None
    ledger_dir: str | None = None

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
        if self.identity is not None:
            check_identity(self.identity)
            if self.kind == "chunk":
                raise ValueError(
                    "identity applies to the session and w-event units (a budget to keep), not to the chunk unit"
                )
        if self.ledger_dir is not None:
            if not isinstance(self.ledger_dir, str):
                raise TypeError(f"ledger_dir must be a folder's path (str), got {self.ledger_dir!r}")
            if self.identity is None:
                raise ValueError("ledger_dir applies with an identity (whose ledger it keeps)")

    @property
    def durable(self) -> bool:
        """Whether the budget is kept on the device across restarts (an identity is named)."""
        return self.identity is not None

    def ledger_store(self) -> LedgerStore | None:
        """The durable ledger of ``identity`` (None without one)."""
        if self.identity is None:
            return None
        return LedgerStore(self.identity, folder=self.ledger_dir)


@dataclass(frozen=True)
class Accountant:
    """Charges each chunk before it is released and writes its ledger entry.

    Its parameters are frozen; what it has spent changes only through :meth:`charge` (and
    :meth:`carry_from`), never by assignment: ``spent`` and ``released`` are read-only. With a
    durable unit (an identity) every charge is written to the person's ledger before the entry
    is returned (write-ahead), and ``spent`` is that person's total over every session.

    ``raw_gaze_chunks`` is the number of chunks one gaze sample reaches, or a
    :class:`~streamdp.privacy.guarantee.RawGazeReach` (then the ledger also states one second
    and a whole session of gaze).

    Raises
    ------
    ValueError
        The w-event budget is below ``w·ε_chunk``, or the session budget below one chunk.
    BudgetExhausted
        A durable unit whose budget is already spent: the session is refused before anything
        is computed.
    InputError
        The durable ledger cannot be read or is damaged.

    Examples
    --------
    >>> acc = Accountant(52.0, PrivacyUnit("session", budget=104.0), {"mechanism": "dcfpa"}, "d", 2)
    >>> acc.charge()["budget_left"], acc.charge()["budget_left"], acc.exhausted
    (52.0, 0.0, True)
    """

    epsilon_chunk: float
    unit: PrivacyUnit
    mechanism: dict[str, Any]
    bounds_digest: str
    raw_gaze_chunks: int | RawGazeReach
    _state: dict[str, Any] = field(default_factory=lambda: {"spent": 0.0, "released": 0}, repr=False)
    _recent: deque[float] = field(default_factory=deque, repr=False)
    _store: list[LedgerStore] = field(default_factory=list, repr=False)

    @property
    def spent(self) -> float:
        """ε spent so far (sequential composition of every chunk charged; with a durable unit,
        of every chunk ever charged to the identity)."""
        return float(self._state["spent"])

    @property
    def released(self) -> int:
        """Chunks charged by this accountant (and those it carried from another)."""
        return int(self._state["released"])

    @property
    def store(self) -> LedgerStore | None:
        """The durable ledger (None: the budget lives in memory)."""
        return self._store[0] if self._store else None

    def carry_from(self, other: Accountant) -> None:
        """Take over what ``other`` spent (a session replacing another after a settings change):
        a new configuration never resets a budget. A durable ledger keeps its own total: it
        already holds every charge of its identity."""
        self._state["released"] = other._state["released"]
        if self.store is None:
            self._state["spent"] = other._state["spent"]
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
        store = self.unit.ledger_store()
        if store is not None:
            self._store.append(store)
            state = store.read()
            self._load(state)
            self._refuse_if_spent(state)

    def _load(self, state: LedgerState) -> None:
        self._state["spent"] = state.epsilon_spent
        self._recent.clear()
        self._recent.extend(state.recent)

    @property
    def _keep(self) -> int:
        """Charges kept: the last ``w`` (the w-event window); none for the other units."""
        return (self.unit.w or 1) if self.unit.kind == "w-event" else 0

    def _window(self, recent: Any) -> float:
        """ε of the last ``w - 1`` charges: what the next chunk joins in its window of ``w``."""
        w = self.unit.w or 1
        return float(sum(list(recent)[-(w - 1) :])) if w > 1 else 0.0

    def _refusal(self, spent: float, recent: Any, chunks: int) -> str | None:
        """Why the next chunk may not be charged, or None."""
        budget = self.unit.budget
        if budget is None:
            return None
        who = f"{self.unit.identity}: " if self.unit.identity is not None else ""
        where = f" (ledger {self.store.path})" if self.store is not None else ""
        if self.unit.kind == "session" and spent + self.epsilon_chunk > budget * (1 + 1e-12):
            chunk_word = "chunk" if chunks == 1 else "chunks"
            return (
                f"{who}session budget ε = {budget:g} is used up: ε {spent:g} spent by {chunks} {chunk_word} leaves "
                f"{max(budget - spent, 0.0):g}, less than the {self.epsilon_chunk:g} the next chunk needs: nothing "
                f"more is released{where}"
            )
        if self.unit.kind == "w-event":
            window = self._window(recent)
            if window + self.epsilon_chunk > budget * (1 + 1e-12):
                return (
                    f"{who}w-event budget ε = {budget:g} for any {self.unit.w} consecutive chunks: the last "
                    f"{(self.unit.w or 1) - 1} spent {window:g} and the next needs {self.epsilon_chunk:g}: "
                    f"nothing more is released{where}"
                )
        return None

    def _refuse_if_spent(self, state: LedgerState) -> None:
        why = self._refusal(state.epsilon_spent, state.recent, state.chunks_charged)
        if why is not None:
            raise BudgetExhausted(why)

    @property
    def exhausted(self) -> bool:
        """Whether the next chunk would be refused (as this process last saw the budget)."""
        return self._refusal(self.spent, self._recent, self.released) is not None

    def charge(self) -> dict[str, Any]:
        """Record one release and return its ledger entry; with a durable unit the charge is on
        disk before this returns.

        Raises
        ------
        BudgetExhausted
            When this chunk would take the session total, or the last ``w`` chunks, past the
            budget (with a durable unit: as the ledger says now, other processes included).
        InputError, OSError
            The durable ledger cannot be read or written: nothing may be released.
        """
        store = self.store
        if store is not None:
            state = store.charge(
                self.epsilon_chunk, keep=self._keep, check=self._refuse_if_spent,
                unit=self.unit.kind, budget=self.unit.budget, w=self.unit.w,
            )  # fmt: skip
            self._load(state)
        else:
            why = self._refusal(self.spent, self._recent, self.released)
            if why is not None:
                raise BudgetExhausted(why)
            self._state["spent"] += self.epsilon_chunk
            if self.unit.kind == "w-event":
                self._recent.append(self.epsilon_chunk)
                while len(self._recent) > self._keep:
                    self._recent.popleft()
        self._state["released"] += 1
        return self._entry()

    def _entry(self) -> dict[str, Any]:
        reach = self.raw_gaze_chunks
        one = reach.chunks() if isinstance(reach, RawGazeReach) else reach
        entry: dict[str, Any] = {
            **self.mechanism,
            "chunk_index": self.released - 1,
            "epsilon_chunk": self.epsilon_chunk,
            "epsilon_spent": self.spent,
            "unit": self.unit.kind,
            "bounds_digest": self.bounds_digest,
            "raw_gaze_epsilon": one * self.epsilon_chunk,
        }
        if isinstance(reach, RawGazeReach):
            entry["raw_gaze_epsilon_second"] = reach.chunks(1.0) * self.epsilon_chunk
        if self.unit.kind == "w-event":
            assert self.unit.budget is not None
            # the chunk just charged and the w − 1 before it
            window = float(sum(list(self._recent)[-(self.unit.w or 1) :]))
            entry.update(w=self.unit.w, epsilon_w=window, budget=self.unit.budget, budget_durable=self.unit.durable)
            entry["guarantee"] = f"any {self.unit.w} consecutive chunks: ε ≤ {self.unit.budget:g}"
        elif self.unit.kind == "session":
            assert self.unit.budget is not None
            entry.update(
                budget=self.unit.budget, budget_left=self.unit.budget - self.spent, budget_durable=self.unit.durable
            )
            entry["guarantee"] = f"whole session: ε = {self.spent:g} so far, capped at {self.unit.budget:g}"
        else:
            entry["guarantee"] = f"each chunk: ε = {self.epsilon_chunk:g} (parallel composition across chunks)"
        if isinstance(reach, RawGazeReach):
            entry["raw_gaze_guarantee"] = raw_gaze_sentence(
                reach, epsilon_chunk=self.epsilon_chunk, unit=self.unit.kind, w=self.unit.w, budget=self.unit.budget
            )
        else:
            entry["raw_gaze_guarantee"] = (
                f"one gaze sample influences ≤ {one} chunks: "
                f"ε ≤ {one * self.epsilon_chunk:g} for it under the chunk unit"
            )
        return entry
