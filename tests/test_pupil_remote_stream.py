"""What an app subscribed to everything on streamdp's Pupil Remote receives (issue #28): pupil-helpers'
``filter_messages.py`` pattern (``SUBSCRIBE ""``) over 60 s of simulated gaze through the relay.

Every frame is decoded; every topic is on the allowed list; every field of every gaze datum is
in :data:`~streamdp.network.capture_gaze.GAZE_DATUM_FIELDS` with the value that table says (the
sanitized tick's, a public constant, or derived from the two); every ``streamdp.*`` frame is the
sanitized socket's, byte for byte; no ``pupil.``, ``frame.``, ``blinks`` or raw ``gaze.`` datum
arrives, though the simulated Capture publishes them."""

from __future__ import annotations

import math
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.network.capture_gaze import (
    EYE_CENTERS_MM,
    GAZE_CONFIDENCE,
    GAZE_DATUM_FIELDS,
    GAZE_DISTANCE_MM,
    GAZE_TOPICS,
)
from streamdp.network.notification_policy import OUTBOUND
from streamdp.network.pupil_remote import StreamdpPupilRemote
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.session import Session
from streamdp.synthetic import generate

from .live_harness import LOSSLESS

SECONDS = 60.0
CONFIG = SessionConfig(chunk_length=16, gaze_channel=True)


def _drain(sub: zmq.Socket, until: threading.Event, out: list[list[bytes]]) -> None:
    quiet_since = None
    while True:
        if sub.poll(200):
            out.append(sub.recv_multipart())
            quiet_since = None
        elif until.is_set():
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 1.0:
                return


@pytest.fixture(scope="module")
def received() -> dict[str, list[list[bytes]]]:
    recording = generate(duration=SECONDS, seed=5).recording
    sanitized = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=100_000, publish_reproducible_noise_not_private=True)
    sim = CaptureSimulator(recording, speed=0.0, **LOSSLESS)
    sim.start()  # it waits for the relay's subscription to gaze
    facade = StreamdpPupilRemote(
        "tcp://127.0.0.1:0", capture_remote=sim.remote_address, publish_reproducible_noise_not_private=True
    )
    app = zmq.Context.instance().socket(zmq.SUB)  # filter_messages.py: everything
    app.linger = 0
    app.rcvhwm = 0
    app.connect(f"tcp://127.0.0.1:{facade.sub_port}")
    app.setsockopt(zmq.SUBSCRIBE, b"")
    reference = connect_subscriber(sanitized.endpoint, ("",))
    reference.rcvhwm = 0
    assert sanitized.wait_for_subscribers(1, timeout=5.0)
    session = Session(CONFIG, sinks=[sanitized, facade], seed=0)
    facade.counters = session.counters
    relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.3, max_backlog=3600.0)
    done = threading.Event()
    frames: dict[str, list[list[bytes]]] = {"app": [], "sanitized": []}
    readers = [threading.Thread(target=_drain, args=(s, done, frames[k])) for k, s in
               (("app", app), ("sanitized", reference))]  # fmt: skip
    for r in readers:
        r.start()
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        assert sim.finished.wait(120)
        deadline = time.monotonic() + 30
        while (session.newest_gaze or 0) < float(recording.gaze.t[-1]) - 0.1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # the held ticks' public times pass on the schedule's clock
    finally:
        relay.stop()  # the channel publishes every tick, gaze or not, until the relay stops
        th.join(5)
        done.set()
        for r in readers:
            r.join(10)
        sim.stop()
        facade.close()
        sanitized.close()
        app.close(linger=0)
        reference.close(linger=0)
    return frames


def test_every_frame_decodes_and_every_topic_is_allowed(received):
    allowed = {GAZE_TOPICS["3d"], *("notify." + s for s in OUTBOUND)}
    topics = {f[0].decode() for f in received["app"]}
    assert all(len(f) == 2 for f in received["app"])
    for frames in received["app"]:
        assert isinstance(msgpack.unpackb(frames[1], raw=False), dict)
    assert {t for t in topics if not t.startswith("streamdp.")} <= allowed
    assert not {t for t in topics if t.startswith(("pupil.", "frame.", "blinks", "fixations", "surfaces."))}
    assert GAZE_TOPICS["3d"] in topics and any(t.startswith("streamdp.features.") for t in topics)


def test_streamdp_topics_are_the_sanitized_socket_s_frames_byte_for_byte(received):
    app = [f for f in received["app"] if f[0].startswith(b"streamdp.")]
    reference = {bytes(f[1]) for f in received["sanitized"]}
    assert app and all(bytes(f[1]) in reference for f in app)


def test_each_gaze_datum_is_a_sanitized_tick_in_capture_s_format(received):
    ticks = {}
    for topic, payload in received["sanitized"]:
        if topic.startswith(b"streamdp.gaze."):
            msg = msgpack.unpackb(payload, raw=False)
            row = dict(zip(msg["names"], msg["values"][0], strict=True))
            ticks[msg["t"][0]] = row
    datums = [msgpack.unpackb(p, raw=False) for t, p in received["app"] if t == b"gaze.3d.01."]
    # every tick of the channel's 60 s went out as one datum (a late joiner may miss the first few)
    assert len(datums) >= 0.98 * len(ticks) >= 0.98 * SECONDS * CONFIG.gaze_rate
    stamps = [d["timestamp"] for d in datums]
    assert stamps == sorted(stamps) and np.allclose(np.diff(stamps), 1 / CONFIG.gaze_rate)
    for d in datums:
        assert set(d) == set(GAZE_DATUM_FIELDS)
        tick = ticks[d["timestamp"]]  # the timestamp is a tick of the public grid, published there
        assert d["norm_pos"] == [tick["x_norm"], tick["y_norm"]]
        assert d["confidence"] == GAZE_CONFIDENCE and d["base_data"] == [] and d["topic"] == "gaze.3d.01."
        assert d["eye_centers_3d"] == {k: list(v) for k, v in EYE_CENTERS_MM.items()}
        x, y, z = d["gaze_point_3d"]
        assert math.isclose(math.hypot(x, y, z), GAZE_DISTANCE_MM)
        assert math.isclose(math.degrees(math.atan2(x, z)), tick["x_deg"], abs_tol=1e-9)
        assert math.isclose(math.degrees(math.atan2(-y, z)), tick["y_deg"], abs_tol=1e-9)
        for eye, centre in EYE_CENTERS_MM.items():
            to_point = np.subtract(d["gaze_point_3d"], centre)
            assert np.allclose(d["gaze_normals_3d"][eye], to_point / np.linalg.norm(to_point))
