"""Every field of a published gaze tick is documented, and public or noised and accounted (issue #38, item 6).

The gaze channel's ticks of a real run are read as a subscriber reads them: a live session (the
relay on the simulated Capture, :func:`tests.live_harness.live`) with the gaze channel on and a
durable ledger (an identity), publishing with pyzmq on loopback; every ``streamdp.gaze.*`` frame is
decoded with msgpack. Each field is checked against a whitelist that says why it may leave the
device, and the whitelist against the tables of docs/wire-format.md (parsed here): a field sent
but not documented, or documented and never sent, fails. Public means public in fact: two people's
different gaze under one configuration and one seed give the same value; only what the doc calls
noised may differ. The Pupil Remote facade's gaze datums are checked against their table the same
way.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import msgpack
import pytest

from streamdp.config import SessionConfig
from streamdp.network.capture_gaze import GAZE_DATUM_FIELDS, capture_gaze_frames
from streamdp.privacy.gaze_mechanisms import GAZE_MECHANISMS
from streamdp.schema import SCHEMA_VERSION
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.gaze_privatizer import GAZE_NAMES
from streamdp.synthetic import generate

from .live_harness import live

DOC = Path(__file__).resolve().parents[1] / "docs" / "wire-format.md"
TICKS = 300  # 5 s at 60 Hz: five whole seconds, five blocks charged to the durable ledger

#: the message's own fields (as a chunk's: docs/wire-format.md, "The payload")
MESSAGE_FIELDS = {
    "topic": "public: streamdp.gaze.<mechanism>, from the configuration",
    "schema_version": "public: the package's schema",
    "names": "public: the gaze channel's columns",
    "t": "public: the tick grid, multiples of 1/rate_hz",
    "values": "noised by the gaze mechanism (degrees), and their image in normalized units",
    "ledger": "the tick's ledger entry, field by field below",
}
#: the channel's public parameters: the configuration, the mechanism's describe()
PUBLIC_TICK_FIELDS = {
    "channel", "mechanism", "epsilon_w_per_degree", "w", "metric", "field",
    "epsilon_w_per_euclidean_degree", "epsilon_tick_max_per_degree", "min_displacement_deg",
    "lattice_deg", "noise", "guarantee", "noise_scale_deg", "epsilon_test_per_degree",
    "epsilon_publish_max_per_degree", "test_noise_scale_deg", "budget_unit_per_degree", "rate_hz",
    "fov_deg", "generator", "smoothing", "raw_gaze_guarantee", "raw_gaze_reach_ticks",
    # counts of ticks (the subscriber sees each arrive), and the durable ledger's charges: blocks
    # of ticks at the most they can spend, a function of the configuration and the count
    "tick_index", "epsilon_charged_per_degree",
}  # fmt: skip
#: what the mechanism spent on this tick and so far: ε_w/w every tick for geo-uniform (public), a
#: function of the noised test and the published positions for geo-bd; accounted either way
NOISED_TICK_FIELDS = {"epsilon_tick_per_degree", "epsilon_spent_per_degree"}
#: public but not the same in every run (none: ``epsilon_charged_per_degree`` is a function of the
#: ledger's total at the start and the tick's index, however the device batched the ticks)
BATCHED: set[str] = set()
#: on the ticks at whole seconds of the grid only
ONCE_A_SECOND = {"guarantee", "raw_gaze_guarantee"}
#: raw functions of the gaze: never sent
RAW = {"clipped_fraction", "has_gaze", "confidence", "timestamp", "norm_pos", "samples", "count"}

#: a msgpack type as the doc writes it (its first word) → what msgpack decodes it to
TYPES = {"str": str, "int": int, "float": float, "array": list, "map": dict}


def doc_table(heading: str) -> dict[str, dict[str, str]]:
    """The tables under ``heading`` of docs/wire-format.md (to the next heading), by their first
    column's backquoted key: each row's cells by column name."""
    text = DOC.read_text(encoding="utf-8")
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^#)", text + "\n#", flags=re.S | re.M)
    assert match, f"docs/wire-format.md has no section {heading!r}"
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in match.group(1).splitlines():
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not header:
            header = cells
        elif not set(cells[0]) <= {"-", ":"}:
            for key in re.findall(r"`([^`]+)`", cells[0]):
                assert key not in rows, f"{key} documented twice under {heading!r}"
                rows[key] = dict(zip(header, cells, strict=True))
    assert rows, f"no table under {heading!r}"
    return rows


def _sent_by(row: dict[str, str], mechanism: str, identity: bool) -> bool:
    """Whether the doc says a key is sent by ``mechanism``'s ticks (on some tick)."""
    sent = row["sent"]
    others = {m for m in GAZE_MECHANISMS if m != mechanism}
    if sent in others:
        return False
    return identity or sent != "identity"


def _relayed(mechanism: str, person: int, tmp_path: Path) -> list[tuple[bytes, dict]]:
    """The first :data:`TICKS` gaze ticks a subscriber receives from a live relay, decoded."""
    folder = tmp_path / f"{mechanism}-{person}"
    folder.mkdir()
    config = SessionConfig(
        gaze_channel=True, gaze_mechanism=mechanism, seed=3, chunk_length=32,
        unit="session", budget=1e6, identity="alice@headset1", ledger_dir=str(folder),
    )  # fmt: skip
    rec = generate(duration=6.0, rate=200.0, seed=person, person=person, start_time=1000.0).recording
    got: list[tuple[bytes, dict]] = []
    with live(rec, config, seed=3) as (_, _, sub):
        while len(got) < TICKS and sub.poll(10_000):
            topic, payload = sub.recv_multipart()
            if topic.startswith(b"streamdp.gaze."):
                got.append((topic, msgpack.unpackb(payload, raw=False)))
    assert len(got) == TICKS
    return got


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[list, list]]:
    """Per mechanism, the ticks of two people (different gaze, one configuration, one seed)."""
    tmp = tmp_path_factory.mktemp("ledgers")
    return {m: (_relayed(m, 1, tmp), _relayed(m, 2, tmp)) for m in sorted(GAZE_MECHANISMS)}


def check_tick(topic: bytes, msg: dict, mechanism: str) -> None:
    """One decoded tick: every field whitelisted, documented, of the documented type, sent when
    the doc says."""
    payload, ledger_doc = doc_table("The payload"), doc_table("The ledger of a gaze tick")
    assert set(msg) == set(MESSAGE_FIELDS), f"unclassified message fields: {set(msg) ^ set(MESSAGE_FIELDS)}"
    assert set(msg) <= set(payload), f"message fields not in docs/wire-format.md: {set(msg) - set(payload)}"
    assert topic.decode() == msg["topic"] == f"streamdp.gaze.{mechanism}"
    assert msg["schema_version"] == SCHEMA_VERSION and tuple(msg["names"]) == GAZE_NAMES
    ledger = msg["ledger"]
    assert not RAW & set(ledger), f"raw functions of the gaze published: {sorted(RAW & set(ledger))}"
    unknown = set(ledger) - PUBLIC_TICK_FIELDS - NOISED_TICK_FIELDS
    assert not unknown, f"tick ledger fields neither public nor noised: {sorted(unknown)}"
    undocumented = set(ledger) - set(ledger_doc)
    assert not undocumented, f"tick ledger fields not in docs/wire-format.md: {sorted(undocumented)}"
    for key, value in ledger.items():
        row = ledger_doc[key]
        kind = TYPES[row["msgpack type"].split()[0]]
        assert type(value) is kind, f"ledger[{key!r}] is {type(value).__name__}, documented {row['msgpack type']}"
        assert _sent_by(row, mechanism, identity=True), f"ledger[{key!r}] sent by {mechanism}, documented {row['sent']}"
    (t,) = msg["t"]
    rate = ledger["rate_hz"]
    whole_second = round(t * rate) % round(rate) == 0
    for key, row in ledger_doc.items():
        if not _sent_by(row, mechanism, identity=True):
            continue
        expected = whole_second if row["sent"] == "whole seconds" else True
        assert (key in ledger) == expected, f"ledger[{key!r}] at t={t}: documented as sent on {row['sent']}"


def test_the_whitelist_is_what_the_doc_documents():
    ledger_doc = doc_table("The ledger of a gaze tick")
    listed = PUBLIC_TICK_FIELDS | NOISED_TICK_FIELDS
    assert set(ledger_doc) == listed, f"documented but not classified here, or the reverse: {set(ledger_doc) ^ listed}"
    assert not PUBLIC_TICK_FIELDS & NOISED_TICK_FIELDS
    for key, row in ledger_doc.items():
        said = row["public or noised"]
        assert said.startswith("public") or "noised" in said, f"{key}: {said!r} says neither public nor noised"
        if key in NOISED_TICK_FIELDS:
            assert "noised" in said, f"{key} varies with the gaze; docs/wire-format.md calls it {said!r}"
        if key in BATCHED:
            assert "batched" in said, f"{key} varies with the device's batching; docs/wire-format.md says {said!r}"
        assert row["msgpack type"].split()[0] in TYPES, f"{key}: unknown msgpack type {row['msgpack type']!r}"
    assert {k for k, r in ledger_doc.items() if r["sent"] == "whole seconds"} == ONCE_A_SECOND
    assert set(MESSAGE_FIELDS) == set(doc_table("The payload"))


def test_every_published_tick_field_is_documented_and_public_or_noised(runs):
    ledger_doc = doc_table("The ledger of a gaze tick")
    seen: set[str] = set()
    for mechanism, (alice, bob) in runs.items():
        sent: set[str] = set()
        for (topic_a, a), (topic_b, b) in zip(alice, bob, strict=True):
            check_tick(topic_a, a, mechanism)
            check_tick(topic_b, b, mechanism)
            sent |= set(a["ledger"]) | set(b["ledger"])
            # public in fact: the same whoever's gaze it is; only what the doc calls noised differs
            assert set(a["ledger"]) == set(b["ledger"])
            for key in a["ledger"]:
                if a["ledger"][key] != b["ledger"][key] and key not in BATCHED:
                    said = ledger_doc[key]["public or noised"]
                    assert "noised" in said, f"ledger[{key!r}] depends on the gaze, documented {said!r}"
                    assert key in NOISED_TICK_FIELDS
            for key in ("topic", "schema_version", "names", "t"):
                assert a[key] == b[key], f"{key} depends on the gaze"
        assert alice[-1][1]["values"] != bob[-1][1]["values"]
        # every field the doc says this mechanism sends (with an identity) is sent
        documented = {k for k, row in ledger_doc.items() if _sent_by(row, mechanism, identity=True)}
        assert sent == documented, (
            f"{mechanism}: sent but not documented, or documented and never sent: {sent ^ documented}"
        )
        seen |= sent
        # the durable ledger's running total: charged before any tick it covers is published
        # (so never below what the published ticks spent), never decreasing
        for run in (alice, bob):
            charged = [m["ledger"]["epsilon_charged_per_degree"] for _, m in run]
            spent = [m["ledger"]["epsilon_spent_per_degree"] for _, m in run]
            assert all(x <= y for x, y in itertools.pairwise(charged))
            assert all(c >= s * (1 - 1e-12) for c, s in zip(charged, spent, strict=True))
    assert seen == set(ledger_doc)


def test_without_an_identity_nothing_is_charged_nor_said(tmp_path):
    """No durable ledger: no ``epsilon_charged_per_degree`` (documented as sent with an identity only)."""
    sink = CollectingSink(accepts_gaze=True)
    rec = generate(duration=2.0, rate=200.0, seed=1).recording
    config = SessionConfig(gaze_channel=True, seed=3, chunk_length=32)
    Session.for_recording(config, rec, sinks=[sink]).run(rec)
    ledger_doc = doc_table("The ledger of a gaze tick")
    assert sink.ticks
    for tick in sink.ticks:
        msg = msgpack.unpackb(msgpack.packb(tick.to_message(), use_bin_type=True), raw=False)
        sent = set(msg["ledger"])
        assert "epsilon_charged_per_degree" not in sent
        documented = {k for k, row in ledger_doc.items() if _sent_by(row, config.gaze_mechanism, identity=False)}
        assert sent <= documented, f"tick ledger fields not documented: {sorted(sent - documented)}"


def test_an_undocumented_field_is_caught(monkeypatch, tmp_path):
    """The checks above, on a run whose mechanism states one more parameter than documented."""
    mechanism = "geo-uniform"
    cls = GAZE_MECHANISMS[mechanism]
    describe = cls.describe
    monkeypatch.setattr(cls, "describe", lambda self: {**describe(self), "undocumented_knob": 1.0})
    (topic, msg), *_ = _relayed(mechanism, 1, tmp_path)
    with pytest.raises(AssertionError, match="undocumented_knob"):
        check_tick(topic, msg, mechanism)


@pytest.mark.parametrize("mode", ["3d", "2d"])
def test_the_pupil_remote_gaze_datums_are_documented(mode):
    """The facade's ``gaze.3d.01.`` datums (built by :func:`capture_gaze_frames`, as the relay's
    ``--pupil-remote`` does): every field in docs/wire-format.md's table, of its type, classified."""
    doc = doc_table("Gaze datums on streamdp's Pupil Remote (`--pupil-remote`)")
    assert set(doc) == set(GAZE_DATUM_FIELDS)
    sink = CollectingSink(accepts_gaze=True)
    rec = generate(duration=1.0, rate=200.0, seed=1).recording
    Session.for_recording(SessionConfig(seed=0, gaze_channel=True), rec, sinks=[sink]).run(rec)
    assert sink.ticks
    for tick in sink.ticks:
        ((topic, payload),) = capture_gaze_frames(tick, mode)
        datum = msgpack.unpackb(payload, raw=False)
        assert topic.decode() == datum["topic"] == f"gaze.{mode}.01."
        documented = {k for k, row in doc.items() if row["sent"] == "always" or row["sent"] == f"{mode} only"}
        assert set(datum) == documented, f"datum fields not as documented: {set(datum) ^ documented}"
        for key, value in datum.items():
            said = doc[key]["public or noised"]
            assert said.startswith("public") or said.startswith("noised")
            assert type(value) is TYPES[doc[key]["msgpack type"].split()[0]], key
        assert datum["norm_pos"] == [float(v) for v in tick.values[0, 2:4]]
        assert datum["timestamp"] == float(tick.t[0])
