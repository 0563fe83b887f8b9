"""The durable budget (issue #12, item 8): the ε a person spent survives restarts, is charged
before each release, is shared by every process and recording of that person, and an exhausted
budget is refused at start.

The kill test runs a relay-like process (the real private pipeline, the durable accountant and
the ZeroMQ publisher on loopback), SIGKILLs it mid-session and starts it again.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp import BudgetExhausted, InputError
from streamdp.network.subscriber import connect_subscriber
from streamdp.privacy import dcfpa, default_profile, secure_generator
from streamdp.privacy.accountant import Accountant, PrivacyUnit
from streamdp.privacy.ledger_store import LedgerStore, default_ledger_dir, ledger_file_name
from streamdp.stages.chunker import Chunk
from streamdp.stages.privatizer import Privatizer

ALICE = "alice@headset1"


def _acc(tmp_path: Path, kind: str = "session", *, budget: float = 5.0, w: int | None = None, eps: float = 2.0):
    unit = PrivacyUnit(kind, w=w, budget=budget, identity=ALICE, ledger_dir=str(tmp_path))
    return Accountant(eps, unit, {"mechanism": "dcfpa"}, "abc", raw_gaze_chunks=2)


# ------------------------------------------------------------------ the store


def test_a_charge_is_on_disk_when_it_returns_and_a_new_store_reads_it(tmp_path):
    store = LedgerStore(ALICE, folder=tmp_path)
    assert store.read().epsilon_spent == 0.0 and not store.path.exists()
    store.charge(1.5, keep=0)
    store.charge(2.5, keep=0)
    record = json.loads(store.path.read_text().splitlines()[-1])  # the chain's last record
    assert record["identity"] == ALICE and record["epsilon_spent"] == 4.0 and record["chunks_charged"] == 2
    again = LedgerStore(ALICE, folder=tmp_path).read()
    assert (again.epsilon_spent, again.chunks_charged) == (4.0, 2)
    # no temporary file is left beside the ledger (the folder's index and its lock are)
    names = [store.path.name, store.path.with_suffix(".lock").name, "index.json", "index.lock"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(names)


def test_identities_have_their_own_files_and_never_collide(tmp_path):
    names = ["alice@headset1", "alice_headset1", "alice/headset1", "../alice", "Ålice"]
    files = {ledger_file_name(n) for n in names}
    assert len(files) == len(names) and all("/" not in f and not f.startswith(".") for f in files)
    LedgerStore("alice@headset1", folder=tmp_path).charge(1.0, keep=0)
    assert LedgerStore("alice_headset1", folder=tmp_path).read().epsilon_spent == 0.0


def _record(**fields) -> str:
    """One line of a chained ledger: its first record, a charge of 3, with ``fields`` changed."""
    record = {"format": "streamdp-ledger", "version": 2, "identity": ALICE, "seq": 0, "kind": "charge",
              "epsilon": 3.0, "epsilon_spent": 3.0, "chunks_charged": 1, "recent": [], "prev": "0" * 64}  # fmt: skip
    return json.dumps({**record, **fields}) + "\n"


@pytest.mark.parametrize(
    "text, problem",
    [
        ("{not json\n", "damaged"),
        ('{"format": "streamdp-ledger", "version": 2, "identity": "alice@headset1", "seq": 0}\n', "damaged"),
        (_record(epsilon_spent=-3), "damaged"),
        (_record(identity="bob"), "belongs to 'bob'"),
    ],
    ids=["not-json", "missing-fields", "negative", "another-identity"],
)
def test_a_damaged_ledger_is_refused_never_taken_for_a_fresh_budget(tmp_path, text, problem):
    store = LedgerStore(ALICE, folder=tmp_path)
    store.path.write_text(text)
    for start in (store.read, lambda: _acc(tmp_path)):
        with pytest.raises(InputError) as refused:
            start()
        assert problem in str(refused.value).replace(str(tmp_path), "")  # not in the test's folder name
    assert store.path.read_text() == text  # left as it was, for the owner to look at


@pytest.mark.parametrize("identity", ["", "   ", "a\nb", "x" * 201])
def test_an_identity_that_names_nobody_is_refused(identity):
    with pytest.raises(ValueError, match="identity must name whose budget this is"):
        PrivacyUnit("session", budget=1.0, identity=identity)


def test_identity_and_ledger_dir_apply_only_where_a_budget_is_kept(tmp_path):
    with pytest.raises(ValueError, match="identity applies to the session and w-event units"):
        PrivacyUnit("chunk", identity=ALICE)
    with pytest.raises(ValueError, match="ledger_dir applies with an identity"):
        PrivacyUnit("session", budget=1.0, ledger_dir=str(tmp_path))
    with pytest.raises(TypeError, match="identity must be a str"):
        PrivacyUnit("session", budget=1.0, identity=42)  # type: ignore[arg-type]


def test_the_default_folder_is_the_users_state_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert default_ledger_dir() == tmp_path / "streamdp" / "ledgers"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/path")  # not absolute: ignored, as the spec says
    assert default_ledger_dir() == Path.home() / ".local" / "state" / "streamdp" / "ledgers"


# ------------------------------------------------------------------ the accountant


def test_a_new_accountant_of_the_same_person_continues_the_budget(tmp_path):
    first = _acc(tmp_path)
    first.charge()
    second = _acc(tmp_path)  # a restart: a new process, the same person
    assert second.spent == 2.0
    entry = second.charge()
    assert entry["epsilon_spent"] == 4.0 and entry["budget_left"] == 1.0 and entry["budget_durable"] is True
    assert "alice" not in json.dumps(entry)  # the identity names a person: never in the ledger entry
    used_up = "session budget ε = 5 is used up: ε 4 spent by 2 chunks leaves 1, less than the 2"
    with pytest.raises(BudgetExhausted, match=used_up):
        second.charge()
    # and the first, which has not seen the second's charge, is refused too: the file decides
    with pytest.raises(BudgetExhausted):
        first.charge()
    assert LedgerStore(ALICE, folder=tmp_path).read().epsilon_spent == 4.0


def test_starting_with_an_exhausted_budget_is_refused_with_a_clear_message(tmp_path):
    acc = _acc(tmp_path)
    acc.charge()
    acc.charge()
    with pytest.raises(BudgetExhausted) as refused:
        _acc(tmp_path)
    text = str(refused.value)
    assert text.startswith(f"{ALICE}: session budget ε = 5 is used up: ε 4 spent by 2 chunks leaves 1, less than the 2")
    assert str(LedgerStore(ALICE, folder=tmp_path).path) in text
    # a cheaper chunk still fits: refusal is about the next chunk, not a flag
    assert _acc(tmp_path, eps=1.0).charge()["epsilon_spent"] == 5.0


def test_the_w_event_window_survives_a_restart(tmp_path):
    acc = _acc(tmp_path, "w-event", budget=6.0, w=3)
    assert [acc.charge()["epsilon_w"] for _ in range(2)] == [2.0, 4.0]
    again = _acc(tmp_path, "w-event", budget=6.0, w=3)  # restarted: the two charges still count
    assert [again.charge()["epsilon_w"] for _ in range(2)] == [6.0, 6.0]
    assert LedgerStore(ALICE, folder=tmp_path).read().recent == (2.0, 2.0, 2.0)
    # a lower budget after a restart cannot be overrun by the chunks just before it
    with pytest.raises(BudgetExhausted, match=r"the last 2 spent 4 and the next needs 1\.5"):
        _acc(tmp_path, "w-event", budget=4.5, w=3, eps=1.5)


def test_without_an_identity_the_ledger_says_the_budget_lives_in_memory():
    acc = Accountant(2.0, PrivacyUnit("session", budget=10.0), {"mechanism": "dcfpa"}, "abc", raw_gaze_chunks=2)
    assert acc.store is None and acc.charge()["budget_durable"] is False


def test_the_privatizer_charges_the_durable_ledger_before_it_releases(tmp_path):
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=4)
    eps = mech.epsilon_chunk
    unit = PrivacyUnit("session", budget=2.5 * eps, identity=ALICE, ledger_dir=str(tmp_path))
    chunk = Chunk(np.arange(4) * 0.5, np.zeros((4, 52)))
    priv = Privatizer(mech, unit, rng=secure_generator(0))
    (rel,) = priv.update([chunk])
    assert LedgerStore(ALICE, folder=tmp_path).read().epsilon_spent == rel.ledger["epsilon_spent"] == eps
    # a second privatizer of the same person (another process, a restart) shares the budget
    other = Privatizer(mech, unit, rng=secure_generator(1))
    assert len(other.update([chunk, chunk])) == 1 and other.exhausted
    with pytest.raises(BudgetExhausted, match=f"{ALICE}: session budget"):
        Privatizer(mech, unit, rng=secure_generator(2))


def _charge_many(folder: str, count: int) -> None:
    store = LedgerStore(ALICE, folder=folder)
    for _ in range(count):
        store.charge(1.0, keep=0)


def test_processes_charging_at_once_lose_no_charge(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_charge_many, args=(str(tmp_path), 25)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    state = LedgerStore(ALICE, folder=tmp_path).read()
    assert (state.epsilon_spent, state.chunks_charged) == (75.0, 75)


# ------------------------------------------------------------------ a relay killed mid-session

#: a relay in miniature: the real private pipeline with a durable session budget of
#: ``BUDGET_CHUNKS`` chunks, publishing on loopback as the relay does, gaze fed in 0.5 s batches
RELAY = textwrap.dedent(
    """
    import sys
    from streamdp.errors import BudgetExhausted
    from streamdp.network.sink import ReleasePublisher
    from streamdp.pipeline import PrivatePipeline
    from streamdp.privacy import dcfpa, default_profile, secure_generator
    from streamdp.privacy.accountant import PrivacyUnit
    from streamdp.synthetic import generate

    folder, budget_chunks = sys.argv[1], int(sys.argv[2])
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=4)
    unit = PrivacyUnit("session", budget=budget_chunks * mech.epsilon_chunk, identity="alice@headset1",
                       ledger_dir=folder)
    try:
        pipe = PrivatePipeline(mech, unit=unit, rng=secure_generator())
    except BudgetExhausted as exc:
        print(f"refused: {exc}", file=sys.stderr, flush=True)
        sys.exit(3)
    pub = ReleasePublisher("tcp://127.0.0.1:0")  # port 0: no port picked by the test and bound later
    print(pub.endpoint, flush=True)
    assert pub.wait_for_subscribers(1, timeout=30)
    print("ready", flush=True)
    gaze = generate(duration=200.0, rate=60.0, seed=1).recording.gaze
    for start in range(0, len(gaze), 30):
        for rel in pipe.update(gaze.slice(start, start + 30)):
            pub.publish(rel)
        if pipe.privatizer.exhausted:
            print("exhausted", flush=True)
            break
    pub.close()
    """
)


@contextlib.contextmanager
def _started(folder: Path, budget_chunks: int) -> Iterator[subprocess.Popen[str]]:
    """The relay-like process (its first line: the endpoint it bound); killed (if still running)
    and its pipes closed on the way out."""
    with subprocess.Popen(
        [sys.executable, "-c", RELAY, str(folder), str(budget_chunks)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as proc:
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)


def _receive(sub, count: int) -> list[dict]:
    got = []
    while len(got) < count and sub.poll(30_000):
        _, payload = sub.recv_multipart()
        got.append(msgpack.unpackb(payload, raw=False))
    return got


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_a_relay_killed_mid_session_keeps_its_spent_budget(tmp_path):
    budget_chunks = 6
    with _started(tmp_path, budget_chunks) as relay:
        assert relay.stdout is not None
        sub = connect_subscriber(relay.stdout.readline().strip(), ("streamdp.features.",))
        try:
            assert relay.stdout.readline().strip() == "ready"
            first = _receive(sub, 2)
            assert len(first) == 2
            os.kill(relay.pid, signal.SIGKILL)  # mid-session: no cleanup, no flush, no goodbye
            relay.wait(30)
        finally:
            sub.close(linger=0)
    assert relay.returncode == -signal.SIGKILL
    eps = first[0]["ledger"]["epsilon_chunk"]
    after_kill = LedgerStore(ALICE, folder=tmp_path).read()
    # write-ahead: every release received was charged first (a chunk charged but not yet sent
    # when the kill came is charged too: never the reverse)
    assert after_kill.chunks_charged >= 2 and after_kill.epsilon_spent == pytest.approx(after_kill.chunks_charged * eps)
    assert [m["ledger"]["epsilon_spent"] for m in first] == pytest.approx([eps, 2 * eps])

    # restarted: it continues the same budget and stops when it is spent
    left = budget_chunks - after_kill.chunks_charged
    with _started(tmp_path, budget_chunks) as relay:
        assert relay.stdout is not None
        sub = connect_subscriber(relay.stdout.readline().strip(), ("streamdp.features.",))
        try:
            assert relay.stdout.readline().strip() == "ready"
            second = _receive(sub, left)
            out, _ = relay.communicate(timeout=60)
        finally:
            sub.close(linger=0)
    assert out.strip() == "exhausted" and relay.returncode == 0
    spent = [m["ledger"]["epsilon_spent"] for m in second]
    assert spent == pytest.approx([(after_kill.chunks_charged + i + 1) * eps for i in range(left)])
    assert LedgerStore(ALICE, folder=tmp_path).read().epsilon_spent == pytest.approx(budget_chunks * eps)

    # and a third start is refused before anything is computed or published
    with _started(tmp_path, budget_chunks) as relay:
        out, err = relay.communicate(timeout=60)
    assert relay.returncode == 3 and out == ""
    assert err.startswith(f"refused: {ALICE}: session budget ε = {budget_chunks * eps:g} is used up")
