"""Neon live conversion with the realtime API's own datum types, and the Neon relay loop driven
by a device that replays the Neon demo recording through those types."""

from __future__ import annotations

import math
import threading

import msgpack
import numpy as np
import pytest

gaze_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.gaze")
events_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.eye_events")

from streamdp.network.neon import NeonRelay, neon_blink, neon_row  # noqa: E402
from streamdp.network.sink import ReleasePublisher  # noqa: E402
from streamdp.network.subscriber import connect_subscriber  # noqa: E402
from streamdp.pipeline import PrivatePipeline  # noqa: E402
from streamdp.privacy import dcfpa, default_profile, secure_generator  # noqa: E402
from streamdp.stages.events import EventConfig  # noqa: E402
from streamdp.synthetic import generate  # noqa: E402


def _eyestate(x, y, worn, d_left, d_right, t):
    zeros = [0.0] * 6
    return gaze_mod.EyestateGazeData(x, y, worn, d_left, *zeros, d_right, *zeros, t)


def test_eyestate_gaze_is_normalized_with_the_origin_bottom_left_and_diameters_averaged():
    t, x, y, conf, d, valid = neon_row(_eyestate(800.0, 300.0, True, 3.0, 3.4, 1.7e9))
    assert (t, x, y, conf, valid) == (1.7e9, 0.5, 0.75, 1.0, True)
    assert d == pytest.approx(3.2)


def test_plain_gaze_has_no_diameter_and_unworn_is_invalid():
    row = neon_row(gaze_mod.GazeData(100.0, 100.0, False, 5.0))
    assert math.isnan(row[4]) and row[5] is False and row[3] == 0.0


def test_blink_events_only():
    assert neon_blink(events_mod.BlinkEventData(4, 2_000_000_000, 2_150_000_000, 2.2)) == pytest.approx((2.0, 2.15))
    fixation = events_mod.FixationEventData(1, 1, 2, *([0.0] * 10), 0.0)
    assert neon_blink(fixation) is None


class ReplayDevice:
    """A device that hands out a recording as the realtime API's EyestateGazeData, one per call."""

    def __init__(self, recording):
        g = recording.gaze
        self._data = [
            _eyestate(x * 1600.0, (1 - y) * 1200.0, True, d, d, t)
            for t, x, y, d in zip(g.t.tolist(), g.x.tolist(), g.y.tolist(), g.diameter.tolist(), strict=True)
        ]
        self._i = 0
        self.done = threading.Event()

    def receive_gaze_datum(self, timeout_seconds=None):
        if self._i >= len(self._data):
            self.done.set()
            return None
        self._i += 1
        return self._data[self._i - 1]

    def receive_eye_events(self, timeout_seconds=None):
        return None


def test_neon_relay_publishes_sanitized_chunks():
    rec = generate(duration=75.0, rate=200.0, seed=8, fov_deg=(103.0, 77.0)).recording
    mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=32)
    pipe = PrivatePipeline(mech, rng=secure_generator(2), events=EventConfig(fov_deg=(103.0, 77.0)))
    sink = ReleasePublisher("tcp://127.0.0.1:0")
    sub = connect_subscriber(sink.endpoint)
    while sink.poll_subscriptions() == 0:
        sub.poll(20)
    device = ReplayDevice(rec)
    relay = NeonRelay(pipe, sink, device)
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        assert sub.poll(10_000)
        topic, payload = sub.recv_multipart()
    finally:
        device.done.wait(10)
        relay.stop()
        th.join(5)
        sub.close(linger=0)
        sink.close()
    msg = msgpack.unpackb(payload, raw=False)
    assert topic == b"streamdp.features.dcfpa"
    assert np.array(msg["values"]).shape == (32, 52)
    assert relay.released >= 1
