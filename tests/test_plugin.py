"""The Capture plugin against a faithful stand-in of Capture's ``Plugin`` base class, ``g_pool``
and world loop (tests/pupil_standin), with a real ZeroMQ publisher and real msgpack."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.privacy.mechanisms import MECHANISMS
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

from .pupil_standin import capture_plugin_environment, world_frames


@pytest.fixture(scope="module")
def capture():
    """The plugin imported as Capture does, with the stand-in's ``plugin`` module and world."""
    with capture_plugin_environment() as env:
        env.world.Recorder = env.Recorder
        yield env.module, env.plugin, env.world


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


def _frames(recording):
    return world_frames(recording)


REC = generate(duration=110.0, rate=200.0, seed=6).recording
#: no endpoint of its own: these tests are about the session inside Capture (the endpoint's are
#: in test_plugin_endpoint.py), and the default port is the relay's
OFF = {"bind": None}


def _run(capture, pub, settings, recording=REC, plugins=()):
    module, plugin_mod, world = capture
    g_pool = world.make_g_pool(pub)
    plugin_mod.Plugin_List(g_pool, [(module.StreamDP, {**OFF, **settings}), *plugins])
    published = []
    for events in _frames(recording):
        out = world.run_frame(g_pool, events)
        published += out.get("streamdp", [])
    return g_pool, published


def _end_of_stream(capture, g_pool):
    """Capture's clock is set anew (Pupil Remote's ``T``, no notification): the session finishes
    what it holds at the next frame, which carries it."""
    _, _, world = capture
    world.set_clock(g_pool, g_pool.get_timestamp() - 1000.0)
    return world.run_frame(g_pool, {"gaze": [], "blinks": []}).get("streamdp", [])


def _receive(sub):
    received = []
    while sub.poll(500):
        topic, payload = sub.recv_multipart()
        if topic.startswith(b"streamdp.features."):
            received.append(msgpack.unpackb(payload, raw=False))
    return received


def test_plugin_order_and_interface(capture):
    module, plugin_mod, _ = capture
    assert issubclass(module.StreamDP, plugin_mod.Plugin)
    assert module.StreamDP.order == 0.85 and module.StreamDP.uniqueness == "by_class"
    assert 0.8 < module.StreamDP.order < 0.9  # after the blink detector, before the recorder


def test_plugin_publishes_the_releases_of_the_session_core(capture, backbone):
    pub, sub = backbone
    g_pool, published = _run(capture, pub, {"epsilon": 1.0, "chunk_length": 32, "seed": 3})
    published += _end_of_stream(capture, g_pool)
    sink = CollectingSink()
    Session.for_recording(SessionConfig(epsilon=1.0, chunk_length=32), REC, sinks=[sink], seed=3).run(REC)
    want = [r.to_message() for r in sink.releases]
    assert len(want) >= 3
    received = _receive(sub)
    assert received == published  # everything the plugin added went out on the backbone
    for msg in published:
        assert msg.pop("timestamp") == msg["t"][-1]  # for Capture's recorder: the last step time
    assert published == want
    plugin = next(iter(g_pool.plugins))
    # ε is the total per chunk
    n = len(published)
    assert plugin.status.startswith(f"{n} chunks released, ε spent {n:g} (dcfpa, ε 1 per chunk)")


def test_recording_with_capture_writes_every_release_with_its_timestamp(capture, backbone, tmp_path):
    _, _, world = capture
    pub, _ = backbone
    rec = generate(duration=50.0, rate=200.0, seed=2).recording
    settings = {**OFF, "chunk_length": 8, "window": 4.0, "step": 0.25}
    g_pool = world.make_g_pool(pub)
    capture[1].Plugin_List(g_pool, [(capture[0].StreamDP, settings), (world.Recorder, {"rec_dir": str(tmp_path)})])
    recorder = next(p for p in g_pool.plugins if isinstance(p, world.Recorder))
    recorder.start()
    published = []
    for events in _frames(rec):
        published += world.run_frame(g_pool, events).get("streamdp", [])
    recorder.stop()
    assert len(published) >= 5
    with open(tmp_path / "streamdp.pldata", "rb") as fh:
        stored = [(topic, msgpack.unpackb(payload, raw=False)) for topic, payload in msgpack.Unpacker(fh, raw=False)]
    assert [topic for topic, _ in stored] == ["streamdp.features.dcfpa"] * len(published)
    assert [d for _, d in stored] == published
    stamps = np.load(tmp_path / "streamdp_timestamps.npy")
    np.testing.assert_array_equal(stamps, [d["t"][-1] for d in published])
    assert np.all(np.diff(stamps) > 0)


def test_get_init_dict_round_trips_through_the_plugin_list(capture, backbone):
    module, plugin_mod, world = capture
    pub, _ = backbone
    settings = {
        **OFF,
        "epsilon": 2.5,
        "chunk_length": 64,
        "mechanism": "cfpa",
        "k": 2,
        "unit": "session",
        "budget": 1000.0,
        "window": 20.0,
    }
    g_pool = world.make_g_pool(pub)
    plugins = plugin_mod.Plugin_List(g_pool, [(module.StreamDP, settings)])
    ((name, saved),) = plugins.get_initializers()
    assert name == "StreamDP" and {k: saved[k] for k in settings} == settings
    g2 = world.make_g_pool(pub)
    again = plugin_mod.Plugin_List(g2, [(module.StreamDP, saved)])
    plugin = next(iter(again))
    assert plugin.get_init_dict() == saved
    assert plugin.session.config.mechanism == "cfpa" and plugin.session.config.window == 20.0


def test_settings_become_the_session_configuration(capture):
    module, _, _ = capture
    cfg = module.session_config({"epsilon": 2.0, "blinks_from_capture": True, "camera": "pupil_core_1080p"})
    assert cfg == SessionConfig(epsilon=2.0, blinks="given", camera="pupil_core_1080p")
    with pytest.raises(TypeError, match="lpa does not take parameter 'k'"):
        module.session_config({"mechanism": "lpa", "k": 3})
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        module.session_config({"colour": "red"})


def test_the_menu_offers_the_registered_mechanisms(capture, backbone, monkeypatch):
    module, plugin_mod, world = capture
    pub, _ = backbone
    selectors = []

    class UI:  # pyglui's element constructors, recording what the menu asks for
        def __getattr__(self, name):
            def element(*args, **kwargs):
                selectors.append((name, args, kwargs))
                return name

            return element

    monkeypatch.setattr(module, "ui", UI())
    plugin_mod.Plugin_List(world.make_g_pool(pub), [(module.StreamDP, OFF)])
    ((_, _, kwargs),) = [s for s in selectors if s[0] == "Selector" and s[1][0] == "mechanism"]
    assert kwargs["selection"] == list(MECHANISMS)


def test_the_plugin_imports_no_optional_extra():
    """What Capture loads from its plugin folder needs only numpy, scipy, pyzmq and msgpack."""
    code = (
        "import sys; from tests.pupil_standin import capture_plugin_environment\n"
        "with capture_plugin_environment(): pass\n"
        "print(sorted(m for m in ('sklearn', 'matplotlib', 'tqdm', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root).stdout
    assert out.strip() == "[]"


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
    plugin_mod.Plugin_List(g_pool, [(module.StreamDP, {**OFF, "chunk_length": 32})])
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
    assert plugin.invalid == 4  # blinks are not read unless they come from Capture
    assert "4 datums skipped" in plugin.status
    plugin.update_settings(blinks_from_capture=True)
    plugin.recent_events({"gaze": [], "blinks": [{"type": "onset"}]})
    assert plugin.session.counters.invalid == 5  # taken from Capture now: a blink without a time


def test_skipped_datums_are_counted_across_a_settings_change(capture, backbone):
    module, plugin_mod, world = capture
    pub, _ = backbone
    g_pool = world.make_g_pool(pub)
    plugin_mod.Plugin_List(g_pool, [(module.StreamDP, {**OFF, "chunk_length": 32})])
    plugin = next(iter(g_pool.plugins))
    plugin.recent_events({"gaze": [7, 8]})
    plugin.update_settings(epsilon=2.0)
    plugin.recent_events({"gaze": [9]})
    assert plugin.invalid == 3


def test_settings_change_is_validated_and_keeps_the_budget_spent(capture, backbone):
    pub, _ = backbone
    settings = {"epsilon": 1.0, "chunk_length": 32, "unit": "session", "budget": 10_000.0}
    g_pool, published = _run(capture, pub, settings)
    plugin = next(iter(g_pool.plugins))
    old = plugin.session
    spent = old.status().epsilon_spent
    assert spent == 1.0 * len(published) > 0
    assert not plugin.update_settings(epsilon=-1.0)
    assert "epsilon must be finite and > 0" in plugin.error and plugin.epsilon == 1.0
    assert plugin.session is old
    assert not plugin.update_settings(mechanism="lpa", k=3)
    assert "lpa does not take parameter 'k'" in plugin.error and plugin.session is old
    plugin.epsilon = 2.0
    assert plugin.error == "" and plugin.epsilon == 2.0 and plugin.session is not old
    assert plugin.session.config.epsilon == 2.0
    assert plugin.session.status().epsilon_spent == spent
    assert plugin.status.startswith(f"{len(published)} chunks released, ε spent {spent:g} (dcfpa, ε 2 per chunk)")


def test_a_seeded_plugin_never_reuses_its_noise_after_a_settings_change(capture, backbone):
    pub, _ = backbone
    rec = generate(duration=30.0, rate=200.0, seed=5).recording
    settings = {"chunk_length": 8, "window": 4.0, "step": 0.25, "seed": 1}
    g_pool, first = _run(capture, pub, settings, rec)
    plugin = next(iter(g_pool.plugins))
    plugin.update_settings(epsilon=1.0)  # the same configuration, a new session
    _, _, world = capture
    second = []
    for events in _frames(rec):
        second += world.run_frame(g_pool, events).get("streamdp", [])
    assert len(first) >= 3 and len(second) >= 3
    for a, b in zip(first, second, strict=False):
        assert a["values"] != b["values"]


def test_a_clock_change_restarts_the_session(capture, backbone):
    pub, _ = backbone
    rec = generate(duration=30.0, rate=200.0, seed=5).recording
    g_pool, _ = _run(capture, pub, {"chunk_length": 8, "window": 4.0, "step": 0.25}, rec)
    plugin = next(iter(g_pool.plugins))
    _end_of_stream(capture, g_pool)
    assert plugin.session.counters.restarts == 1


def test_budget_cap_stops_the_plugin_releasing(capture, backbone):
    pub, _ = backbone
    settings = {"epsilon": 1.0, "chunk_length": 32, "unit": "session", "budget": 2.0}  # two chunks' ε
    g_pool, published = _run(capture, pub, settings)
    plugin = next(iter(g_pool.plugins))
    assert len(published) == 2
    assert plugin.status == "budget spent: ε 2 of 2 (session); nothing more is released"
    assert plugin.sink.last_status.budget_exhausted
