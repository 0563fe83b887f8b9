"""The tamper-evident ledger (issue #19, item 4): records chained by sha256, a folder index,
refusals in one line naming the file, a torn append recovered without losing or doubling a charge,
``streamdp budget show/reset/migrate``. Each tampering is made on real files as a user would (an
editor, ``truncate``, ``rm``, a copy) and checked through the store, the accountant a relay or
replay starts with, and the command line."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from streamdp.cli import main
from streamdp.errors import InputError
from streamdp.privacy.accountant import Accountant, PrivacyUnit
from streamdp.privacy.ledger_chain import GENESIS, LedgerError, encode_record, line_hash
from streamdp.privacy.ledger_store import LedgerStore, ledger_file_name

ALICE = "alice@headset1"
BUDGET = 100.0


def _store(folder: Path, identity: str = ALICE) -> LedgerStore:
    return LedgerStore(identity, folder=folder)


def _charged(folder: Path, count: int = 3, *, identity: str = ALICE, eps: float = 2.0) -> LedgerStore:
    store = _store(folder, identity)
    for _ in range(count):
        store.charge(eps, keep=0, unit="session", budget=BUDGET)
    return store


def _acc(folder: Path, eps: float = 2.0) -> Accountant:
    unit = PrivacyUnit("session", budget=BUDGET, identity=ALICE, ledger_dir=str(folder))
    return Accountant(eps, unit, {"mechanism": "dcfpa"}, "abc", raw_gaze_chunks=2)


def _records(store: LedgerStore) -> list[dict]:
    return [json.loads(line) for line in store.path.read_bytes().splitlines()]


def _write_records(store: LedgerStore, records: list[dict], *, rehash: bool = False) -> None:
    """Write ``records`` back; with ``rehash`` every ``prev`` recomputed (a forger who knows the format)."""
    lines, prev = [], GENESIS
    for record in records:
        if rehash:
            record = {**record, "prev": prev}
        line = encode_record(record)
        lines.append(line)
        prev = line_hash(line)
    store.path.write_bytes(b"".join(line + b"\n" for line in lines))


# ------------------------------------------------------------------ tampering, each refused


def _lower_total(store: LedgerStore) -> None:
    records = _records(store)
    records[-1]["epsilon_spent"] = 0.0
    _write_records(store, records)


def _lower_total_rehashed(store: LedgerStore) -> None:
    # a whole new chain of one cheap charge each, consistent in itself: only the index tells
    records = _records(store)
    for i, record in enumerate(records):
        record.update(epsilon=0.5, epsilon_spent=0.5 * (i + 1))
    _write_records(store, records, rehash=True)


def _edited_record(store: LedgerStore) -> None:
    records = _records(store)
    records[1]["at"] = "2020-01-01T00:00:00Z"
    _write_records(store, records)


def _reordered(store: LedgerStore) -> None:
    lines = store.path.read_bytes().splitlines(keepends=True)
    store.path.write_bytes(lines[0] + lines[2] + lines[1])


def _truncated_mid_line(store: LedgerStore) -> None:
    data = store.path.read_bytes()
    store.path.write_bytes(data[:-30])


def _truncated_at_a_record(store: LedgerStore) -> None:
    lines = store.path.read_bytes().splitlines(keepends=True)
    store.path.write_bytes(b"".join(lines[:-1]))


def _deleted(store: LedgerStore) -> None:
    store.path.unlink()


def _deleted_with_the_index_and_cut(store: LedgerStore) -> None:
    (store.path.parent / "index.json").unlink()
    _truncated_at_a_record(store)


def _garbage(store: LedgerStore) -> None:
    store.path.write_bytes(b"\x00\x9f garbage\nmore garbage\n")


def _garbage_tail(store: LedgerStore) -> None:
    with open(store.path, "ab") as f:
        f.write(b"\x00\x01 not a record")


def _old_format(store: LedgerStore) -> None:
    store.path.unlink()
    old = {"format": "streamdp-ledger", "version": 1, "identity": ALICE, "epsilon_spent": 0.0,
           "chunks_charged": 0, "recent": []}  # fmt: skip
    store.legacy_path.write_text(json.dumps(old))


def _another_identity(store: LedgerStore) -> None:
    bob = _charged(store.path.parent, 3, identity="bob")
    shutil.copy(bob.path, store.path)


def _damaged_index(store: LedgerStore) -> None:
    (store.path.parent / "index.json").write_text("{")


TAMPERING: list[tuple[str, Callable[[LedgerStore], None], str]] = [
    ("lower-total", _lower_total, "line 3: the total went down (ε spent 0 after 4)"),
    ("lower-total-rehashed", _lower_total_rehashed, "record 3 is not the one the folder's index remembers"),
    ("edited-record", _edited_record, "line 3: its hash of the previous record does not match the line before it"),
    ("reordered", _reordered, "line 2: record number 2 where 1 belongs"),
    ("truncated-mid-line", _truncated_mid_line, "truncated: the file holds 2 complete record(s) and an incomplete"),
    ("truncated-at-a-record", _truncated_at_a_record, "truncated: the file holds 2 complete record(s) (ε spent 4)"),
    ("deleted", _deleted, "the ledger vanished while the folder's index remembers it (3 record(s), ε spent 6"),
    ("deleted-index-and-cut", _deleted_with_the_index_and_cut, "index.json) does not know this ledger of 2 records"),
    ("garbage", _garbage, "line 1: not a ledger record (garbage or damaged)"),
    ("garbage-tail", _garbage_tail, "line 4: an incomplete last line that is no record's beginning (damaged)"),
    ("old-format", _old_format, "an old-format ledger (one total, no chain): carry its total into a chained ledger"),
    ("another-identity", _another_identity, "line 1: the record belongs to 'bob', not to 'alice@headset1'"),
    ("damaged-index", _damaged_index, "index.json: the ledger folder's index is damaged"),
]


@pytest.mark.parametrize("tamper, problem", [t[1:] for t in TAMPERING], ids=[t[0] for t in TAMPERING])
def test_a_tampered_ledger_is_refused_in_one_line_naming_the_file(tmp_path, tamper, problem, capsys):
    store = _charged(tmp_path)
    tamper(store)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    for start in (store.read, _store(tmp_path).read, lambda: _acc(tmp_path), lambda: store.charge(1.0, keep=0)):
        with pytest.raises(LedgerError) as refused:
            start()
        text = str(refused.value)
        assert isinstance(refused.value, InputError) and "\n" not in text
        assert problem in text and str(tmp_path) in text  # names the file, and what is wrong
    # nothing was written: no charge on top of a refused ledger, the evidence left as it was
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    # the command line: one line on stderr, exit status 2 (as for any bad input)
    capsys.readouterr()
    assert main(["budget", "show", ALICE, "--ledger-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("streamdp budget: error: ") and problem in err


def test_a_session_on_a_tampered_ledger_is_refused_before_anything_is_computed(tmp_path, capsys):
    _lower_total(_charged(tmp_path))
    argv = ["demo", "--offline", "--seconds", "100", "--unit", "session", "--budget", "1000",
            "--identity", ALICE, "--ledger-dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith("streamdp demo: error: ") and "the total went down" in err


# ------------------------------------------------------------------ crashes: nothing lost, nothing twice


def test_a_torn_final_append_is_dropped_and_no_charge_is_lost_or_doubled(tmp_path, caplog, capsys):
    store = _charged(tmp_path, 2)
    records = _records(store)
    # a crash mid-append: part of the third record's line is on disk, the index was not updated
    third = encode_record({**records[-1], "seq": 2, "epsilon_spent": 6.0, "chunks_charged": 3})
    with open(store.path, "ab") as f:
        f.write(third[:40])
    assert _store(tmp_path).read().epsilon_spent == 4.0  # the unfinished charge was never accepted
    assert main(["budget", "show", ALICE, "--ledger-dir", str(tmp_path)]) == 0
    assert "an incomplete last line of 40 bytes" in capsys.readouterr().out
    with caplog.at_level(logging.WARNING):
        state = _store(tmp_path).charge(2.0, keep=0)
    assert "dropped an incomplete last line of 40 bytes" in caplog.text
    assert (state.epsilon_spent, state.chunks_charged) == (6.0, 3)
    assert [r["seq"] for r in _records(store)] == [0, 1, 2] and _store(tmp_path).read() == state


def test_a_torn_first_append_starts_from_nothing_as_it_was(tmp_path):
    store = _store(tmp_path)
    store.path.write_bytes(b'{"at":"2026-11-25T')  # the first charge ever, cut by a crash: no index yet
    assert store.read().epsilon_spent == 0.0
    assert _store(tmp_path).charge(2.0, keep=0).epsilon_spent == 2.0 and len(_records(store)) == 1
    (tmp_path / "index.json").unlink()  # a first charge whose index update was lost is kept
    assert _store(tmp_path).read().epsilon_spent == 2.0 and _store(tmp_path).charge(2.0, keep=0).chunks_charged == 2


def test_a_crash_between_the_append_and_the_index_keeps_the_charge(tmp_path):
    store = _charged(tmp_path, 2)
    index = tmp_path / "index.json"
    remembered = index.read_bytes()
    store.charge(2.0, keep=0)
    index.write_bytes(remembered)  # the index update never happened
    # the ledger is ahead of the index: the charge counts (write-ahead: never the reverse)
    assert _store(tmp_path).read().epsilon_spent == 6.0
    assert _store(tmp_path).charge(2.0, keep=0).epsilon_spent == 8.0
    assert json.loads(index.read_text())["ledgers"][store.path.name]["records"] == 4


def test_an_edit_made_while_a_relay_runs_is_refused_at_the_next_start(tmp_path):
    running = _charged(tmp_path, 3)
    _edited_record(running)
    # the running store reads only what was appended since it last verified the chain ...
    assert running.charge(2.0, keep=0).epsilon_spent == 8.0
    # ... and every start verifies the whole chain
    with pytest.raises(LedgerError, match="line 3: its hash of the previous record does not match"):
        _store(tmp_path).read()


def test_two_stores_of_one_identity_interleave_without_losing_a_charge(tmp_path):
    first, second = _store(tmp_path), _store(tmp_path)
    for _ in range(5):
        first.charge(1.0, keep=0)
        second.charge(2.0, keep=0)
    state = _store(tmp_path).read()
    assert (state.epsilon_spent, state.chunks_charged) == (15.0, 10)
    assert [r["epsilon_spent"] for r in _records(first)] == [1.0, 3.0, 4.0, 6.0, 7.0, 9.0, 10.0, 12.0, 13.0, 15.0]


# ------------------------------------------------------------------ reset and migrate


def test_budget_reset_archives_the_old_ledger_and_starts_from_zero(tmp_path, capsys):
    store = _charged(tmp_path, 3)
    old = store.path.read_bytes()
    head = line_hash(old.splitlines()[-1])
    assert main(["budget", "reset", ALICE, "--ledger-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    (archived,) = tmp_path.glob("*.archived-*.jsonl")
    assert archived.read_bytes() == old  # kept as it was
    assert out == [
        f"{ALICE}: archived the old ledger as {archived} (ε 6 spent over 3 chunks, 3 records, last hash {head})",
        f"{ALICE}: a new ledger starts from ε 0: {store.path}",
    ]
    (first,) = _records(store)
    assert first["kind"] == "reset" and first["archived"] == [archived.name] and first["archived_head"] == head
    acc = _acc(tmp_path)
    assert acc.spent == 0.0 and acc.charge()["epsilon_spent"] == 2.0
    assert main(["budget", "show", ALICE, "--ledger-dir", str(tmp_path)]) == 0
    assert f"(streamdp budget reset; archived: {archived.name})" in capsys.readouterr().out


@pytest.mark.parametrize(
    "tamper, said",
    [(_lower_total, "it was refused: "), (_old_format, "it was refused: "), (_deleted, None)],
    ids=["tampered", "old-format", "vanished"],
)
def test_budget_reset_is_the_way_out_of_any_refusal(tmp_path, tamper, said, capsys):
    store = _charged(tmp_path, 3)
    tamper(store)
    assert main(["budget", "reset", ALICE, "--ledger-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    if said is None:
        assert out.startswith(f"{ALICE}: no ledger to archive\n")
    else:
        assert said in out and len(list(tmp_path.glob("*.archived-*"))) == 1
    assert _store(tmp_path).read().epsilon_spent == 0.0 and _acc(tmp_path).charge()["epsilon_spent"] == 2.0


def _old_ledger(folder: Path, spent: float = 52.0, charged: int = 2, recent: tuple = ()) -> Path:
    """The file the previous streamdp wrote: one JSON object, no chain."""
    path = folder / ledger_file_name(ALICE, suffix=".json")
    folder.mkdir(parents=True, exist_ok=True)
    old = {"format": "streamdp-ledger", "version": 1, "identity": ALICE,
           "epsilon_spent": spent, "chunks_charged": charged, "recent": list(recent)}  # fmt: skip
    path.write_text(json.dumps(old))
    return path


def test_budget_migrate_carries_an_old_format_total_into_a_chain(tmp_path, capsys):
    old = _old_ledger(tmp_path, 52.0, 2, (26.0, 26.0))
    with pytest.raises(LedgerError, match=f"`streamdp budget migrate {ALICE}`"):
        _acc(tmp_path)
    assert main(["budget", "migrate", ALICE, "--ledger-dir", str(tmp_path)]) == 0
    store = _store(tmp_path)
    assert capsys.readouterr().out == (
        f"{ALICE}: carried ε 52 spent over 2 chunks from the old-format ledger {old} (archived beside it) "
        f"into {store.path}\n"
    )
    assert not old.exists() and len(list(tmp_path.glob("*.migrated-*.json"))) == 1
    assert store.read().recent == (26.0, 26.0) and _acc(tmp_path).charge()["epsilon_spent"] == 54.0
    # nothing left to migrate: one line, exit 2
    assert main(["budget", "migrate", ALICE, "--ledger-dir", str(tmp_path)]) == 2
    assert "no old-format ledger of 'alice@headset1' to migrate" in capsys.readouterr().err


def test_a_migration_a_crash_interrupted_is_finished_not_repeated(tmp_path):
    old = _old_ledger(tmp_path)
    saved = old.read_bytes()
    _store(tmp_path).migrate()
    old.write_bytes(saved)  # the crash came before the old file was archived
    assert _store(tmp_path).migrate().epsilon_spent == 52.0
    assert [r["kind"] for r in _records(_store(tmp_path))] == ["migrated"]  # not carried twice
    # an old file beside a chain that is not its migration: refused, both kept
    _store(tmp_path).charge(1.0, keep=0)
    old.write_bytes(saved)
    with pytest.raises(LedgerError, match="an old-format ledger beside the chained ledger"):
        _store(tmp_path).migrate()


# ------------------------------------------------------------------ budget show


def test_budget_show_says_the_ledger_in_words(tmp_path, capsys):
    store = _charged(tmp_path, 3)
    head = line_hash(store.path.read_bytes().splitlines()[-1])
    assert main(["budget", "show", ALICE, "--ledger-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        ALICE,
        "  spent: ε 6 over 3 chunks",
        "  left: ε 94 of the session budget 100 (the budget of the last charge)",
        "  records: 3, chain OK (each record holds the sha256 of the one before, and the ledger folder's index "
        f"agrees); last record's hash {head}",
    ]
    assert lines[4].startswith("  last charge: 20") and lines[5] == f"  ledger: {store.path}"


def test_budget_show_lists_every_ledger_and_says_which_are_refused(tmp_path, capsys):
    _charged(tmp_path, 1)
    bob = _store(tmp_path, "bob")
    for _ in range(2):
        bob.charge(3.0, keep=3, unit="w-event", budget=10.0, w=3)
    assert main(["budget", "show", "--ledger-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{ALICE}\n") and "\nbob\n" in out
    assert "left: ε 4 for the next chunk, of the w-event budget 10 for any 3 consecutive chunks" in out
    _deleted(bob)
    assert main(["budget", "show", "--ledger-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out.startswith(f"{ALICE}\n") and "bob" not in out
    assert err.count("\n") == 1 and "bob-" in err and "the ledger vanished" in err


@pytest.mark.parametrize(
    "argv, said, status",
    [
        (["budget", "show"], "no ledgers in ", 0),
        (["budget", "show", "carol"], "carol: no ledger yet, nothing spent", 0),
        (["budget", "show", " "], "identity must name whose budget this is", 2),
        (["budget", "reset"], "the following arguments are required: identity", 2),
        (["budget"], "the following arguments are required: ACTION", 2),
    ],
    ids=["empty-folder", "unknown-identity", "blank-identity", "reset-without-identity", "no-action"],
)
def test_budget_command_answers_every_input_in_one_line(tmp_path, argv, said, status, capsys):
    try:
        got = main([*argv, "--ledger-dir", str(tmp_path)] if len(argv) > 1 else argv)
    except SystemExit as exc:  # argparse's refusals end the parser (exit status 2)
        got = exc.code
    out, err = capsys.readouterr()
    assert got == status and said in (out if status == 0 else err)
    if status:
        assert err.count("\n") == 1 and out == ""


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"epsilon": "1"}, TypeError, "epsilon must be a number, got '1'"),
        ({"epsilon": 0.0}, ValueError, "epsilon must be finite and > 0, got 0.0"),
        ({"keep": 1.5}, TypeError, "keep must be an int, got 1.5"),
        ({"keep": -1}, ValueError, "keep must be ≥ 0, got -1"),
        ({"unit": "chunk"}, ValueError, "unit must be one of session, w-event or None, got 'chunk'"),
        ({"budget": float("inf")}, ValueError, "budget must be finite and > 0, got inf"),
        ({"w": True}, TypeError, "w must be an int, got True"),
        ({"w": 0}, ValueError, "w must be ≥ 1, got 0"),
    ],
    ids=["epsilon-type", "epsilon-zero", "keep-type", "keep-negative", "unit", "budget-inf", "w-type", "w-zero"],
)
def test_charge_parameters_are_checked_before_anything_is_written(tmp_path, kwargs, error, message):
    store = _store(tmp_path)
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        store.charge(**{"epsilon": 1.0, "keep": 0, **kwargs})
    assert not store.path.exists()
