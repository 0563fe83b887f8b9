"""The Capture plugin's own sanitized endpoint, in the stand-in of Capture's world loop: chunks
to a CURVE client with an allowed key and to nobody else, the owner's status socket on loopback
only, bad endpoint settings refused in one line with Capture going on, the port given back when
Capture cleans the plugin up, and the subscriber count its menu shows."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import msgpack
import pytest
import zmq
import zmq.auth

from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.synthetic import generate

from .pupil_standin import capture_plugin_environment, world_frames

REC = generate(duration=70.0, rate=120.0, seed=4).recording
SMALL = {"chunk_length": 8, "window": 4.0, "step": 0.5}
LOOPBACK = {"bind": "tcp://127.0.0.1:0", "status_bind": "tcp://127.0.0.1:0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _can_listen(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def port_is_free(port: int, timeout: float = 5.0) -> bool:
    """Whether this process can listen on 127.0.0.1:``port`` (the plugin gave it back): ZeroMQ
    closes a listening socket in its I/O thread just after ``close()``, so the port is tried
    until ``timeout`` (the OS, not a message, is waited for)."""
    deadline = time.monotonic() + timeout
    while not _can_listen(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def capture():
    """The stand-in Capture; every world started in a test is shut down after it, whatever failed."""
    with capture_plugin_environment() as env:
        pub = env.world.IPCPublisher("tcp://127.0.0.1:9")  # the backbone is not what is tested here
        env.started = []
        try:
            yield env, pub
        finally:
            for g_pool in env.started:
                env.world.shutdown(g_pool)
            pub.close()


def start(env, pub, settings):
    g_pool = env.world.make_g_pool(pub, plugins=(env.module.StreamDP,))
    env.started.append(g_pool)
    env.plugin.Plugin_List(g_pool, [(env.module.StreamDP, settings)])
    return g_pool, next(iter(g_pool.plugins))


def run(env, g_pool, recording=REC):
    published = []
    for events in world_frames(recording):
        published += env.world.run_frame(g_pool, events).get("streamdp", [])
    return published


def receive_all(sub: zmq.Socket, timeout_ms: int = 1000, *, topics: list[bytes] | None = None) -> list[dict]:
    """Every message until none comes for ``timeout_ms``; their topic frames go to ``topics``."""
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    out = []
    while poller.poll(timeout_ms):
        topic, payload = sub.recv_multipart()
        out.append(msgpack.unpackb(payload, raw=False))
        if topics is not None:
            topics.append(topic)
    return out


@pytest.fixture
def certificates(tmp_path):
    keys = tmp_path / "keys"
    clients = tmp_path / "clients"
    keys.mkdir()
    clients.mkdir()
    server_pub, server_sec = zmq.auth.create_certificates(keys, "server")
    allowed_pub, allowed_sec = zmq.auth.create_certificates(keys, "allowed")
    _, stranger_sec = zmq.auth.create_certificates(keys, "stranger")
    (clients / "allowed.key").write_bytes(Path(allowed_pub).read_bytes())
    return {
        "server_pub": server_pub,
        "server_sec": server_sec,
        "clients": clients,
        "allowed": allowed_sec,
        "stranger": stranger_sec,
    }


def test_the_plugin_serves_its_chunks_to_an_allowed_curve_client_and_to_nobody_else(capture, certificates):
    env, pub = capture
    settings = {
        **SMALL,
        **LOOPBACK,
        "curve_secret": str(certificates["server_sec"]),
        "curve_clients": str(certificates["clients"]),
    }
    g_pool, plugin = start(env, pub, settings)
    endpoint = plugin.endpoint.endpoint
    server_key = certificates["server_pub"]
    topics = ("streamdp.features.",)
    good = connect_subscriber(
        endpoint, topics, server_public_key=server_key, client_certificate=certificates["allowed"]
    )
    stranger = connect_subscriber(
        endpoint, topics, server_public_key=server_key, client_certificate=certificates["stranger"]
    )
    plain = connect_subscriber(endpoint, topics)
    try:
        assert plugin.endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
        published = run(env, g_pool)
        received = receive_all(good)
        assert len(published) >= 10
        # the same chunks as went into Capture's events (which add the recorder's timestamp)
        assert received == [{k: v for k, v in d.items() if k != "timestamp"} for d in published]
        assert receive_all(stranger, 200) == [] and receive_all(plain, 200) == []
        assert plugin.subscribers == 1  # only the allowed client got in
        assert plugin.endpoint_text == f"{endpoint} (CURVE on: allowed clients only)"
    finally:
        for s in (good, stranger, plain):
            s.close(linger=0)
        env.world.shutdown(g_pool)


def test_the_menu_shows_the_endpoint_curve_and_the_subscriber_count(capture):
    env, pub = capture
    g_pool, plugin = start(env, pub, {**SMALL, **LOOPBACK})
    shown = {getattr(e, "label", None): e for e in plugin.menu}
    assert shown["Endpoint"].value == f"{plugin.endpoint.endpoint} (CURVE off: this machine only)"
    assert shown["Subscribers"].value == 0
    subs = [connect_subscriber(plugin.endpoint.endpoint, ("streamdp.features.",)) for _ in range(2)]
    try:
        # two subscribers of one topic are two (XPUB_VERBOSER; without it ZeroMQ reports the first only)
        assert plugin.endpoint.publisher.wait_for_subscribers(2, timeout=10.0)
        assert shown["Subscribers"].value == 2
        subs.pop().close(linger=0)
        deadline = time.monotonic() + 10.0
        while plugin.subscribers != 1 and time.monotonic() < deadline:
            plugin.endpoint.publisher._socket.poll(50)  # the unsubscription arrives on the socket
        assert shown["Subscribers"].value == 1
        assert any("Capture's backbone carries raw gaze too" in getattr(e, "text", "") for e in plugin.menu)
    finally:
        for s in subs:
            s.close(linger=0)
        env.world.shutdown(g_pool)


def test_the_owners_status_goes_to_the_loopback_status_socket_and_never_to_the_sanitized_one(capture):
    env, pub = capture
    g_pool, plugin = start(env, pub, {**SMALL, **LOOPBACK, "status_interval": 5.0})
    status = connect_subscriber(plugin.endpoint.status.endpoint, ("streamdp.status",))
    sanitized = connect_subscriber(plugin.endpoint.endpoint, ("",))
    try:
        assert plugin.endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
        published = run(env, g_pool)
        plugin.check_privacy()  # nothing of the check goes onto either socket
        statuses = receive_all(status)
        topics: list[bytes] = []
        assert len(receive_all(sanitized, topics=topics)) == len(published) >= 10
        assert len(statuses) >= 10  # one per 5 s of Pupil time over 70 s
        # the last status is at most 5 s old: chunks 4 s apart, at most 2 released since
        assert statuses[-1]["released"] >= len(published) - 2
        assert set(topics) == {b"streamdp.features.dcfpa"}  # no status on the sanitized socket
    finally:
        status.close(linger=0)
        sanitized.close(linger=0)
        env.world.shutdown(g_pool)


@pytest.mark.parametrize(
    "status_bind",
    ["tcp://0.0.0.0:{port}", "tcp://*:{port}", "tcp://192.168.1.20:{port}", "tcp://localhost:{port}"],
    ids=["all-ipv4", "star", "lan-address", "a-name-not-an-address"],
)
def test_the_status_socket_refuses_a_non_loopback_bind_and_nothing_is_left_open(capture, status_bind):
    env, pub = capture
    sanitized_port = free_port()
    settings = {
        **SMALL,
        "bind": f"tcp://127.0.0.1:{sanitized_port}",
        "status_bind": status_bind.format(port=free_port()),
    }
    g_pool, plugin = start(env, pub, settings)
    assert plugin.endpoint is None
    assert "status endpoint must be on a loopback address" in plugin.endpoint_error
    assert plugin.endpoint_text.startswith("closed: status endpoint must be on a loopback address")
    assert _can_listen(sanitized_port)  # the sanitized socket was not opened either
    assert len(run(env, g_pool, generate(duration=40.0, rate=120.0, seed=1).recording)) >= 3  # Capture goes on
    env.world.shutdown(g_pool)


BAD_ENDPOINTS = [
    ("beyond-loopback-without-curve", {"bind": "tcp://0.0.0.0:0"}, "refusing to publish sanitized features beyond"),
    ("curve-secret-alone", {"curve_secret": "server.key_secret"}, "CURVE needs both curve_secret and curve_clients"),
    ("curve-secret-missing", {"curve_secret": "/no/such.key_secret", "curve_clients": "."}, "no such certificate file"),
    ("clients-folder-missing", {"curve_secret": "x", "curve_clients": "/no/such/folder"}, "no such folder of allowed"),
    ("seeded-noise", {"seed": 3}, "seed 3: seeded noise is reproducible, not private"),
    ("no-scheme", {"bind": "127.0.0.1:5570"}, "bind must be a ZeroMQ address (e.g. tcp://127.0.0.1:5570), got"),
    ("port-in-use", {"bind": "tcp://127.0.0.1:{taken}"}, "the address is already in use"),
    ("status-no-scheme", {"status_bind": "127.0.0.1:5571"}, "status_bind must be a ZeroMQ address"),
    ("bind-not-a-str", {"bind": 5570}, "bind must be a str or None, got 5570"),
    ("bind-empty", {"bind": ""}, "bind must not be empty"),
    ("insecure-not-a-bool", {"insecure": "yes"}, "insecure must be a bool, got 'yes'"),
    ("status-interval-zero", {"status_interval": 0}, "status_interval must be a finite number of seconds > 0, got 0"),
    ("status-bind-not-a-str", {"status_bind": None}, "status_bind must be a str, got None"),
]


@pytest.fixture
def taken_port():
    """A port another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def with_port(bad: dict, port: int) -> dict:
    return {k: v.format(taken=port) if isinstance(v, str) else v for k, v in bad.items()}


@pytest.mark.parametrize("bad, message", [b[1:] for b in BAD_ENDPOINTS], ids=[b[0] for b in BAD_ENDPOINTS])
def test_bad_endpoint_settings_are_one_line_in_the_menu_and_capture_goes_on(capture, taken_port, bad, message):
    env, pub = capture
    g_pool, plugin = start(env, pub, {**SMALL, **LOOPBACK, **with_port(bad, taken_port)})
    assert plugin.endpoint is None
    assert message in plugin.endpoint_error and "\n" not in plugin.endpoint_error
    assert run(env, g_pool, generate(duration=40.0, rate=120.0, seed=1).recording)  # into events, as before
    env.world.shutdown(g_pool)


@pytest.mark.parametrize("bad, message", [b[1:] for b in BAD_ENDPOINTS], ids=[b[0] for b in BAD_ENDPOINTS])
def test_a_bad_endpoint_change_is_refused_and_the_running_endpoint_goes_on(capture, taken_port, bad, message):
    env, pub = capture
    bad = with_port(bad, taken_port)
    g_pool, plugin = start(env, pub, {**SMALL, **LOOPBACK})
    endpoint, session = plugin.endpoint, plugin.session
    sub = connect_subscriber(endpoint.endpoint, ("streamdp.features.",))
    try:
        assert endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
        assert not plugin.update_settings(**bad)
        assert message in plugin.error and plugin.session is session
        assert plugin.get_init_dict()["bind"] == LOOPBACK["bind"]
        published = run(env, g_pool, generate(duration=40.0, rate=120.0, seed=1).recording)
        assert plugin.endpoint is not None and plugin.endpoint.endpoint == endpoint.endpoint
        assert len(receive_all(sub)) == len(published) >= 3
    finally:
        sub.close(linger=0)
        env.world.shutdown(g_pool)


def test_moving_the_endpoint_keeps_the_budget_and_serves_on_the_new_address(capture):
    env, pub = capture
    g_pool, plugin = start(env, pub, {**SMALL, **LOOPBACK, "unit": "session", "budget": 1e6})
    run(env, g_pool, generate(duration=40.0, rate=120.0, seed=1).recording)
    spent = plugin.session.status().epsilon_spent
    old = plugin.endpoint.endpoint
    new_port = free_port()
    plugin.bind = f"tcp://127.0.0.1:{new_port}"  # as typed into the menu
    assert plugin.error == "" and plugin.endpoint.endpoint == f"tcp://127.0.0.1:{new_port}"
    assert plugin.session.status().epsilon_spent == spent
    assert port_is_free(int(old.rsplit(":", 1)[1]))
    plugin.bind = ""  # the menu's empty field: no endpoint
    assert plugin.endpoint is None and plugin.endpoint_text.startswith("off")
    env.world.shutdown(g_pool)


@pytest.mark.parametrize("how", ["stop_plugin", "shutdown", "replaced"])
def test_capture_cleaning_the_plugin_up_closes_its_endpoint(capture, how):
    env, pub = capture
    port = free_port()
    settings = {**SMALL, "bind": f"tcp://127.0.0.1:{port}", "status_bind": "tcp://127.0.0.1:0"}
    g_pool, plugin = start(env, pub, settings)
    assert not _can_listen(port)
    if how == "stop_plugin":  # the plugin manager's switch, or a notification through Pupil Remote
        env.world.deliver_notification(g_pool, {"subject": "stop_plugin", "name": "StreamDP"})
    elif how == "shutdown":
        env.world.shutdown(g_pool)
    else:  # start_plugin of the same class: Capture cleans the old one up before building the new
        env.world.deliver_notification(g_pool, {"subject": "start_plugin", "name": "StreamDP", "args": settings})
        (new,) = list(g_pool.plugins)
        assert new is not plugin and new.endpoint.endpoint == f"tcp://127.0.0.1:{port}"
        new.cleanup()
    assert plugin.endpoint is None and plugin not in list(g_pool.plugins)
    assert port_is_free(port)


def test_the_endpoint_settings_round_trip_through_capture_s_session(capture):
    env, pub = capture
    settings = {**SMALL, **LOOPBACK, "status_interval": 3.0, "insecure": False}
    g_pool, _ = start(env, pub, settings)
    ((_, saved),) = g_pool.plugins.get_initializers()
    assert {k: saved[k] for k in settings} == settings
    assert saved["curve_secret"] is None and saved["publish_reproducible_noise_not_private"] is False
    env.world.shutdown(g_pool)


def test_seeded_noise_is_served_only_when_asked_for_explicitly(capture):
    env, pub = capture
    g_pool, plugin = start(env, pub, {**SMALL, **LOOPBACK, "seed": 1, "publish_reproducible_noise_not_private": True})
    sub = connect_subscriber(plugin.endpoint.endpoint, ("streamdp.features.",))
    try:
        assert plugin.endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
        published = run(env, g_pool, generate(duration=40.0, rate=120.0, seed=1).recording)
        assert len(receive_all(sub)) == len(published) >= 3
    finally:
        sub.close(linger=0)
        env.world.shutdown(g_pool)


def test_xpub_counts_every_subscriber_of_a_topic():
    publisher = ReleasePublisher("tcp://127.0.0.1:0")
    subs = [connect_subscriber(publisher.endpoint, ("streamdp.features.",)) for _ in range(3)]
    try:
        assert publisher.wait_for_subscribers(3, timeout=10.0)
    finally:
        for s in subs:
            s.close(linger=0)
        publisher.close()
