"""Everything a subscriber sees is public or noised and accounted (issue #12, item 2).

Every published frame is decoded (real msgpack, and the real ZeroMQ publisher on loopback) and
every field checked against a whitelist that says why it may leave the device. A field added to
the message or the ledger fails here until it is classified. The public fields are also checked
to be public in fact: two people's different gaze under one configuration give the same value.
"""

from __future__ import annotations

import json

import msgpack
import pytest

from streamdp.config import SessionConfig
from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.offline.replay import replay
from streamdp.privacy.mechanisms import MECHANISMS
from streamdp.schema import FEATURE_NAMES, SCHEMA_VERSION
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.status import StatusEvent
from streamdp.synthetic import generate

from .recording_files import write_capture_recording

#: the message's own fields
MESSAGE_FIELDS = {
    "topic": "public: streamdp.features.<mechanism>, from the configuration",
    "schema_version": "public: the package's schema",
    "names": "public: the feature schema",
    "t": "public: the step grid (issue #12 item 1 anchors it to public time)",
    "values": "noised by the mechanism, charged to the accountant",
    "ledger": "the ledger entry, field by field below",
}

#: the mechanism's public parameters (its describe(), from the configuration)
MECHANISM_FIELDS = {
    "mechanism", "epsilon", "epsilon_per_feature", "weights", "chunk_length", "transform", "k",
    "k_epsilon_share", "sensitivity", "level_share", "subsampling_window",
    "dropped_features",  # the weights' zero-weight features, released as public constants
    "weights_digest",  # the digest of the weights' split (a weights file's), unless equal
    "epsilon_asked",  # the ε per chunk asked for, when the ceiling made the mechanism spend less
}  # fmt: skip
#: the accountant's entry: configuration, and counts of releases (public: the subscriber sees
#: every release arrive)
ACCOUNTANT_FIELDS = {
    "chunk_index", "epsilon_chunk", "epsilon_spent", "unit", "bounds_digest", "raw_gaze_epsilon",
    "raw_gaze_epsilon_second", "guarantee", "raw_gaze_guarantee", "w", "epsilon_w", "budget",
    "budget_left", "budget_durable",
}  # fmt: skip
#: the privatizer's: whether the generator is cryptographic (configuration)
PRIVATIZER_FIELDS = {
    "generator",
    "postprocess",  # with postprocess_releases: the post-processing's public settings (drift, smooth, consistent)
}
#: chosen privately from the data with the exponential mechanism, its ε accounted (k_epsilon_share)
NOISED_LEDGER_FIELDS = {"k_chosen"}
PUBLIC_LEDGER_FIELDS = MECHANISM_FIELDS | ACCOUNTANT_FIELDS | PRIVATIZER_FIELDS

UNITS = {
    "chunk": {},
    "session": {"unit": "session", "budget": 1e6},
    "w-event": {"unit": "w-event", "w": 4, "budget": 1e3},
}

#: two people: different gaze, the same clock (the grid is public only if it is the same)
ALICE = generate(duration=95.0, rate=120.0, seed=1).recording
BOB = generate(duration=95.0, rate=120.0, seed=2).recording


def _messages(config: SessionConfig, recording) -> list[dict]:
    sink = CollectingSink()
    Session(config, sinks=[sink], seed=5).run(recording)
    assert sink.releases, "no release to check"
    # byte for byte what a sink sends: pack, then decode as a subscriber does
    return [msgpack.unpackb(msgpack.packb(r.to_message(), use_bin_type=True), raw=False) for r in sink.releases]


def _check_fields(msg: dict, mechanism: str) -> None:
    assert set(msg) == set(MESSAGE_FIELDS), f"unclassified message fields: {set(msg) ^ set(MESSAGE_FIELDS)}"
    unknown = set(msg["ledger"]) - PUBLIC_LEDGER_FIELDS - NOISED_LEDGER_FIELDS
    assert not unknown, f"ledger fields neither public nor noised: {sorted(unknown)}"
    assert msg["topic"] == f"streamdp.features.{mechanism}" and msg["schema_version"] == SCHEMA_VERSION
    assert msg["names"] == list(FEATURE_NAMES)
    assert "clipped_fraction" not in msg and "clipped_fraction" not in msg["ledger"]


CASES = [(m, u) for m in sorted(MECHANISMS) for u in UNITS] + [("dcfpa-private-k", "chunk")]


@pytest.mark.parametrize(("mechanism", "unit"), CASES, ids=[f"{m}-{u}" for m, u in CASES])
def test_every_published_field_is_public_or_noised(mechanism, unit):
    params = {"mechanism": "dcfpa", "k": "private"} if mechanism == "dcfpa-private-k" else {"mechanism": mechanism}
    # ε 200: the task allocation's 26 features, so that the values depend on whose gaze it is (at the
    # default ε it funds one, which Algorithm 1's noise can pin to the same bound for both people)
    config = SessionConfig(chunk_length=32, epsilon=200.0, **params, **UNITS[unit])  # type: ignore[arg-type]
    alice, bob = _messages(config, ALICE), _messages(config, BOB)
    assert len(alice) == len(bob) >= 2
    for a, b in zip(alice, bob, strict=True):
        _check_fields(a, params["mechanism"])
        _check_fields(b, params["mechanism"])
        # public means the same whoever's gaze it is
        for key in set(a["ledger"]) - NOISED_LEDGER_FIELDS:
            assert a["ledger"][key] == b["ledger"][key], f"ledger[{key!r}] depends on the gaze"
        for key in ("topic", "schema_version", "names", "t"):
            assert a[key] == b[key], f"{key} depends on the gaze"
        assert a["values"] != b["values"]


def test_the_clip_rate_stays_on_the_device():
    sink = CollectingSink()
    # a wide pupil clips: the rate is a raw function of the gaze, kept locally only
    Session(SessionConfig(chunk_length=32), sinks=[sink], seed=5).run(ALICE)
    rel = sink.releases[0]
    assert 0.0 <= rel.clipped_fraction <= 1.0 and "clipped_fraction" in rel.ledger  # local view
    msg = rel.to_message()
    assert "clipped_fraction" not in msg and "clipped_fraction" not in msg["ledger"]
    assert b"clipped" not in msgpack.packb(msg, use_bin_type=True)


def test_the_sanitized_socket_carries_only_releases_and_their_whitelisted_fields():
    publisher = ReleasePublisher("tcp://127.0.0.1:0")
    sub = connect_subscriber(publisher.endpoint, ("",))  # everything the socket sends
    try:
        assert publisher.wait_for_subscribers(1, timeout=5.0)
        # noise from the OS CSPRNG: the only kind a network sink publishes by default
        session = Session(SessionConfig(chunk_length=32, unit="session", budget=1e6), sinks=[publisher])
        session.publish_status(StatusEvent.RUNNING)
        releases = session.run(ALICE)
        session.restart(StatusEvent.CAPTURE_RESTARTED)
        session.publish_status(StatusEvent.STOPPED)
        frames = []
        while len(frames) < len(releases) and sub.poll(3000):
            frames.append(sub.recv_multipart())
        assert not sub.poll(200)  # no status, nothing else
    finally:
        sub.close(linger=0)
        publisher.close()
    assert len(frames) == len(releases) >= 2
    for topic, payload in frames:
        assert topic == b"streamdp.features.dcfpa"
        _check_fields(msgpack.unpackb(payload, raw=False), "dcfpa")


def test_replay_writes_no_seed_and_no_clip_rate_beside_the_data(tmp_path):
    path = write_capture_recording(ALICE, tmp_path / "alice")
    config = SessionConfig(chunk_length=32, seed=987654)
    (result,) = replay([str(path)], tmp_path / "out", config, jobs=1, progress=False)
    assert result.chunks >= 2
    for file in (tmp_path / "out").iterdir():
        data = file.read_bytes()
        assert b"987654" not in data, f"{file.name} holds the seed"
        assert b"clipped" not in data, f"{file.name} holds the clip rate"
    for name in ("replay.json", "alice.ledger.json"):
        assert json.loads((tmp_path / "out" / name).read_text())["noise"] == "reproducible, not private"
    # without a seed the noise is said to be private
    replay([str(path)], tmp_path / "os", SessionConfig(chunk_length=32), jobs=1, progress=False)
    assert json.loads((tmp_path / "os" / "replay.json").read_text())["noise"] == "private (OS entropy)"
