"""An hmd-eyes app, unchanged, on streamdp's Pupil Remote (issue #28): the client written from
hmd-eyes' own connection flow (tests/hmd_eyes_client.py) against the relay on the simulated
Capture, which reacts to calibration and recording as Capture's source does. The app connects,
starts the eye processes, calibrates (its notifications reach Capture and Capture's answer comes
back), records, and parses sanitized ``gaze.3d`` datums at the channel's public rate; an app
subscribed to everything meanwhile never sees the calibration's raw setup, result or gazer."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.network.pupil_remote import StreamdpPupilRemote
from streamdp.network.relay import Relay
from streamdp.network.simulator import PUPIL_VERSION, CaptureSimulator
from streamdp.session import Session
from streamdp.synthetic import generate
from tests.hmd_eyes_client import HmdEyesClient

CONFIG = SessionConfig(chunk_length=16, gaze_channel=True)
QUICK = {"seconds_per_target": 0.25, "ignore_initial_seconds": 0.05, "samples_per_target": 8}
TARGETS = [(0.0, 0.0, 1.0), (0.1, 0.0, 1.0), (0.0, 0.1, 1.0)]


@pytest.fixture(scope="module")
def deployment() -> Iterator[tuple[CaptureSimulator, StreamdpPupilRemote, zmq.Socket]]:
    """Capture (simulated, real time, looping: pupil data flows while calibrating), the relay with
    the gaze channel and streamdp's Pupil Remote, and an app subscribed to everything on it."""
    sim = CaptureSimulator(generate(duration=4.0, seed=5).recording, speed=1.0, loop=True)
    sim.start()
    session = Session(CONFIG, sinks=[], seed=0)
    facade = StreamdpPupilRemote(
        "tcp://127.0.0.1:0", capture_remote=sim.remote_address, counters=session.counters,
        publish_reproducible_noise_not_private=True,
    )  # fmt: skip
    session.sinks.append(facade)
    everything = zmq.Context.instance().socket(zmq.SUB)
    everything.linger = 0
    everything.rcvhwm = 0
    everything.connect(f"tcp://127.0.0.1:{facade.sub_port}")
    everything.setsockopt(zmq.SUBSCRIBE, b"")
    relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.3)
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        yield sim, facade, everything
    finally:
        relay.stop()
        th.join(5)
        facade.close()
        sim.stop()
        everything.close(linger=0)


@pytest.fixture
def client(deployment) -> Iterator[HmdEyesClient]:
    with HmdEyesClient(deployment[1].address) as c:
        yield c


def _topics(sub: zmq.Socket) -> set[str]:
    topics = set()
    while sub.poll(0):
        frames = sub.recv_multipart()
        msgpack.unpackb(frames[1], raw=False)
        topics.add(frames[0].decode())
    return topics


def test_it_connects_and_capture_hears_the_eye_processes_and_the_mode(deployment, client):
    sim, facade, _ = deployment
    assert (client.sub_port, client.pub_port, client.version) == (facade.sub_port, facade.pub_port, PUPIL_VERSION)
    for subject in ("eye_process.should_start.1", "eye_process.should_start.0", "set_detection_mapping_mode"):
        assert sim.world.wait_for(subject, 5.0)
    assert abs(client.pupil_time() - sim.pupil_time()) < 0.5  # TimeSync's offset, through streamdp


def test_it_calibrates_through_streamdp_and_never_sees_the_raw_calibration(deployment, client):
    sim, facade, everything = deployment
    _topics(everything)
    assert client.calibrate(TARGETS, **QUICK) == "successful"
    for subject in ("calibration.should_start", "calibration.add_ref_data", "calibration.should_stop"):
        assert subject in sim.notifications_received  # the app's requests reached Capture
    assert sim.world.wait_for("calibration.result.v2", 5.0)  # Capture fitted the wearer's geometry …
    topics = _topics(everything)
    assert "notify.calibration.successful" in topics  # … and only its outcome reached the apps
    assert not {t for t in topics if t.startswith("notify.") and t not in
                ("notify.calibration.started", "notify.calibration.stopped", "notify.calibration.successful")}
    assert facade.counters.refused == 0


def test_a_calibration_without_reference_data_fails_as_capture_says(deployment, client):
    assert client.calibrate(TARGETS, send_ref_data=False, **QUICK) == "failed"


def test_it_records_through_streamdp(deployment, client):
    sim = deployment[0]
    client.start_recording("streamdp-hmd")
    assert sim.world.wait_for("recording.should_start", 5.0)
    client.stop_recording()
    assert sim.world.wait_for("recording.should_stop", 5.0)


def test_it_parses_sanitized_gaze_at_the_public_rate(deployment, client):
    sock = client.listen_gaze()
    gaze = [client.receive_gaze(sock, 2.0) for _ in range(90)]
    assert all(g is not None for g in gaze)
    stamps = np.array([g.pupil_timestamp for g in gaze if g is not None])
    assert {g.mapping_context for g in gaze if g is not None} == {"Binocular"}
    assert {g.confidence for g in gaze if g is not None} == {1.0}
    # one datum per tick of the public 60 Hz grid, none skipped, in order
    assert np.allclose(np.diff(stamps), 1 / CONFIG.gaze_rate)
