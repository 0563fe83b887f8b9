"""streamdp's own Pupil Remote served by the Capture plugin (setting ``pupil_remote``), in the stand-in
of Capture's world loop. The stand-in world has no Pupil Remote that forwards notifications nor a
calibration, so Capture's side is the simulated Capture (its Pupil Remote, backbone and reactions
written from Capture's source): the plugin's facade forwards to it as it forwards to Capture's own
Pupil Remote (``capture_remote``). An hmd-eyes client connects, calibrates and records through the
plugin, and parses the plugin's ticks as sanitized ``gaze.3d`` datums."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.network.simulator import PUPIL_VERSION, CaptureSimulator
from streamdp.synthetic import generate
from tests.hmd_eyes_client import HmdEyesClient

from .test_plugin_endpoint import LOOPBACK, SMALL, capture, receive_all, run, start  # noqa: F401

QUICK = {"seconds_per_target": 0.25, "ignore_initial_seconds": 0.05, "samples_per_target": 8}
TARGETS = [(0.0, 0.0, 1.0), (0.1, 0.0, 1.0), (0.0, 0.1, 1.0)]
RATE = 60.0


@pytest.fixture
def sim():
    with CaptureSimulator(generate(duration=4.0, seed=5).recording, speed=1.0, loop=True) as s:
        yield s


def _settings(sim: CaptureSimulator) -> dict:
    return {**SMALL, **LOOPBACK, "gaze_rate": RATE, "pupil_remote": "tcp://127.0.0.1:0", "seed": 0,
            "capture_remote": sim.remote_address, "publish_reproducible_noise_not_private": True}  # fmt: skip


def test_an_hmd_eyes_app_connects_calibrates_and_records_through_the_plugin(capture, sim):  # noqa: F811
    env, pub = capture
    _, plugin = start(env, pub, _settings(sim))
    facade = plugin.endpoint.facade
    assert plugin.session.config.gaze_channel  # the facade serves the channel's ticks
    assert f"Pupil Remote for apps on {facade.address}" in plugin.endpoint_text
    with HmdEyesClient(facade.address) as app:
        assert (app.sub_port, app.pub_port, app.version) == (facade.sub_port, facade.pub_port, PUPIL_VERSION)
        assert sim.world.wait_for("eye_process.should_start.0", 5.0)
        assert app.calibrate(TARGETS, **QUICK) == "successful"  # Capture's answer came back through the plugin
        for subject in ("calibration.should_start", "calibration.add_ref_data", "calibration.should_stop"):
            assert subject in sim.notifications_received
        app.start_recording("streamdp-plugin")
        app.stop_recording()
        assert sim.world.wait_for("recording.should_stop", 5.0)
    assert plugin.session.counters.refused == 0


def test_the_plugin_s_ticks_reach_the_app_as_capture_s_gaze_datums(capture, sim):  # noqa: F811
    env, pub = capture
    g_pool, plugin = start(env, pub, _settings(sim))
    facade = plugin.endpoint.facade
    everything = zmq.Context.instance().socket(zmq.SUB)
    everything.linger = 0
    everything.rcvhwm = 0
    everything.connect(f"tcp://127.0.0.1:{facade.sub_port}")
    everything.setsockopt(zmq.SUBSCRIBE, b"")
    direct = zmq.Context.instance().socket(zmq.SUB)
    direct.linger = 0
    direct.rcvhwm = 0
    direct.connect(plugin.endpoint.endpoint)
    direct.setsockopt(zmq.SUBSCRIBE, b"streamdp.gaze.")
    try:
        assert plugin.endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
        # a PUB socket keeps nothing for a late joiner: an app's round trip through the facade
        # first, so that the subscription is through before the frames run
        with HmdEyesClient(facade.address) as app:
            app.update_time_sync()
        rec = generate(duration=8.0, rate=120.0, seed=4).recording
        run(env, g_pool, rec)
        topics: list[bytes] = []
        datums = receive_all(everything, topics=topics)
        ticks = receive_all(direct)
    finally:
        everything.close(linger=0)
        direct.close(linger=0)
    assert {t.decode() for t in topics} <= {"gaze.3d.01.", *(f"streamdp.features.{plugin.session.config.mechanism}",)}
    gaze = [d for t, d in zip(topics, datums, strict=True) if t == b"gaze.3d.01."]
    by_time = {m["t"][0]: m for m in ticks}
    assert len(gaze) >= 0.95 * len(by_time) > 0
    for d in gaze:
        tick = by_time[d["timestamp"]]
        assert d["norm_pos"] == tick["values"][0][2:4] and d["confidence"] == 1.0 and d["base_data"] == []
    stamps = np.array([d["timestamp"] for d in gaze])
    assert np.allclose(np.diff(stamps), 1 / RATE)
    assert all(isinstance(msgpack.packb(d), bytes) for d in gaze)


def test_the_plugin_s_privacy_check_lists_its_pupil_remote(capture, sim):  # noqa: F811
    from streamdp.capture.check import check_capture

    env, pub = capture
    g_pool, plugin = start(env, pub, _settings(sim))
    report = check_capture(g_pool, plugin.endpoint, plugin.session.config)
    line = next(f for f in report.findings if f.subject == f"streamdp's Pupil Remote {plugin.endpoint.facade.address}")
    assert line.status == "ok" and f"SUB_PORT {plugin.endpoint.facade.sub_port}" in line.text
