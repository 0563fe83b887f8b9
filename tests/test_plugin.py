"""The Capture plugin against a faithful stand-in of Capture's ``Plugin`` base class, ``g_pool``
and world loop (tests/pupil_standin), with a real ZeroMQ publisher and real msgpack."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.network.simulator import gaze_datums
from streamdp.pipeline import PrivatePipeline
from streamdp.privacy import dcfpa, default_profile, secure_generator
from streamdp.synthetic import generate

ROOT = Path(__file__).resolve().parents[1]
STANDIN = Path(__file__).resolve().parent / "pupil_standin"


@pytest.fixture(scope="module")
def capture():
    """Import the plugin as Capture does: its folder on sys.path, Capture's ``plugin`` module first."""
    sys.path[:0] = [str(STANDIN), str(ROOT / "plugins")]
    try:
        module = importlib.import_module("streamdp_capture")
        plugin_mod = importlib.import_module("plugin")
        world = importlib.import_module("tests.pupil_standin.world")
        yield module, plugin_mod, world
    finally:
        sys.path.remove(str(STANDIN))
        sys.path.remove(str(ROOT / "plugins"))
        sys.modules.pop("streamdp_capture", None)
        sys.modules.pop("plugin", None)


@pytest.fixture
def backbone(capture):
    """A SUB bound where the world's IPC publisher connects, subscribed to streamdp topics."""
    _, _, world = capture
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    port = sub.bind_to_random_port("tcp://127.0.0.1")
    sub.setsockopt(zmq.SUBSCRIBE, b"streamdp.")
    sub.setsockopt(zmq.SUBSCRIBE, b"notify.")
    pub = world.IPCPublisher(f"tcp://127.0.0.1:{port}")
    while True:  # until the subscription has reached the publisher
        pub.send({"topic": "streamdp.probe"})
        if sub.poll(50):
            sub.recv_multipart()
            break
    yield pub, sub
    while sub.poll(10):
        sub.recv_multipart()
    pub.close()
    sub.close(linger=0)


def _frames(recording, fps: float = 30.0):
    """Events per world frame, as Capture batches them: lists of gaze and blink datums."""
    frame: dict[str, list] = {"gaze": [], "blinks": []}
    t_next = float(recording.gaze.t[0]) + 1 / fps
    for datum in gaze_datums(recording):
        if datum["timestamp"] >= t_next:
            yield frame
            frame = {"gaze": [], "blinks": []}
            t_next += 1 / fps
        if datum["topic"].startswith("gaze."):
            frame["gaze"].append(datum)
        elif datum["topic"] == "blinks":
            frame["blinks"].append(datum)
    yield frame


REC = generate(duration=110.0, rate=200.0, seed=6).recording


def _run(capture, pub, settings, recording=REC):
    module, plugin_mod, world = capture
    g_pool = world.make_g_pool(pub)
    plugin_mod.Plugin_List(g_pool, [(module.StreamDP, settings)])
    published = []
    for events in _frames(recording):
        out = world.run_frame(g_pool, events)
        published += out.get("streamdp", [])
    return g_pool, published


def test_plugin_order_and_interface(capture):
    module, plugin_mod, _ = capture
    assert issubclass(module.StreamDP, plugin_mod.Plugin)
    assert module.StreamDP.order == 0.85 and module.StreamDP.uniqueness == "by_class"
    assert 0.8 < module.StreamDP.order < 0.9  # after the blink detector, before the recorder


def test_plugin_publishes_sanitized_chunks_equal_to_the_offline_pipeline(capture, backbone):
    pub, sub = backbone
    g_pool, published = _run(capture, pub, {"epsilon": 1.0, "chunk_length": 32, "seed": 3})
    want = PrivatePipeline(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=32), rng=secure_generator(3)).run(
        REC
    )
    assert len(published) >= len(want) - 1 >= 3
    received = []
    while sub.poll(500):
        topic, payload = sub.recv_multipart()
        if topic.startswith(b"streamdp.features."):
            received.append(msgpack.unpackb(payload, raw=False))
    assert len(received) == len(published)  # everything the plugin added went out on the backbone
    for msg, rel in zip(received, want, strict=False):
        assert msg["topic"] == "streamdp.features.dcfpa"
        np.testing.assert_array_equal(np.array(msg["values"]), rel.values)
    plugin = next(iter(g_pool.plugins))
    assert plugin.status.startswith(f"{len(published)} chunks released, ε spent {52 * len(published):g}")


def test_get_init_dict_round_trips_through_the_plugin_list(capture, backbone):
    module, plugin_mod, world = capture
    pub, _ = backbone
    settings = {"epsilon": 2.5, "chunk_length": 64, "mechanism": "cfpa", "k": 2, "unit": "session", "budget": 1000.0}
    g_pool = world.make_g_pool(pub)
    plugins = plugin_mod.Plugin_List(g_pool, [(module.StreamDP, settings)])
    ((name, saved),) = plugins.get_initializers()
    assert name == "StreamDP" and {k: saved[k] for k in settings} == settings
    g2 = world.make_g_pool(pub)
    again = plugin_mod.Plugin_List(g2, [(module.StreamDP, saved)])
    assert next(iter(again)).get_init_dict() == saved
    assert next(iter(again)).pipeline.privatizer.mechanism.name == "cfpa"


def test_plugin_works_headless_and_builds_its_menu(capture, backbone):
    pub, _ = backbone
    g_pool, _ = _run(capture, pub, {"chunk_length": 32}, generate(duration=5.0, seed=1).recording)
    plugin = next(iter(g_pool.plugins))
    assert plugin.menu.label == "StreamDP" and plugin.menu in g_pool.menubar
    plugin.deinit_ui()
    assert g_pool.menubar == []


def test_bad_datums_in_events_are_skipped_and_counted(capture, backbone):
    module, plugin_mod, world = capture
    pub, _ = backbone
    g_pool = world.make_g_pool(pub)
    plugin_mod.Plugin_List(g_pool, [(module.StreamDP, {"chunk_length": 32})])
    bad = [
        {"timestamp": "x"},
        {"norm_pos": [0.5, 0.5]},
        7,
        {"timestamp": 1.0, "norm_pos": [np.nan, 0.5], "confidence": 1.0},
    ]
    plugin = next(iter(g_pool.plugins))
    events = {"gaze": bad, "blinks": [{"type": "onset"}]}
    plugin.recent_events(events)
    assert "streamdp" not in events
    assert plugin.invalid == 5
    assert "5 datums skipped" in plugin.status


def test_settings_change_is_validated_and_keeps_the_budget_spent(capture, backbone):
    pub, _ = backbone
    g_pool, published = _run(capture, pub, {"chunk_length": 32, "unit": "session", "budget": 10_000.0})
    plugin = next(iter(g_pool.plugins))
    spent = plugin.pipeline.privatizer.accountant.spent
    assert spent == 52 * len(published) > 0
    assert not plugin.update_settings(epsilon=-1.0)
    assert "epsilon must be finite and > 0" in plugin.error and plugin.epsilon == 1.0
    plugin.epsilon = 2.0
    assert plugin.error == "" and plugin.epsilon == 2.0
    assert plugin.pipeline.privatizer.accountant.spent == spent


def test_budget_cap_stops_the_plugin_releasing(capture, backbone):
    pub, _ = backbone
    g_pool, published = _run(capture, pub, {"chunk_length": 32, "unit": "session", "budget": 52.0 * 2})
    plugin = next(iter(g_pool.plugins))
    assert len(published) == 2
    assert plugin.status.startswith("budget spent")
