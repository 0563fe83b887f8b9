"""Only a genuine, unmodified release made by the privatizer reaches a sink; status is typed.

Each of the five bypasses found in issue #8 is tried and must fail, as must a release forged with
``object.__new__`` or tampered with ``object.__setattr__``, against both the in-memory sink and
the ZeroMQ publisher (real pyzmq on loopback).
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import time
from types import MappingProxyType

import msgpack
import numpy as np
import pytest
import zmq

from streamdp import InputError
from streamdp.network.sink import STATUS_TOPIC, ReleasePublisher, StatusPublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.privacy import dcfpa, default_profile, make_mechanism, secure_generator
from streamdp.privacy.release import PrivateRelease, ReleaseMint, check_sealed, claim_mint, is_sealed
from streamdp.sinks import CollectingSink, ReleaseSink
from streamdp.stages.chunker import Chunk
from streamdp.stages.privatizer import Privatizer
from streamdp.status import SessionStatus, StatusEvent

N, F = 4, 52
RAW = np.linspace(0.0, 1.0, N * F).reshape(N, F)  # stands in for unsanitized features


def _releases(
    count: int = 2, mechanism: str = "dcfpa", k: str | None = None, seed: int | None = 7
) -> list[PrivateRelease]:
    """Releases of :data:`RAW`; ``seed=None``: noise from the OS CSPRNG, as a network sink takes it."""
    extra = {} if k is None else {"k": k}
    mech = make_mechanism(mechanism, epsilon=1.0, bounds=default_profile(), chunk_length=N, **extra)
    priv = Privatizer(mech, rng=secure_generator(seed))
    return priv.update([Chunk(np.arange(N) * 0.5 + i * N * 0.5, RAW.copy()) for i in range(count)])


@pytest.fixture
def release() -> PrivateRelease:
    return _releases(1, seed=None)[0]


@pytest.fixture
def publisher():
    sink = ReleasePublisher("tcp://127.0.0.1:0")
    try:
        yield sink
    finally:
        sink.close()


@pytest.fixture
def subscribed(publisher):
    """A publisher with one live subscriber on everything it sends."""
    sub = connect_subscriber(publisher.endpoint, ("",))
    try:
        assert publisher.wait_for_subscribers(1, timeout=5.0)
        yield publisher, sub
    finally:
        sub.close(linger=0)


def _forged(values: np.ndarray, like: PrivateRelease) -> PrivateRelease:
    """A release built by hand, carrying a genuine release's seal."""
    fake = object.__new__(PrivateRelease)
    ro = np.frombuffer(values.tobytes(), np.float64).reshape(values.shape)
    for slot, value in (
        ("_t", like.t),
        ("_values", ro),
        ("_names", like.names),
        ("_ledger", like.ledger),
        ("_clipped_fraction", like.clipped_fraction),
        ("_seal", object.__getattribute__(like, "_seal")),
    ):
        object.__setattr__(fake, slot, value)
    return fake


# ------------------------------------------------------------------ the five bypasses of issue #8


def test_bypass_1_dataclasses_replace_is_refused(release):
    with pytest.raises(TypeError, match="dataclass"):
        dataclasses.replace(release, values=RAW)  # type: ignore[type-var]


def test_bypass_2_no_constructor_can_be_imported_or_called(release):
    with pytest.raises(ImportError):
        from streamdp.privacy.release import _make_release  # noqa: F401
    with pytest.raises(TypeError, match="made only by the privatizer"):
        PrivateRelease(release.t, RAW, release.names, dict(release.ledger), 0.0)
    with pytest.raises(TypeError, match="not constructed"):
        ReleaseMint()
    with pytest.raises(RuntimeError, match=r"belongs to streamdp\.stages\.privatizer"):
        claim_mint()
    with pytest.raises(TypeError, match="cannot be subclassed"):
        type("MyRelease", (PrivateRelease,), {})


def test_bypass_3_arrays_can_never_be_made_writeable(release):
    for arr in (release.values, release.t):
        with pytest.raises(ValueError, match="WRITEABLE"):
            arr.setflags(write=True)
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1.0
    with pytest.raises(ValueError, match="WRITEABLE"):
        release.values.base.setflags(write=True)
    assert not np.ndarray(release.values.shape, buffer=release.values).flags.writeable


def test_bypass_3_no_attribute_or_ledger_entry_can_be_changed(release):
    with pytest.raises(AttributeError, match="read-only"):
        release.values = RAW  # type: ignore[misc]
    with pytest.raises(AttributeError, match="read-only"):
        release._values = RAW  # type: ignore[misc]
    with pytest.raises(AttributeError, match="read-only"):
        del release._seal
    with pytest.raises(TypeError, match="does not support item assignment"):
        release.ledger["epsilon_spent"] = 0.0  # type: ignore[index]


def test_a_ledger_part_frozen_once_is_sealed_with_every_release_and_stays_frozen():
    """The gaze privatizer freezes its public fields once (freeze_constant); a release carrying
    them is as frozen and as checked as any."""
    from streamdp.privacy.frozen import freeze, freeze_constant

    fov = freeze_constant([99.0, 53.0], "fov_deg")
    guarantee = freeze_constant({"unit": "degree", "w": [60]}, "guarantee")
    assert freeze(fov, "x") is fov and freeze(guarantee, "x") is guarantee  # not walked again
    assert freeze([99.0, 53.0], "x") is not fov  # an equal value is frozen anew
    with pytest.raises(TypeError):
        guarantee["unit"] = "px"  # type: ignore[index]
    with pytest.raises(ValueError, match=r"ledger\['bad'\] is not finite"):
        freeze({"fov_deg": fov, "bad": float("nan")}, "ledger")
    with pytest.raises(TypeError, match="plain values"):
        freeze({"fov_deg": fov, "obj": object()}, "ledger")


def test_nested_ledger_values_are_frozen_too():
    rel = _releases(1, k="private")[0]
    assert isinstance(rel.ledger, MappingProxyType) and isinstance(rel.ledger["k_chosen"], tuple)
    assert rel.to_message()["ledger"]["k_chosen"] == list(rel.ledger["k_chosen"])


@pytest.mark.parametrize(
    "status",
    [{"released": "0.51,0.49 raw gaze"}, {"mechanism": "dcfpa"}, "raw gaze", None],
    ids=["dict-with-raw-string", "dict-of-keys-only", "plain-string", "none"],
)
def test_bypass_4_only_a_session_status_is_published(status, subscribed):
    publisher, sub = subscribed
    for sink in (publisher, CollectingSink()):
        with pytest.raises(TypeError, match="give a SessionStatus"):
            sink.publish_status(status)
    assert not sub.poll(100)


def test_bypass_4_a_status_has_no_free_text_field():
    with pytest.raises(TypeError, match="message"):
        SessionStatus(mechanism="dcfpa", message="0.51,0.49")  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="must be one of"):
        SessionStatus(mechanism="0.51,0.49")


def test_bypass_5_the_publisher_exposes_no_socket(publisher):
    with pytest.raises(AttributeError):
        publisher.socket  # noqa: B018
    public = [name for name in dir(publisher) if not name.startswith("_")]
    assert not [name for name in public if isinstance(getattr(publisher, name), zmq.Socket)]


# ------------------------------------------------------------------ forged and tampered releases


def test_a_forged_release_is_refused_by_every_sink(release, subscribed):
    publisher, sub = subscribed
    fake = _forged(RAW, release)
    assert not is_sealed(fake)
    for sink in (CollectingSink(), publisher):
        with pytest.raises(TypeError, match="seal does not verify"):
            sink.publish(fake)
    assert not sub.poll(100)


def test_a_release_forged_without_a_seal_is_refused(release):
    bare = object.__new__(PrivateRelease)
    sink = CollectingSink()
    with pytest.raises(TypeError, match="seal does not verify"):
        sink.publish(bare)
    assert sink.releases == []


@pytest.mark.parametrize(
    ("slot", "swap"),
    [
        ("_values", lambda r: np.frombuffer(RAW.tobytes(), np.float64).reshape(RAW.shape)),
        ("_values", lambda r: r.values.copy()),  # same numbers, but a writeable array
        ("_t", lambda r: np.frombuffer((r.t + 0.5).tobytes(), np.float64)),
        ("_ledger", lambda r: MappingProxyType({**r.ledger, "epsilon_spent": 0.0})),
        ("_names", lambda r: tuple(reversed(r.names))),
        ("_clipped_fraction", lambda r: 0.5),
    ],
    ids=["raw-values", "writeable-values", "shifted-times", "ledger-epsilon", "names", "clipped-fraction"],
)
def test_a_tampered_release_is_refused(slot, swap, subscribed):
    publisher, sub = subscribed
    rel = _releases(1, seed=None)[0]
    object.__setattr__(rel, slot, swap(rel))
    for sink in (CollectingSink(), publisher):
        with pytest.raises(TypeError, match="seal does not verify"):
            sink.publish(rel)
    assert not sub.poll(100)


def test_a_release_cannot_be_pickled_but_copies_are_itself(release):
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(release)
    assert copy.copy(release) is release and copy.deepcopy(release) is release


def test_anything_else_is_refused_naming_its_type():
    for thing in ({"values": RAW.tolist()}, RAW, Chunk(np.arange(N) * 0.5, RAW)):
        with pytest.raises(TypeError, match=f"only a PrivateRelease can be published, got {type(thing).__name__}"):
            check_sealed(thing)


# ------------------------------------------------------------------ genuine releases pass


def test_genuine_releases_reach_the_collecting_sink():
    rels = _releases(3)
    sink = CollectingSink()
    assert isinstance(sink, ReleaseSink)
    for rel in rels:
        sink.publish(rel)
    sink.publish_status(SessionStatus(mechanism="dcfpa", released=3, epsilon_spent=156.0))
    assert sink.releases == rels and [r.ledger["chunk_index"] for r in sink.releases] == [0, 1, 2]
    sink.close()
    with pytest.raises(RuntimeError, match="closed"):
        sink.publish(rels[0])


def test_a_genuine_release_is_published_as_its_message(subscribed):
    publisher, sub = subscribed
    assert isinstance(publisher, ReleaseSink)
    rel = _releases(1, seed=None)[0]
    publisher.publish(rel)
    assert sub.poll(3000)
    topic, payload = sub.recv_multipart()
    assert topic == b"streamdp.features.dcfpa"
    assert payload == msgpack.packb(rel.to_message(), use_bin_type=True)
    np.testing.assert_array_equal(msgpack.unpackb(payload)["values"], rel.values)


def test_release_message_keeps_its_fields_and_order(release):
    msg = release.to_message()
    assert list(msg) == ["topic", "schema_version", "names", "t", "values", "ledger"]
    assert type(msg["ledger"]) is dict and msg["ledger"]["mechanism"] == "dcfpa"
    assert msg["values"] == release.values.tolist() and msg["t"] == release.t.tolist()


def test_same_seed_same_release_values():
    a, b = _releases(2), _releases(2)
    for x, y in zip(a, b, strict=True):
        assert x.to_message() == y.to_message()
    assert not np.array_equal(a[0].values, RAW)


def test_the_privatizer_keeps_its_budget_across_a_reset():
    priv = Privatizer(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=N), rng=secure_generator(1))
    priv.update([Chunk(np.arange(N) * 0.5, RAW)])
    priv.reset()
    (rel,) = priv.update([Chunk(np.arange(N) * 0.5, RAW)])
    assert rel.ledger["chunk_index"] == 1 and rel.ledger["epsilon_spent"] == 2 * priv.mechanism.epsilon_chunk
    assert priv.flush() == []


# ------------------------------------------------------------------ the typed status


def _bad(error: type[Exception], match: str, **fields):
    ((name, value),) = fields.items()
    return pytest.param(fields, error, match, id=f"{name}={value!r}")


@pytest.mark.parametrize(
    ("fields", "error", "match"),
    [
        _bad(TypeError, "released must be an int", released=True),
        _bad(TypeError, "received must be an int", received=1.0),
        _bad(TypeError, "late must be an int", late=np.int64(1)),
        _bad(TypeError, "subscribers must be an int", subscribers="2"),
        _bad(ValueError, "dropped_steps must be ≥ 0", dropped_steps=-1),
        _bad(TypeError, "epsilon_spent must be a float", epsilon_spent="52"),
        _bad(TypeError, "epsilon_spent must be a float", epsilon_spent=False),
        _bad(ValueError, "epsilon_spent must be finite", epsilon_spent=float("nan")),
        _bad(ValueError, "epsilon_spent must be finite and ≥ 0", epsilon_spent=-1.0),
        _bad(TypeError, "budget_exhausted must be a bool", budget_exhausted=1),
        _bad(TypeError, "budget_exhausted must be a bool", budget_exhausted=np.bool_(True)),
        _bad(TypeError, "mechanism must be a str", mechanism=b"dcfpa"),
        _bad(ValueError, "mechanism must be one of", mechanism="gaussian-noise"),
        _bad(TypeError, "event must be a StatusEvent", event="running"),
    ],
)
def test_session_status_refuses_wrong_fields(fields, error, match):
    with pytest.raises(error, match=match):
        SessionStatus(**{"mechanism": "dcfpa", **fields})


def test_session_status_is_frozen_and_slotted():
    s = SessionStatus(mechanism="lpa", epsilon_spent=3)
    assert s.epsilon_spent == 3.0 and type(s.epsilon_spent) is float
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.released = 2  # type: ignore[misc]
    assert not hasattr(s, "__dict__")


@pytest.mark.parametrize(
    "message",
    [
        [1, 2],
        {"mechanism": "dcfpa"},
        {**SessionStatus(mechanism="dcfpa").to_message(), "message": "raw"},
        {**SessionStatus(mechanism="dcfpa").to_message(), "event": "exploded"},
        {**SessionStatus(mechanism="dcfpa").to_message(), "released": "3"},
    ],
    ids=["not-a-map", "missing-fields", "unknown-field", "unknown-event", "wrong-type"],
)
def test_a_malformed_status_message_is_refused(message):
    with pytest.raises(InputError, match="status message"):
        SessionStatus.from_message(message)


@pytest.fixture
def status_socket():
    """The owner's loopback status socket with one live subscriber."""
    pub = StatusPublisher("tcp://127.0.0.1:0")
    sub = connect_subscriber(pub.endpoint, (STATUS_TOPIC,))
    try:
        # a PUB socket drops what it sends before the subscription arrives: send until one lands
        probe = SessionStatus(mechanism="dcfpa")
        for _ in range(100):
            pub.publish_status(probe)
            if sub.poll(50):
                sub.recv_multipart()
                break
        else:
            pytest.fail("the status subscriber never connected")
        yield pub, sub
    finally:
        sub.close(linger=0)
        pub.close()


@pytest.mark.parametrize("event", list(StatusEvent), ids=lambda e: e.value)
def test_status_round_trips_through_msgpack_on_the_owners_socket(event, status_socket):
    publisher, sub = status_socket
    while sub.poll(0):  # probes still in flight
        sub.recv_multipart()
    sent = SessionStatus(
        mechanism="dcfpa",
        received=1000,
        late=3,
        released=2,
        epsilon_spent=104.0,
        budget_exhausted=event is StatusEvent.BUDGET_EXHAUSTED,
        clipped_fraction=0.25,
        subscribers=1,
        event=event,
    )
    publisher.publish_status(sent)
    assert sub.poll(3000)
    topic, payload = sub.recv_multipart()
    assert topic == STATUS_TOPIC.encode()
    got = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    assert got["event"] == event.value and got["clipped_fraction"] == 0.25
    assert SessionStatus.from_message(got) == sent


def test_no_status_goes_out_on_the_sanitized_socket(subscribed, release):
    publisher, sub = subscribed
    publisher.publish_status(SessionStatus(mechanism="dcfpa", invalid=7, late=3, restarts=1))
    publisher.publish(release)  # sent after the status: once it arrives, the status would have
    assert sub.poll(3000)
    topic, _ = sub.recv_multipart()
    assert topic == b"streamdp.features.dcfpa" and not sub.poll(100)


@pytest.mark.parametrize(
    "endpoint",
    ["tcp://0.0.0.0:0", "tcp://*:0", "tcp://localhost:0", "tcp://192.168.1.10:5571", "tcp://eth0:5571", "udp://127.0.0.1:1"],
)
def test_the_status_socket_refuses_anything_but_loopback(endpoint):
    with pytest.raises(ValueError, match="status endpoint must be on a loopback address"):
        StatusPublisher(endpoint)


def test_the_status_socket_takes_releases_but_never_sends_them(status_socket, release):
    publisher, sub = status_socket
    while sub.poll(0):
        sub.recv_multipart()
    publisher.publish(release)
    with pytest.raises(TypeError, match="only a PrivateRelease"):
        publisher.publish({"values": [[0.5]]})  # type: ignore[arg-type]
    assert not sub.poll(100)
    publisher.close()
    with pytest.raises(RuntimeError, match="closed"):
        publisher.publish_status(SessionStatus(mechanism="dcfpa"))


def test_wait_for_subscribers_counts_real_subscriptions(publisher):
    assert not publisher.wait_for_subscribers(1, timeout=0.05)
    subs = [connect_subscriber(publisher.endpoint, (f"streamdp.topic{i}",)) for i in range(2)]
    try:
        assert publisher.wait_for_subscribers(2, timeout=5.0)
        assert publisher.subscriptions == 2
    finally:
        for s in subs:
            s.close(linger=0)
    with pytest.raises(ValueError, match="count must be ≥ 1"):
        publisher.wait_for_subscribers(0)


def test_a_topic_nobody_subscribes_to_is_not_packed_and_a_new_subscriber_hears_the_next_release(publisher):
    """What ZeroMQ would drop is neither built nor packed; the first subscription is heard before
    the next release, and the subscriber's leaving once the owner reads the subscriptions."""
    rels = iter(_releases(200, seed=None))
    packed: list[int] = []
    pack = publisher._pack
    publisher._pack = lambda message: packed.append(message["ledger"]["chunk_index"]) or pack(message)
    for _ in range(3):
        publisher.publish(next(rels))
    assert packed == []
    other = connect_subscriber(publisher.endpoint, ("streamdp.gaze.",))  # another topic: still nobody
    sub = connect_subscriber(publisher.endpoint, ("streamdp.features.",))
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    received: list[int] = []
    try:
        for rel in rels:  # until the subscription reaches the publisher: then every release packed arrives
            count = len(packed)
            publisher.publish(rel)
            if len(packed) == count:
                assert poller.poll(20) == []  # nothing packed, nothing sent (and a pause for the subscription)
            elif poller.poll(5000):
                received.append(msgpack.unpackb(sub.recv_multipart()[1])["ledger"]["chunk_index"])
            if len(received) == 3:
                break
        assert received == packed and len(received) == 3  # each packed release was heard, none before
        assert received == list(range(received[0], received[0] + 3))
    except BaseException:
        other.close(linger=0)
        raise
    finally:
        sub.close(linger=0)
    assert publisher.wait_for_subscribers(1, timeout=5.0)  # the gaze subscriber's alone
    deadline = time.monotonic() + 5.0
    while publisher.poll_subscriptions() > 1 and time.monotonic() < deadline:
        other.poll(10)  # nothing comes: a bounded wait for the unsubscription
    assert publisher.subscriptions == 1
    before = len(packed)
    for _ in range(2):
        publisher.publish(next(rels))
    assert len(packed) == before  # the features' subscriber left: nothing more packed
    other.close(linger=0)


# ------------------------------------------------------------------ the privatizer itself


def test_a_mechanism_outside_the_registry_is_refused_so_its_output_is_never_sealed():
    from streamdp.privacy.mechanisms import DCFPA

    class Passthrough(DCFPA):  # an honest-looking subclass that forgets the noise
        def privatize(self, x, rng):  # type: ignore[override]
            out = super().privatize(x, rng)
            return type(out)(np.asarray(x, dtype=float), out.clipped_fraction, out.k)

    mech = Passthrough(epsilon=1.0, bounds=default_profile(), chunk_length=N)
    with pytest.raises(TypeError, match="registered mechanisms"):
        Privatizer(mech, rng=secure_generator(0))


@pytest.mark.parametrize(
    "attribute, value",
    [
        ("mechanism", make_mechanism("lpa", epsilon=1e6, bounds=default_profile(), chunk_length=N)),
        ("rng", np.random.default_rng(0)),
        ("accountant", None),
        ("exhausted_message", None),
    ],
    ids=["swap-mechanism", "swap-generator", "swap-accountant", "clear-exhaustion"],
)
def test_the_privatizers_mechanism_noise_and_budget_cannot_be_swapped(attribute, value):
    priv = Privatizer(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=N), rng=secure_generator(0))
    with pytest.raises(AttributeError):
        setattr(priv, attribute, value)


def test_the_budget_spent_cannot_be_assigned_back_to_zero():
    priv = Privatizer(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=N), rng=secure_generator(0))
    priv.update([Chunk(np.arange(N) * 0.5, RAW.copy())])
    eps = priv.mechanism.epsilon_chunk
    assert priv.accountant.spent == eps > 0
    for name in ("spent", "released"):
        with pytest.raises(AttributeError):
            setattr(priv.accountant, name, 0)
    assert priv.accountant.spent == eps and priv.accountant.released == 1
