"""The chained ledger file: one JSON record a line, each with the running total and the sha256 of
the line before it.

A record (``encode_record``, keys sorted, ASCII) holds ``format``, ``version``, ``identity``,
``seq`` (0, 1, 2, …), ``kind``, ``epsilon`` (this record's charge), ``epsilon_spent`` (the total
after it), ``chunks_charged``, ``recent`` (the newest charges, for the w-event window), ``prev``
(the sha256 of the previous line's bytes; 64 zeros for the first), ``at`` (UTC, local only) and,
for a charge, the unit and budget it was charged under. The first record is a ``charge``, a
``reset`` (the ledger started over; it names the archived one) or a ``migrated`` (the total carried
from an old-format file); every later record is a ``charge``.

:func:`verify_chain` reads the bytes of a ledger and refuses (:class:`LedgerError`, one line naming
the file, the line and what is wrong) a line that is not a record, a record of another identity, a
record number out of order, a record whose ``prev`` is not the hash of the line before it (edited),
a total that went down or does not add up. An incomplete last line (no newline) is the torn write
of an append a crash interrupted: it is reported (``Chain.torn``, and whether it can be
the beginning of a charge), not counted, and the store decides with the folder's index whether it
may be dropped (:mod:`streamdp.privacy.ledger_store`).

Examples
--------
>>> first = encode_record(charge_record("alice", seq=0, prev=GENESIS, before=LedgerState(), epsilon=2.0))
>>> chain = verify_chain(first + b"\\n", path="alice.jsonl", identity="alice")
>>> chain.records, chain.state.epsilon_spent, chain.head == line_hash(first)
(1, 2.0, True)
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ..errors import InputError

FORMAT = "streamdp-ledger"
VERSION = 2
#: the ``prev`` of a ledger's first record
GENESIS = "0" * 64
#: what a record may be: every record after the first is a charge
KINDS = ("charge", "reset", "migrated")
#: how every appended record's line begins (keys sorted: "at" comes first in a charge): an
#: incomplete last line that does not begin so is no torn append but damage
_CHARGE_START = b'{"at":"'


class LedgerError(InputError):
    """A ledger, or the ledger folder's index, is refused: damaged, edited, truncated, vanished
    or of an old format. The message is one line naming the file and what is wrong; nothing is
    charged or released from a refused ledger."""


@dataclass(frozen=True)
class LedgerState:
    """What one identity has spent: the total ε, the number of chunks charged, and the most
    recent charges, newest last (the w-event unit's window)."""

    epsilon_spent: float = 0.0
    chunks_charged: int = 0
    recent: tuple[float, ...] = ()


@dataclass(frozen=True)
class Chain:
    """A verified ledger: its complete records, the state after the last, the hash of the last
    line (``head``; :data:`GENESIS` when there is none), the bytes of the complete records
    (``length``) and of an incomplete last line (``torn``)."""

    records: int = 0
    state: LedgerState = LedgerState()
    head: str = GENESIS
    length: int = 0
    torn: int = 0
    #: whether the incomplete last line can be the beginning of a charge (else it is damage)
    torn_is_append: bool = True
    first: dict[str, Any] | None = None
    last: dict[str, Any] | None = None
    last_line: bytes = b""
    #: hashes of the records whose number was asked for (``want``)
    hashes: dict[int, str] = field(default_factory=dict)


def line_hash(line: bytes) -> str:
    """The sha256 of one record's line (without its newline), in hex."""
    return hashlib.sha256(line).hexdigest()


def encode_record(record: dict[str, Any]) -> bytes:
    """One record as the bytes of its line (no newline): JSON, keys sorted, ASCII."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode()


def now_utc() -> str:
    """The time a record is written, UTC to the second (local evidence, never published)."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _record(identity: str, seq: int, prev: str, kind: str, state: LedgerState, epsilon: float) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "version": VERSION,
        "identity": identity,
        "seq": seq,
        "kind": kind,
        "epsilon": epsilon,
        "epsilon_spent": state.epsilon_spent,
        "chunks_charged": state.chunks_charged,
        "recent": list(state.recent),
        "prev": prev,
        "at": now_utc(),
    }


def charge_record(
    identity: str,
    *,
    seq: int,
    prev: str,
    before: LedgerState,
    epsilon: float,
    keep: int = 0,
    limit: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The record of one charge of ``epsilon`` after ``before``; ``limit`` (unit, budget, w) is
    what it was charged under, for ``streamdp budget show``."""
    recent = (*before.recent, epsilon)[-keep:] if keep > 0 else ()
    after = LedgerState(before.epsilon_spent + epsilon, before.chunks_charged + 1, recent)
    return {**_record(identity, seq, prev, "charge", after, epsilon), **(limit or {})}


def start_record(identity: str, *, kind: str, state: LedgerState, **about: Any) -> dict[str, Any]:
    """The first record of a ledger that starts over (``reset``: from 0) or carries an old
    total (``migrated``); ``about`` says where the old ledger went."""
    return {**_record(identity, 0, GENESIS, kind, state, 0.0), **about}


def _number(value: Any) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def verify_chain(
    data: bytes, *, path: object, identity: str, after: Chain | None = None, want: int | None = None
) -> Chain:
    """The verified chain of a ledger's bytes; ``after`` (a chain verified before) continues it
    with ``data``, the bytes written after its ``length``. ``want``: a record number whose hash
    to keep (what the folder's index remembers).

    Raises
    ------
    LedgerError
        A line is not a record, or the chain is broken (see the module docstring), named with
        the file, the line and the fix.
    """
    chain = after if after is not None else Chain()
    fix = f"the ledger is refused: restore it, or start over knowingly with `streamdp budget reset {identity}`"
    *lines, tail = data.split(b"\n")  # the part after the last newline: b"" or a torn write
    seq, head, state = chain.records, chain.head, chain.state
    first, last, last_line = chain.first, chain.last, chain.last_line
    hashes = dict(chain.hashes)
    for line in lines:
        where = f"{path}: line {seq + 1}"
        rec = _parse(line, where, fix)
        if rec.get("identity") != identity:
            raise LedgerError(f"{where}: the record belongs to {rec.get('identity')!r}, not to {identity!r}")
        if rec.get("seq") != seq:
            raise LedgerError(
                f"{where}: record number {rec.get('seq')!r} where {seq} belongs (records removed or moved); {fix}"
            )
        if not (isinstance(rec.get("prev"), str) and len(rec["prev"]) == 64):
            raise LedgerError(f"{where}: the record is damaged (no hash of the previous record); {fix}")
        if rec["prev"] != head:
            what = "the line before it" if seq else "the start of a ledger"
            raise LedgerError(
                f"{where}: its hash of the previous record does not match {what} (a record was edited); {fix}"
            )
        state = _next_state(rec, state, seq, where, fix)
        head = line_hash(line)
        if seq == want:
            hashes[seq] = head
        first = rec if seq == 0 else first
        last, last_line = rec, line
        seq += 1
    length = chain.length + len(data) - len(tail)
    return Chain(seq, state, head, length, len(tail), append_begun(tail), first, last, last_line, hashes)


def append_begun(tail: bytes) -> bool:
    """Whether an incomplete last line can be the beginning of an appended charge (a torn write)."""
    return tail.startswith(_CHARGE_START) or _CHARGE_START.startswith(tail)


def _parse(line: bytes, where: str, fix: str) -> dict[str, Any]:
    try:
        rec = json.loads(line.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise LedgerError(f"{where}: not a ledger record (garbage or damaged); {fix}") from None
    if not isinstance(rec, dict) or rec.get("format") != FORMAT:
        raise LedgerError(f"{where}: not a streamdp ledger record; {fix}")
    if rec.get("version") != VERSION:
        raise LedgerError(f"{where}: a ledger record of version {rec.get('version')!r}; this streamdp reads {VERSION}")
    return rec


def _next_state(rec: dict[str, Any], before: LedgerState, seq: int, where: str, fix: str) -> LedgerState:
    """The state after ``rec``, checked against the state before it."""
    kind = rec.get("kind")
    eps: Any = rec.get("epsilon")
    spent: Any = rec.get("epsilon_spent")
    charged: Any = rec.get("chunks_charged")
    recent: Any = rec.get("recent")
    if kind not in KINDS or (seq > 0 and kind != "charge"):
        raise LedgerError(f"{where}: the record is damaged (kind {kind!r} where a charge belongs); {fix}")
    if not (_number(eps) and _number(spent) and spent >= 0 and type(charged) is int and charged >= 0):
        raise LedgerError(f"{where}: the record is damaged (its ε, total or count is missing or < 0); {fix}")
    if not isinstance(recent, list):
        raise LedgerError(f"{where}: the record is damaged (its recent charges are not a list); {fix}")
    if kind == "charge":
        if spent < before.epsilon_spent:
            raise LedgerError(f"{where}: the total went down (ε spent {spent:g} after {before.epsilon_spent:g}); {fix}")
        if not (eps > 0 and spent == before.epsilon_spent + eps and charged == before.chunks_charged + 1):
            raise LedgerError(
                f"{where}: the totals do not add up (ε spent {spent:g} is not {before.epsilon_spent:g} + {eps:g}, "
                f"or {charged} chunks is not {before.chunks_charged} + 1); {fix}"
            )
        n = len(before.recent)
        if len(recent) > n + 1 or recent != [*before.recent, eps][n + 1 - len(recent) :]:
            raise LedgerError(f"{where}: the recent charges are not the chain's last ones; {fix}")
        # a suffix of charges already checked: its values need no check of their own
        return LedgerState(spent, charged, tuple(recent))
    if not all(_number(e) and e > 0 for e in recent):
        raise LedgerError(f"{where}: the record is damaged (its recent charges are not numbers > 0); {fix}")
    if kind == "reset" and (spent != 0 or charged != 0 or recent):
        raise LedgerError(f"{where}: a reset that does not start from 0; {fix}")
    return LedgerState(float(spent), charged, tuple(float(e) for e in recent))
