"""The app client (issue #22, item 2): typed releases exactly as published, the schema checked,
timeouts, CURVE, asyncio, and surviving a relay that closes and binds the same port again.

Everything runs on 127.0.0.1 with ports chosen by the OS; nothing sleeps waiting for a message
(subscriptions are awaited on the publisher's side, releases with poll timeouts).
"""

from __future__ import annotations

import asyncio
import time

import msgpack
import numpy as np
import pytest
import zmq

import streamdp
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.network.client import (
    FEATURES_TOPIC,
    AsyncSubscriber,
    ReceivedRelease,
    SchemaMismatch,
    Subscriber,
    release_from_message,
)
from streamdp.network.gaze_client import GAZE_TOPIC
from streamdp.network.sink import CurveServer, ReleasePublisher
from streamdp.schema import FEATURE_NAMES, SCHEMA_VERSION
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

WAIT = 5.0


@pytest.fixture(scope="module")
def released() -> CollectingSink:
    rec = generate(duration=48.0, seed=4).recording
    sink = CollectingSink(accepts_gaze=True)
    Session.for_recording(SessionConfig(chunk_length=8, seed=0, gaze_channel=True), rec, sinks=[sink]).run(rec)
    assert len(sink.releases) >= 3 and len(sink.ticks) >= 10
    return sink


@pytest.fixture
def publisher():
    pub = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    yield pub
    pub.close()


def _same(got: ReceivedRelease, rel) -> None:
    assert got.topic == rel.topic and got.names == rel.names and got.schema_version == SCHEMA_VERSION
    np.testing.assert_array_equal(got.t, rel.t)
    np.testing.assert_array_equal(got.values, rel.values)
    assert dict(got.ledger) == rel.to_message()["ledger"]


def test_subscriber_is_exported_from_streamdp():
    assert streamdp.Subscriber is Subscriber and "Subscriber" in streamdp.__all__


def test_releases_arrive_typed_and_exactly_as_published(publisher, released):
    with Subscriber(publisher.endpoint, timeout=0.3) as sub:
        assert publisher.wait_for_subscribers(1, timeout=WAIT)
        for rel in released.releases:
            publisher.publish(rel)
        got = list(sub)  # ends 0.3 s after the last
    assert len(got) == len(released.releases)
    for g, rel in zip(got, released.releases, strict=True):
        _same(g, rel)
        assert g.channel == "features" and g.mechanism == "dcfpa"
        assert not g.values.flags.writeable and not g.t.flags.writeable
        with pytest.raises(TypeError):
            g.ledger["epsilon"] = 0.0  # type: ignore[index]
    pytest.importorskip("pandas")
    df = got[1].to_pandas()
    assert list(df.columns) == ["chunk_index", "t", *FEATURE_NAMES]
    assert (df["chunk_index"] == got[1].ledger["chunk_index"]).all()
    np.testing.assert_array_equal(df[list(FEATURE_NAMES)].to_numpy(), got[1].values)


def test_topics_select_the_channel(publisher, released):
    ticks = released.ticks[:5]
    features = Subscriber(publisher.endpoint, timeout=0.3)
    gaze = Subscriber(publisher.endpoint, topics=(GAZE_TOPIC,), timeout=0.3)
    try:
        assert publisher.wait_for_subscribers(2, timeout=WAIT)
        publisher.publish(released.releases[0])
        for tick in ticks:
            publisher.publish(tick)
        got_features, got_ticks = list(features), list(gaze)
    finally:
        features.close()
        gaze.close()
    assert [g.channel for g in got_features] == ["features"]
    assert [g.channel for g in got_ticks] == ["gaze"] * len(ticks)
    for g, tick in zip(got_ticks, ticks, strict=True):
        _same(g, tick)
        assert g.values.shape == (1, 4) and "chunk_index" not in g.to_pandas().columns


@pytest.fixture
def raw_publisher():
    """An XPUB that says when the subscriber is in, for messages a relay would never send."""
    sock = zmq.Context.instance().socket(zmq.XPUB)
    sock.linger = 0
    sock.bind("tcp://127.0.0.1:*")
    yield sock
    sock.close(linger=0)


def _subscribed(sock) -> None:
    assert sock.poll(int(WAIT * 1000)), "the subscriber never subscribed"
    assert sock.recv()[:1] == b"\x01"


def test_an_unknown_schema_is_refused_with_a_clear_error_and_the_next_release_still_arrives(raw_publisher, released):
    rel = released.releases[0]
    endpoint = raw_publisher.getsockopt_string(zmq.LAST_ENDPOINT)
    with Subscriber(endpoint, timeout=WAIT) as sub:
        _subscribed(raw_publisher)
        topic = rel.topic.encode()
        newer = {**rel.to_message(), "schema_version": SCHEMA_VERSION + 1}
        raw_publisher.send_multipart([topic, msgpack.packb(newer, use_bin_type=True)])
        with pytest.raises(SchemaMismatch, match=rf"schema_version {SCHEMA_VERSION + 1}; this streamdp reads 1"):
            sub.receive()
        missing = {k: v for k, v in rel.to_message().items() if k != "schema_version"}
        raw_publisher.send_multipart([topic, msgpack.packb(missing, use_bin_type=True)])
        with pytest.raises(SchemaMismatch, match="schema_version None"):
            sub.receive()
        raw_publisher.send_multipart([topic, b"\xc1 not msgpack"])
        with pytest.raises(InputError, match="not msgpack"):
            sub.receive()
        raw_publisher.send_multipart([topic, msgpack.packb(rel.to_message(), use_bin_type=True)])
        _same(sub.receive(), rel)  # a refused message does not break the socket


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"values": [[1.0, 2.0]]}, "not a release"),
        ({"names": [1, 2]}, "not all strings"),
        ({"ledger": [1]}, "ledger a map"),
        ({"topic": "other.thing"}, "not streamdp"),
    ],
)
def test_a_malformed_release_is_an_input_error(released, change, match):
    message = {**released.releases[0].to_message(), **change}
    with pytest.raises(InputError, match=match):
        release_from_message(message)


def test_the_subscriber_survives_the_relay_closing_and_binding_the_same_port_again(released):
    first, second = released.releases[:2]
    old = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    endpoint = old.endpoint
    with Subscriber(endpoint, timeout=WAIT) as sub:
        try:
            assert old.wait_for_subscribers(1, timeout=WAIT)
            old.publish(first)
            _same(sub.receive(), first)
        finally:
            old.close()
        # the relay restarts: its port may stay held for a moment after the old socket closes
        deadline = time.monotonic() + WAIT
        while True:
            try:
                new = ReleasePublisher(endpoint, publish_reproducible_noise_not_private=True)
                break
            except InputError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        try:
            # the same SUB socket reconnects and subscribes again by itself, as an app waiting in
            # receive() does: ZeroMQ resends the subscriptions when the socket is next used
            deadline = time.monotonic() + WAIT
            while new.poll_subscriptions() < 1:
                assert time.monotonic() < deadline, "the subscriber never came back"
                with pytest.raises(TimeoutError):
                    sub.receive(timeout=0.05)
            new.publish(second)
            _same(sub.receive(), second)
        finally:
            new.close()


def test_timeouts_and_bad_arguments(publisher):
    with Subscriber(publisher.endpoint, timeout=0.05) as sub:
        assert list(sub) == []
        with pytest.raises(TimeoutError, match="no release"):
            sub.receive(timeout=0.02)
    with pytest.raises(RuntimeError, match="closed"):
        sub.receive()
    sub.close()  # twice: harmless
    for kwargs, error in [
        ({"timeout": 0}, ValueError),
        ({"timeout": "5"}, ValueError),
        ({"topics": "streamdp.features."}, TypeError),
        ({"topics": ()}, TypeError),
        ({"curve": ("only-one",)}, TypeError),
    ]:
        with pytest.raises(error):
            Subscriber(publisher.endpoint, **kwargs)
    with pytest.raises(InputError, match="not an address"):
        Subscriber("foo")
    with pytest.raises(InputError, match="no such certificate"):
        Subscriber(publisher.endpoint, curve=("/no/server.key", "/no/client.key_secret"))


def test_curve_subscriber_receives_from_a_curve_relay(tmp_path, released):
    import zmq.auth

    server_dir, clients_dir = tmp_path / "server", tmp_path / "clients"
    server_dir.mkdir()
    clients_dir.mkdir()
    server_pub, server_sec = zmq.auth.create_certificates(str(server_dir), "server")
    _, client_sec = zmq.auth.create_certificates(str(clients_dir), "client")
    pub = ReleasePublisher(
        "tcp://127.0.0.1:0", curve=CurveServer(server_sec, clients_dir), publish_reproducible_noise_not_private=True
    )
    try:
        with Subscriber(pub.endpoint, curve=(server_pub, client_sec), timeout=WAIT) as sub:
            assert pub.wait_for_subscribers(1, timeout=WAIT)
            pub.publish(released.releases[0])
            _same(sub.receive(), released.releases[0])
    finally:
        pub.close()


def test_the_asyncio_subscriber(publisher, released):
    async def run() -> tuple[list[ReceivedRelease], bool]:
        async with AsyncSubscriber(publisher.endpoint, topics=(FEATURES_TOPIC,), timeout=0.3) as sub:
            assert publisher.wait_for_subscribers(1, timeout=WAIT)
            for rel in released.releases:
                publisher.publish(rel)
            got = [rel async for rel in sub]
            try:
                await sub.receive(timeout=0.02)
            except TimeoutError:
                timed_out = True
            else:
                timed_out = False
        return got, timed_out

    got, timed_out = asyncio.run(run())
    assert timed_out
    assert len(got) == len(released.releases)
    for g, rel in zip(got, released.releases, strict=True):
        _same(g, rel)
