"""The simulator reacts to hmd-eyes as Capture does (streamdp/network/simulated_world.py), driven
by a client that follows hmd-eyes' own connection flow (tests/hmd_eyes_client.py)."""

from __future__ import annotations

import msgpack
import pytest
import zmq

from streamdp.network.simulator import PUPIL_VERSION, CaptureSimulator
from streamdp.synthetic import generate
from tests.hmd_eyes_client import CALIBRATION_PLUGIN, GazeDataError, HmdEyesClient, parse_gaze

# pupil datums flow in real time, over and over: a calibration collects them as Capture's would
REC = generate(duration=4.0, seed=5).recording
QUICK = {"seconds_per_target": 0.25, "ignore_initial_seconds": 0.05, "samples_per_target": 8}
TARGETS = [(0.0, 0.0, 1.0), (0.1, 0.0, 1.0), (0.0, 0.1, 1.0)]


@pytest.fixture
def sim():
    with CaptureSimulator(REC, speed=1.0, loop=True) as s:
        yield s


@pytest.fixture
def client(sim):
    with HmdEyesClient(sim.remote_address) as c:
        yield c


@pytest.fixture
def notes(sim):
    """A SUB on the backbone's notifications, joined before the test starts."""
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
    sub.setsockopt(zmq.SUBSCRIBE, b"notify.")
    req = zmq.Context.instance().socket(zmq.REQ)
    req.linger = 0
    req.connect(sim.remote_address)
    try:
        for _ in range(50):  # no slow-joiner loss: probe until the subscription is through
            req.send_multipart([b"notify.probe", msgpack.packb({"subject": "probe"})])
            assert req.poll(5000)
            req.recv_multipart()
            if sub.poll(100):
                break
        while sub.poll(100):
            sub.recv_multipart()
        yield sub
    finally:
        req.close(linger=0)
        sub.close(linger=0)


def _notes(sub: zmq.Socket, until: str, timeout: float = 5.0) -> list[dict]:
    out: list[dict] = []
    while not out or out[-1]["subject"] != until:
        assert sub.poll(int(timeout * 1000)), [n["subject"] for n in out]
        out.append(msgpack.unpackb(sub.recv_multipart()[1], raw=False))
    return out


def _subjects(sub: zmq.Socket, until: str) -> list[str]:
    return [n["subject"] for n in _notes(sub, until)]


def test_it_connects_as_hmd_eyes_and_capture_hears_the_eye_processes_and_the_mode(sim, client):
    assert (client.sub_port, client.pub_port, client.version) == (sim.ports.sub, sim.ports.pub, PUPIL_VERSION)
    for subject in ("eye_process.should_start.1", "eye_process.should_start.0", "set_detection_mapping_mode"):
        assert sim.world.wait_for(subject, 5.0)
    assert sim.notifications_received.index("eye_process.should_start.1") < sim.notifications_received.index(
        "eye_process.should_start.0"
    )
    assert abs(client.pupil_time() - float(client.command("t") or "nan")) < 0.5  # TimeSync's offset


def test_a_calibration_with_reference_data_succeeds_with_capture_notifications(sim, client, notes):
    assert client.calibrate(TARGETS, **QUICK) == "successful"
    assert _subjects(notes, "calibration.result.v2") == [
        "start_plugin",  # the app's, naming the choreography
        "calibration.should_start",
        "calibration.started",
        "calibration.add_ref_data",
        "calibration.add_ref_data",
        "calibration.add_ref_data",
        "calibration.should_stop",
        "calibration.stopped",
        "start_plugin",  # the choreography's, naming the gazer
        "calibration.setup.v2",
        "calibration.successful",  # before the result, as gazer_base.py announces them
        "calibration.result.v2",
    ]
    for subject in ("calibration.add_ref_data", "calibration.should_stop"):  # via the PUB socket
        assert subject in sim.notifications_received


def test_the_result_carries_the_persons_eye_geometry(sim, client, notes):
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
    sub.setsockopt(zmq.SUBSCRIBE, b"notify.calibration.")
    try:
        assert client.calibrate(TARGETS, ipd_mm=60.0, **QUICK) == "successful"
        got = {}
        while "calibration.result.v2" not in got:
            assert sub.poll(5000)
            note = msgpack.unpackb(sub.recv_multipart()[1], raw=False)
            got[note["subject"]] = note
    finally:
        sub.close(linger=0)
    setup, result = got["calibration.setup.v2"], got["calibration.result.v2"]
    assert setup["version"] == result["version"] == 2 and result["gazer_class_name"] == "GazerHMD3D"
    pupils, refs = setup["calib_data"]["pupil_list"], setup["calib_data"]["ref_list"]
    assert pupils and all(p["topic"].startswith("pupil.") for p in pupils)  # raw datums, as collected
    assert len(refs) >= 3 and all(set(r) == {"mm_pos", "timestamp"} for r in refs)
    params = result["params"]
    m0, m1 = (
        params["binocular_model"]["eye_camera_to_world_matrix0"],
        params["binocular_model"]["eye_camera_to_world_matrix1"],
    )
    assert params["right_model"]["eye_camera_to_world_matrix"] == m0  # right is eye 0
    assert params["left_model"]["eye_camera_to_world_matrix"] == m1
    assert m0[0][3] - m1[0][3] == pytest.approx(60.0)  # the interpupillary distance, a biometric


def test_a_calibration_without_reference_data_fails_with_capture_reason(sim, client, notes):
    assert client.calibrate(TARGETS[:1], send_ref_data=False, **QUICK) == "failed"
    setup, failed = _notes(notes, "calibration.failed")[-2:]
    assert setup["subject"] == "calibration.setup.v2" and setup["calib_data"]["ref_list"] == []
    assert failed["reason"] == "No reference data to match"  # gaze_mapping/utils.py's assert, as the reason
    assert failed["gazer_class_name"] == "GazerHMD3D" and failed["record"] is True
    assert "calibration.should_stop" in sim.notifications_received
    assert "calibration.add_ref_data" not in sim.notifications_received


def test_should_start_without_translations_logs_capture_error_and_starts_nothing(sim, client):
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
    sub.setsockopt(zmq.SUBSCRIBE, b"logging.error")
    try:
        client.start_plugin(CALIBRATION_PLUGIN)
        for _ in range(50):  # Pupil Remote's "C": no translations; repeated until the SUB has joined
            assert client.command("C") == "OK"
            if sub.poll(100):
                break
        record = msgpack.unpackb(sub.recv_multipart()[1], raw=False)
    finally:
        sub.close(linger=0)
    assert record["msg"] == "Calibration cannot be started without 'translation_eye0'"
    assert "calibration.started" not in sim.notifications_received


def test_recording_starts_and_stops_as_capture_announces_it(sim, client, notes):
    assert client.start_recording("/data/hmd/2024_01_01") == "Message forwarded."
    started = _subjects(notes, "recording.started")
    assert started[-2:] == ["recording.should_start", "recording.started"]
    assert client.stop_recording() == "Message forwarded."
    assert _subjects(notes, "recording.stopped")[-2:] == ["recording.should_stop", "recording.stopped"]
    assert sim.world.rec_path is None and sim.world.session_name == "/data/hmd/2024_01_01"


def test_gaze_3d_datums_parse_as_hmd_eyes_reads_them(sim, client):
    sock = client.listen_gaze()
    seen = set()
    for _ in range(400):
        gaze = client.receive_gaze(sock, 5.0)
        assert gaze is not None
        seen.add(gaze.mapping_context)
        assert gaze.gaze_point_3d[2] > 0 and 0.0 <= gaze.confidence <= 1.0
        if gaze.mapping_context == "Binocular":
            assert gaze.eye_center_0 is not None and gaze.eye_center_1 is not None
        if {"Binocular", "Monocular_0", "Monocular_1"} <= seen:
            break
    assert {"Binocular", "Monocular_0", "Monocular_1"} <= seen  # Capture's untidy monocular gaze too


def test_parsing_follows_gaze_data_cs():
    datum = {
        "confidence": 0.9,
        "timestamp": 12.5,
        "norm_pos": [0.5, 0.5],
        "gaze_point_3d": [100.0, 50.0, 1000.0],
        "eye_centers_3d": {"0": [30.0, 10.0, -20.0], 1: [-30.0, 10.0, -20.0]},  # str keys since Pupil 3.0
        "gaze_normals_3d": {"0": [0.0, 0.6, 0.8], "1": [0.0, 0.0, 1.0]},
    }
    gaze = parse_gaze("gaze.3d.01.", datum)
    assert gaze.gaze_point_3d == pytest.approx((0.1, -0.05, 1.0))  # m, y up
    assert gaze.eye_center_0 == pytest.approx((0.03, -0.01, -0.02)) and gaze.eye_center_1 is not None
    assert gaze.gaze_normal_0 == pytest.approx((0.0, -0.6, 0.8))  # a direction: not scaled
    behind = parse_gaze(
        "gaze.3d.0.",
        {**datum, "gaze_point_3d": [0.0, 0.0, -500.0], "eye_center_3d": [0.0] * 3, "gaze_normal_3d": [0.0, 0.0, 1.0]},
    )
    assert behind.gaze_point_3d == pytest.approx((0.0, 0.0, 0.5)) and behind.eye_center_1 is None
    for broken, field in [
        ({k: v for k, v in datum.items() if k != "gaze_point_3d"}, "gaze_point_3d"),
        ({k: v for k, v in datum.items() if k != "confidence"}, "confidence"),
        ({**datum, "eye_centers_3d": {"0": [0.0] * 3}}, "eye_centers_3d"),
        ({**datum, "timestamp": 12}, "timestamp"),  # an int: C#'s (double) unboxing throws
    ]:
        with pytest.raises(GazeDataError, match=field):
            parse_gaze("gaze.3d.01.", broken)
    with pytest.raises(GazeDataError, match="no matching mode"):
        parse_gaze("gaze.2d.01.", datum)
