"""The plugin held to what Capture really does (pupil-labs/pupil, pupil_src, v3.6), through the
stand-ins written from that source (tests/pupil_standin):

- the notifications it meets: it reacts to no subject (Capture announces neither a new clock nor
  a Pupil Remote restart; ``world_process.adapting_clock`` is sent by nothing in Capture);
- the privacy check at start and whenever the Network API plugin restarts Pupil Remote (replaced,
  stopped, rebound from its menu), its verdict in the menu, red unless private;
- the menu action that sets Pupil Remote to 127.0.0.1: the notification it sends is the one
  Capture's world process acts on, and afterwards the system's table of listening sockets shows
  Pupil Remote on loopback only;
- Time Sync's slews continue the session on the same public grid; its jumps and ``T`` restart it.
"""

from __future__ import annotations

import inspect
import socket
import sys

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.capture import watch
from streamdp.network.listening import listening_sockets
from streamdp.synthetic import generate

from .pupil_standin import WorldFrame, capture_plugin_environment, time_sync, world_frames

SMALL = {"chunk_length": 8, "window": 4.0, "step": 0.5, "bind": None}
linux_only = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/net/tcp for where ports listen")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def capture():
    """The stand-in Capture: its backbone's SUB side bound on loopback (``g_pool.ipc_sub_url``, as
    ``main.py`` hands it to the world), the world's publisher, a free Pupil Remote port."""
    with capture_plugin_environment() as env:
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.linger = 0
        port = sub.bind_to_random_port("tcp://127.0.0.1")
        sub.subscribe(b"notify.")
        pub = env.world.IPCPublisher(f"tcp://127.0.0.1:{port}")
        while True:  # until the connection stands: a PUB drops what it sends before
            pub.notify({"subject": "probe"})
            if sub.poll(50):
                sub.recv_multipart()
                break
        g_pool = env.world.make_g_pool(
            pub,
            plugins=(env.NetworkApiPlugin, env.module.StreamDP),
            remote_port=free_port(),
            ipc_sub_url=f"tcp://127.0.0.1:{port}",
        )
        try:
            yield env, g_pool, sub
        finally:
            if g_pool.plugins is not None:
                env.world.shutdown(g_pool)
            pub.close()
            sub.close(linger=0)


def start(env, g_pool, network_api=None, **settings):
    plugins = [(env.module.StreamDP, {**SMALL, **settings})]
    if network_api is not None:
        plugins.insert(0, (env.NetworkApiPlugin, network_api))
    env.plugin.Plugin_List(g_pool, plugins)
    return next(p for p in g_pool.plugins if p.class_name == "StreamDP")


def frame(env, g_pool):
    env.world.run_frame(g_pool, {"gaze": [], "blinks": []})


def listening_on(port: int) -> set[str]:
    return {s.address for s in listening_sockets() if s.port == port}


def verdict_element(plugin):
    return next(e for e in plugin.menu if type(e).__name__ == "Info_Text" and e.text == plugin.privacy)


# ---------------------------------------------------------------- notifications

#: subjects Capture sends to every plugin, each from its source; none is a new clock
CAPTURE_SUBJECTS = {
    "recording.should_start": "network_api/controller/pupil_remote_controller.py (R)",
    "recording.started": "recorder.py",
    "time_sync.master_announcement": "time_sync.py",
    "eye_process.started": "launchables/eye.py",
    "world_process.started": "launchables/world.py",
    "frame_publishing.started": "network_api/network_api_plugin.py",
    "start_plugin": "launchables/world.py (another plugin)",
    "world_process.adapting_clock": "nowhere: Capture never sends it (any plugin may)",
}


def test_the_subjects_the_plugin_meets_are_listed_with_capture_s_source():
    assert set(watch.NOTIFICATION_SUBJECTS) == {"start_plugin", "stop_plugin", "(any)"}
    for subject, (source, _) in watch.NOTIFICATION_SUBJECTS.items():
        assert source.startswith("launchables/world.py"), subject


def test_no_capture_notification_restarts_the_session_unless_the_clock_jumped(capture):
    env, g_pool, _ = capture
    plugin = start(env, g_pool)
    frame(env, g_pool)
    for subject in CAPTURE_SUBJECTS:
        env.world.deliver_notification(g_pool, {"subject": subject, "name": "Unknown_Plugin"})
    assert plugin.session.counters.restarts == 0
    env.world.set_clock(g_pool, g_pool.get_timestamp() - 5.0)  # Pupil Remote's T: nothing is notified
    env.world.deliver_notification(g_pool, {"subject": "recording.should_start", "session_name": ""})
    frame(env, g_pool)
    assert plugin.session.counters.restarts == 1  # once, at the first look after T


def test_the_plugin_source_names_no_notification_capture_never_sends():
    with capture_plugin_environment() as env:
        source = inspect.getsource(env.module)
    assert "adapting_clock" not in source


# ---------------------------------------------------------------- the privacy check


@linux_only
def test_pupil_remote_on_every_interface_is_not_private_and_shown_in_red(capture):
    env, g_pool, _ = capture
    plugin = start(env, g_pool, network_api={})  # Capture's default: host "*"
    frame(env, g_pool)
    port = g_pool.preferred_remote_port
    assert listening_on(port) == {"0.0.0.0"}
    assert plugin.private is False
    assert plugin.privacy.startswith(f"NOT private: reachable beyond loopback: Pupil Remote port {port}")
    assert verdict_element(plugin).text_color == env.module._RED


@linux_only
def test_the_menu_action_sends_the_notification_capture_acts_on_and_pupil_remote_moves_to_loopback(capture):
    env, g_pool, backbone = capture
    plugin = start(env, g_pool, network_api={"format": "bgr"})
    frame(env, g_pool)
    port = g_pool.preferred_remote_port
    assert plugin.private is False
    old = next(p for p in g_pool.plugins if p.class_name == "NetworkApiPlugin")
    button = next(e for e in plugin.menu if type(e).__name__ == "Button")
    button.click()
    # what went onto Capture's backbone, read back as Capture's world process reads it
    assert backbone.poll(5000)
    topic, payload = backbone.recv_multipart()
    notification = msgpack.unpackb(payload, raw=False)
    assert topic == b"notify.start_plugin"
    assert notification["subject"] == "start_plugin" and notification["name"] in g_pool.plugin_by_name
    assert notification["args"] == {"format": "bgr", "host": "127.0.0.1", "use_primary_interface": False}
    env.world.deliver_notification(g_pool, notification)
    new = next(p for p in g_pool.plugins if p.class_name == "NetworkApiPlugin")
    assert new is not old and new.get_init_dict()["format"] == "bgr"  # the frame publisher's format kept
    assert listening_on(port) == {"127.0.0.1"}
    frame(env, g_pool)  # the plugin notices the restart at the next frame and checks again
    assert plugin.private is True and plugin.privacy.startswith("private")
    assert verdict_element(plugin).text_color == env.module._GREEN


@linux_only
def test_a_restart_from_the_network_api_menu_is_noticed_without_any_notification(capture):
    env, g_pool, _ = capture
    plugin = start(env, g_pool, network_api={"host": "127.0.0.1", "use_primary_interface": False})
    frame(env, g_pool)
    assert plugin.private is True
    controller = next(p for p in g_pool.plugins if p.class_name == "NetworkApiPlugin").pupil_remote_menu
    controller.use_primary_interface = True  # the menu's switch: tcp://*:port
    frame(env, g_pool)
    assert plugin.private is False
    controller.use_primary_interface = False
    other = free_port()
    controller.custom_address = f"127.0.0.1:{other}"
    frame(env, g_pool)
    assert plugin.private is True and listening_on(other) == {"127.0.0.1"}
    controller.custom_address = f"0.0.0.0:{other}"
    frame(env, g_pool)
    assert plugin.private is False and f"Pupil Remote port {other}" in plugin.privacy
    env.world.deliver_notification(g_pool, {"subject": "stop_plugin", "name": "NetworkApiPlugin"})
    frame(env, g_pool)
    assert plugin.private is True  # Pupil Remote closed; the backbone listens on loopback


@linux_only
def test_the_check_runs_at_start_and_at_each_restart_only(capture, monkeypatch):
    env, g_pool, _ = capture
    runs = []
    real = env.module.check_capture
    monkeypatch.setattr(env.module, "check_capture", lambda *a, **k: runs.append(1) or real(*a, **k))
    start(env, g_pool, network_api={})
    for _ in range(30):
        frame(env, g_pool)
    assert len(runs) == 1
    controller = next(p for p in g_pool.plugins if p.class_name == "NetworkApiPlugin").pupil_remote_menu
    controller.primary_port = free_port()  # the menu's port field
    for _ in range(30):
        frame(env, g_pool)
    assert len(runs) == 2


def test_a_settings_change_is_checked_again(capture):
    env, g_pool, _ = capture
    plugin = start(env, g_pool, bind="tcp://127.0.0.1:0", status_bind="tcp://127.0.0.1:0")
    frame(env, g_pool)
    assert plugin.private is True
    # seeded noise goes onto Capture's backbone in events, and here onto the endpoint too
    assert plugin.update_settings(seed=5, publish_reproducible_noise_not_private=True)
    frame(env, g_pool)
    assert plugin.private is False and plugin.privacy.startswith("NOT private") and "seed" in plugin.privacy
    assert plugin.update_settings(seed=None)
    frame(env, g_pool)
    assert plugin.private is True


def test_a_check_that_cannot_tell_says_so_in_red(capture):
    env, g_pool, _ = capture
    g_pool.ipc_sub_url = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    plugin = start(env, g_pool)
    frame(env, g_pool)
    assert plugin.private is None and plugin.privacy.startswith("could not check")
    assert verdict_element(plugin).text_color == env.module._RED


# ---------------------------------------------------------------- Time Sync

REC = generate(duration=120.0, rate=120.0, seed=8).recording


def synced_frames(g_pool, measurements: list[tuple[float, float]]):
    """World frames of REC on a Pupil clock Time Sync adjusts: at each ``(pupil_time, offset)``
    the follower measured ``offset`` and acts as ``Clock_Sync_Follower.run`` does; Pupil time,
    and so every later timestamp, moves by minus what it adds to the timebase."""
    steps = sorted((t + after, amount) for t, offset in measurements for after, amount in time_sync.adjustments(offset))
    shift = 0.0
    for events in world_frames(REC):
        at = events["frame"].timestamp
        while steps and steps[0][0] <= at:
            _, amount = steps.pop(0)
            time_sync.slew_time(g_pool, amount)
            shift -= amount
        events["frame"] = WorldFrame(at + shift, events["frame"].index)
        for datum in events["gaze"]:
            datum["timestamp"] += shift
            for base in datum.get("base_data", []):
                base["timestamp"] += shift
        yield events


def run_synced(env, g_pool, measurements, plugin=None):
    plugin = plugin or start(env, g_pool)
    published = []
    for events in synced_frames(g_pool, measurements):
        published += env.world.run_frame(g_pool, events).get("streamdp", [])
    return plugin, published


def every_ten_seconds(offset: float) -> list[tuple[float, float]]:
    """The follower's schedule: ``interval`` (10 s) plus ``random()`` between measurements."""
    rng = np.random.default_rng(3)
    t0, out, at = float(REC.gaze.t[0]), [], 10.0
    while at < 120.0:
        out.append((t0 + at, offset))
        at += time_sync.INTERVAL + float(rng.random())
    return out


@pytest.mark.parametrize("offset", [0.3e-3, -0.3e-3, 5e-3], ids=["slew-0.3ms-back", "slew-0.3ms-ahead", "slew-5ms"])
def test_time_sync_slews_continue_the_session_on_the_same_public_grid(capture, offset):
    env, g_pool, _ = capture
    measurements = every_ten_seconds(offset)
    assert len(measurements) >= 10
    plugin, slewed = run_synced(env, g_pool, measurements)
    assert abs(g_pool.timebase.value - offset * len(measurements)) < 1e-9  # the clock did move
    env.world.shutdown(g_pool)
    g_pool.timebase.value = 0.0
    _, steady = run_synced(env, g_pool, [])
    assert plugin.session.counters.restarts == 0
    assert len(slewed) == len(steady) >= 20
    assert [d["t"] for d in slewed] == [d["t"] for d in steady]  # the same public grid


def test_a_one_second_jump_restarts_the_session(capture):
    env, g_pool, _ = capture
    t0 = float(REC.gaze.t[0])
    assert time_sync.adjustments(1.0) == [(0.0, 1.0)]  # beyond min_jump: one jump
    plugin, published = run_synced(env, g_pool, [(t0 + 60.0, 1.0)])
    assert plugin.session.counters.restarts == 1
    assert published  # the session went on after the new segment's window filled


def test_a_jump_is_one_line_on_the_status_socket_as_the_relay_says_it(capture):
    env, g_pool, _ = capture
    plugin = start(env, g_pool, bind="tcp://127.0.0.1:0", status_bind="tcp://127.0.0.1:0", status_interval=1e6)
    status = zmq.Context.instance().socket(zmq.SUB)
    status.linger = 0
    status.connect(plugin.endpoint.status.endpoint)
    status.subscribe(b"streamdp.status")
    try:
        for _ in range(200):  # until the subscription stands: a PUB drops what it sends before
            plugin.session.publish_status()
            if status.poll(50):
                break
        while status.poll(200):
            status.recv_multipart()
        t0 = float(REC.gaze.t[0])
        run_synced(env, g_pool, [(t0 + 40.0, 1.0), (t0 + 80.0, -2.0)], plugin=plugin)
        events = []
        while status.poll(1000):
            events.append(msgpack.unpackb(status.recv_multipart()[1], raw=False)["event"])
    finally:
        status.close()
    assert plugin.session.counters.restarts == 2
    assert events.count("clock_jumped") == 2, events


def test_the_threshold_is_the_public_jump_threshold_whatever_the_reorder_window(capture):
    """0.1 s (``CLOCK_JUMP_THRESHOLD``, the relay's too): no longer the ticks' reorder window,
    which is 34 ms by default and would take a slow read of the clock for a jump."""
    env, g_pool, _ = capture
    plugin = start(env, g_pool, reorder_window=0.02)
    frame(env, g_pool)
    time_sync.slew_time(g_pool, 0.09)
    frame(env, g_pool)
    assert plugin.session.counters.restarts == 0
    time_sync.slew_time(g_pool, 0.11)
    frame(env, g_pool)
    assert plugin.session.counters.restarts == 1
