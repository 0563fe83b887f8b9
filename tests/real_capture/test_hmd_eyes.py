"""An hmd-eyes app on streamdp's Pupil Remote in front of the real Capture (``--pupil-remote``):
the client written from hmd-eyes' own flow (tests/hmd_eyes_client.py) connects (``SUB_PORT``,
``PUB_PORT``, ``v``, eye processes, ``t``/``T``), calibrates with the HMD choreography, records
(``R``/``r``) and parses gaze; Capture's real answers come back, and an app subscribed to
everything on streamdp's ``SUB_PORT`` sees sanitized gaze, chunks and the calibration's outcome
only."""

from __future__ import annotations

import time

import msgpack
import numpy as np
import pytest
import zmq

from tests.hmd_eyes_client import HmdEyesClient

from .harness import RealCapture, StreamdpListener
from .test_lagging_eyes import RELAY, start_relay, stop_relay, wait_for_status

pytestmark = pytest.mark.real_capture

FACADE = "tcp://127.0.0.1:50020"
ALLOWED = ("gaze.3d.01.", "streamdp.", "notify.calibration.started", "notify.calibration.stopped",
           "notify.calibration.successful", "notify.calibration.failed", "notify.recording.started",
           "notify.recording.stopped")  # fmt: skip
TARGETS = [(0.0, 0.0, 1.0), (0.1, 0.0, 1.0), (0.0, 0.1, 1.0), (-0.1, 0.0, 1.0), (0.0, -0.1, 1.0)]


def test_an_hmd_eyes_app_gets_captures_answers_and_only_sanitized_data(capture: RealCapture):
    capture.port = 50021  # Capture's own Pupil Remote moved aside; the app knows 50020
    capture.launch()
    capture.play()
    relay = start_relay(capture, "--pupil-remote", FACADE, "--chunk-length", "16")
    status = StreamdpListener(*RELAY, capture.context)
    everything = capture.context.socket(zmq.SUB)
    everything.linger = 0
    try:
        wait_for_status(status)  # the relay is up, and its Pupil Remote with it
        with HmdEyesClient(FACADE, context=capture.context) as app:
            assert app.version == "3.6.0"  # Capture's answer, through streamdp
            assert abs(app.pupil_time() - float(capture.remote.ask("t"))) < 0.5
            everything.connect(f"tcp://127.0.0.1:{app.sub_port}")
            everything.subscribe(b"")
            gaze_sock = app.listen_gaze()
            gaze = [app.receive_gaze(gaze_sock, 5.0) for _ in range(120)]
            assert all(g is not None for g in gaze)
            stamps = np.array([g.pupil_timestamp for g in gaze if g is not None])
            assert np.allclose(np.diff(stamps), 1 / 60)  # the public 60 Hz grid, none skipped
            outcome = app.calibrate(TARGETS, seconds_per_target=0.5, samples_per_target=20, timeout=30.0)
            assert outcome in ("successful", "failed")  # Capture's own verdict on our synthetic eyes
            app.start_recording("streamdp-hmd")
            time.sleep(2.0)
            app.stop_recording()
        time.sleep(1.0)
        topics = set()
        while everything.poll(0):
            frames = everything.recv_multipart()
            msgpack.unpackb(frames[1], raw=False)  # every frame decodes
            topics.add(frames[0].decode())
        assert "gaze.3d.01." in topics
        assert {t for t in topics if not t.startswith(ALLOWED)} == set()
        assert sorted(capture.recordings.glob("streamdp-hmd/*/info.player.json"))  # Capture recorded
    finally:
        everything.close(linger=0)
        status.stop()
        err = stop_relay(relay)
    assert "Traceback" not in err, err[-3000:]
