"""The tamper-evident ledger's cost: a start verifies the whole chain (linear in its records); a
charge on a running store reads only what was appended since, and pays for three flushes to disk
(the record, the index, the folder). A chunk is released every 16 s at n = 32."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamdp.privacy.ledger_chain import GENESIS, LedgerState, charge_record, encode_record, line_hash
from streamdp.privacy.ledger_folder import IndexEntry, update_index
from streamdp.privacy.ledger_store import LedgerStore

RECORDS = 10_000  # w-event charges every 16 s: about 44 hours of streaming
LIMIT = {"unit": "w-event", "budget": 10.0, "w": 20}


def _ledger(folder: Path, records: int) -> LedgerStore:
    """A ledger of ``records`` charges, written at once (a charge at a time would flush each)."""
    store = LedgerStore("alice@headset1", folder=folder)
    prev, state, lines = GENESIS, LedgerState(), []
    for seq in range(records):
        record = charge_record(store.identity, seq=seq, prev=prev, before=state, epsilon=0.5, keep=20, limit=LIMIT)
        line = encode_record(record)
        lines.append(line)
        prev = line_hash(line)
        state = LedgerState(record["epsilon_spent"], record["chunks_charged"], tuple(record["recent"]))
    folder.mkdir(parents=True, exist_ok=True)
    store.path.write_bytes(b"".join(line + b"\n" for line in lines))
    update_index(folder, store.path.name, IndexEntry(store.identity, records, prev, state.epsilon_spent))
    return store


@pytest.fixture
def ledger(tmp_path):
    return _ledger(tmp_path, RECORDS)


def test_start_verifies_a_ledger_of_10000_records(benchmark, ledger):
    benchmark.extra_info["target"] = "(a start, once per session; linear in the records)"
    state = benchmark.pedantic(lambda: LedgerStore(ledger.identity, folder=ledger.path.parent).read(), rounds=5)
    assert state.chunks_charged == RECORDS


def test_charge_on_a_running_store_of_10000_records(benchmark, ledger):
    benchmark.extra_info["target"] = "(one per chunk, every 16 s at n = 32; three fsyncs)"
    running = LedgerStore(ledger.identity, folder=ledger.path.parent)
    running.read()
    benchmark.pedantic(lambda: running.charge(0.5, keep=20, **LIMIT), rounds=30)  # type: ignore[arg-type]
    assert running.read().chunks_charged == RECORDS + 30
