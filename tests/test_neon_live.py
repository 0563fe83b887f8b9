"""Neon live decoding with the realtime API's own datum types, and the Neon relay loop driven by a
device that replays a recording through those types."""

from __future__ import annotations

import math
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

gaze_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.gaze")
events_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.eye_events")

from streamdp.config import SessionConfig  # noqa: E402
from streamdp.network.neon import NeonDecoder, NeonRelay  # noqa: E402
from streamdp.network.sink import ReleasePublisher, StatusPublisher  # noqa: E402
from streamdp.network.subscriber import connect_subscriber  # noqa: E402
from streamdp.session import Session  # noqa: E402
from streamdp.sinks import CollectingSink  # noqa: E402
from streamdp.status import SessionStatus, StatusEvent  # noqa: E402
from streamdp.synthetic import generate  # noqa: E402


def eyestate(x, y, worn, d_left, d_right, t):
    zeros = [0.0] * 6
    return gaze_mod.EyestateGazeData(x, y, worn, d_left, *zeros, d_right, *zeros, t)


def blink(start_ns, end_ns):
    return events_mod.BlinkEventData(4, start_ns, end_ns, start_ns * 1e-9)


def _decode(*datums, events=()):
    dec = NeonDecoder()
    for d in datums:
        dec.add_gaze(d)
    for e in events:
        dec.add_event(e)
    cols, blinks = dec.take()
    return dec, cols, blinks


def test_eyestate_gaze_is_normalized_with_the_origin_bottom_left_and_diameters_averaged():
    _, cols, _ = _decode(eyestate(800.0, 300.0, True, 3.0, 3.4, 1.7e9))
    assert (cols.t[0], cols.x[0], cols.y[0], cols.confidence[0], bool(cols.valid[0])) == (1.7e9, 0.5, 0.75, 1.0, True)
    assert cols.diameter_mm[0] == pytest.approx(3.2) and math.isnan(cols.diameter_px[0])
    assert cols.eye_id[0] == 2  # binocular


def test_invisible_scene_size():
    dec = NeonDecoder((1088.0, 1080.0))
    dec.add_gaze(gaze_mod.GazeData(544.0, 270.0, True, 5.0))
    cols, _ = dec.take()
    assert (cols.x[0], cols.y[0]) == (0.5, 0.75)


def test_plain_gaze_has_no_diameter_and_unworn_is_invalid():
    _, cols, _ = _decode(gaze_mod.GazeData(100.0, 100.0, False, 5.0))
    assert math.isnan(cols.diameter_mm[0]) and not cols.valid[0] and cols.confidence[0] == 0.0


def test_one_missing_diameter_leaves_the_other():
    _, cols, _ = _decode(eyestate(800.0, 600.0, True, 0.0, 3.4, 1.0), eyestate(800.0, 600.0, True, 3.0, None, 2.0))
    assert cols.diameter_mm.tolist() == [3.4, 3.0]


def test_dual_monocular_gaze_is_the_mean_of_the_left_and_right_points():
    point = gaze_mod.Point
    datum = gaze_mod.DualMonocularGazeData(point(700.0, 500.0), point(900.0, 700.0), True, 3.0)
    _, cols, _ = _decode(datum)
    assert (cols.x[0], cols.y[0], bool(cols.valid[0])) == (0.5, 0.5, True)


def test_datums_without_the_fields_are_counted_invalid_and_skipped():
    dec, cols, _ = _decode(
        "nonsense",
        gaze_mod.GazeData(None, 1.0, True, 1.0),
        gaze_mod.GazeData(1.0, 1.0, True, float("nan")),
        gaze_mod.GazeData(1.0, 1.0, True, 3.0),
    )
    assert dec.invalid == 3 and cols.t.tolist() == [3.0]


def test_blink_events_only():
    fixation = events_mod.FixationEventData(1, 1, 2, *([0.0] * 10), 0.0)
    _, _, blinks = _decode(events=[blink(2_000_000_000, 2_150_000_000), fixation])
    assert blinks.start.tolist() == pytest.approx([2.0]) and blinks.end.tolist() == pytest.approx([2.15])
    _, _, none = _decode(gaze_mod.GazeData(1.0, 1.0, True, 3.0))
    assert none is None  # no eye event at all: the session keeps its blinks as they are


def test_a_session_left_to_the_source_camera_must_be_built_for_the_device():
    with pytest.raises(ValueError, match="build it with Session\\(config, camera='neon'\\)"):
        NeonRelay(Session(SessionConfig(blinks="given")), ReplayDevice([]))
    NeonRelay(Session(SessionConfig(camera="pupil_core_720p", blinks="given")), ReplayDevice([]))
    with pytest.raises(TypeError, match="session must be a Session"):
        NeonRelay(SessionConfig(), ReplayDevice([]))


class ReplayDevice:
    """A realtime-API device that hands out gaze datums one per call, then eye events, and stops
    ``relay`` (if given) once it has nothing more. It has ``close()`` as the real one does."""

    def __init__(self, gaze, events=(), relay=None):
        self._gaze = list(gaze)
        self._events = list(events)
        self._i = 0
        self.relay = relay
        self.done = threading.Event()
        self.closed = False

    def receive_gaze_datum(self, timeout_seconds=None):
        if self._i >= len(self._gaze):
            self.done.set()
            if self.relay is not None:
                self.relay.stop()
            return None
        self._i += 1
        return self._gaze[self._i - 1]

    def receive_eye_events(self, timeout_seconds=None):
        # an event is given once the gaze has reached its end, as the device sends it
        if self._events and self._i and self._gaze[self._i - 1].timestamp_unix_seconds >= self._events[0][0]:
            return self._events.pop(0)[1]
        return None

    def close(self):
        self.closed = True


def eyestates(recording, scene=(1600.0, 1200.0)):
    g = recording.gaze
    return [
        eyestate(x * scene[0], (1 - y) * scene[1], True, d, d, t)
        for t, x, y, d in zip(g.t.tolist(), g.x.tolist(), g.y.tolist(), g.diameter.tolist(), strict=True)
    ]


def test_neon_relay_publishes_sanitized_chunks_and_closes_the_device():
    rec = generate(duration=75.0, rate=200.0, seed=8, fov_deg=(103.0, 77.0)).recording
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    sub = connect_subscriber(sink.endpoint)
    assert sink.wait_for_subscribers(1, timeout=5.0)
    session = Session(SessionConfig(chunk_length=32, blinks="given"), sinks=[sink], seed=2, camera="neon")
    device = ReplayDevice(eyestates(rec))
    relay = NeonRelay(session, device)
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
    assert relay.released >= 1 and device.closed
    assert session.counters.received == len(rec.gaze)


def test_neon_relay_takes_blinks_from_the_devices_eye_events():
    rec = generate(duration=40.0, rate=200.0, seed=3, fov_deg=(103.0, 77.0)).recording
    assert rec.blinks is not None and len(rec.blinks.start) >= 2
    events = [
        (e, blink(round(s * 1e9), round(e * 1e9)))
        for s, e in zip(rec.blinks.start.tolist(), rec.blinks.end.tolist(), strict=True)
    ]
    config = SessionConfig(chunk_length=8, window=4.0, step=0.25, blinks="given")
    session = Session(config, sinks=[CollectingSink()], seed=1, camera="neon")
    rows = session.keep_feature_rows()
    relay = NeonRelay(session, ReplayDevice(eyestates(rec), events))
    relay.device.relay = relay
    relay.run()
    session.flush()
    blink_rate = np.concatenate([r.values for r in rows])[:, 27]
    assert blink_rate.max() > 0  # the device's blinks reached the windows
    assert session.counters.received == len(rec.gaze)


def test_a_clock_going_back_restarts_the_windows():
    rec = generate(duration=50.0, rate=200.0, seed=4, fov_deg=(103.0, 77.0)).recording
    data = eyestates(rec)
    half = len(data) // 2
    back = [d._replace(timestamp_unix_seconds=d.timestamp_unix_seconds - 1000.0) for d in data[half:]]
    session = Session(SessionConfig(chunk_length=8, window=4.0, step=0.25, blinks="given"), seed=1, camera="neon")
    relay = NeonRelay(session, ReplayDevice(data[:half] + back))
    relay.device.relay = relay
    relay.run()
    assert session.counters.restarts == 1 and session.counters.late == 0


class WaitingDevice:
    """A realtime-API device that hands out gaze datums one per call and then, as the real one
    does when no gaze comes, waits ``timeout_seconds`` and returns None, until closed."""

    def __init__(self, gaze):
        self._gaze = list(gaze)
        self._i = 0
        self.done = threading.Event()
        self._closed = threading.Event()

    def receive_gaze_datum(self, timeout_seconds=None):
        if self._i < len(self._gaze):
            self._i += 1
            return self._gaze[self._i - 1]
        self.done.set()
        self._closed.wait(timeout_seconds)
        return None

    def receive_eye_events(self, timeout_seconds=None):
        return None

    def close(self):
        self._closed.set()


def _statuses(sub, until, timeout=10.0):
    """Status messages read from ``sub`` until one satisfies ``until`` (or ``timeout`` s pass)."""
    poller = zmq.Poller()
    poller.register(sub, zmq.POLLIN)
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not poller.poll(int(max(0.0, deadline - time.monotonic()) * 1000)):
            break
        topic, payload = sub.recv_multipart()
        assert topic == b"streamdp.status"
        out.append(SessionStatus.from_message(msgpack.unpackb(payload, raw=False)))
        if until(out[-1]):
            break
    return out


def test_neon_relay_publishes_its_status_every_interval_and_when_it_stops():
    rec = generate(duration=20.0, rate=200.0, seed=5, fov_deg=(103.0, 77.0)).recording
    data = eyestates(rec)
    publisher = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    owner = StatusPublisher("tcp://127.0.0.1:0")  # status goes to the device owner's socket only
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.connect(publisher.endpoint)  # the one subscriber the status counts
    sub.connect(owner.endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, b"streamdp.status")
    assert publisher.wait_for_subscribers(1, timeout=5.0)
    sinks = [publisher, owner]
    session = Session(SessionConfig(chunk_length=32, blinks="given"), sinks=sinks, seed=2, camera="neon")
    device = WaitingDevice(data)
    relay = NeonRelay(session, device, status_interval=0.05)
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        running = _statuses(sub, lambda s: s.received == len(data))
        assert device.done.wait(10)
        relay.stop()
        th.join(5)
        stopped = _statuses(sub, lambda s: s.event is StatusEvent.STOPPED)
    finally:
        relay.stop()
        sub.close(linger=0)
        publisher.close()
        owner.close()
    assert not th.is_alive()
    assert running and {s.event for s in running} == {StatusEvent.RUNNING}
    assert running[-1].received == len(data) and running[-1].subscribers == 1
    assert all(s.mechanism == "dcfpa" for s in running + stopped)
    assert stopped[-1].event is StatusEvent.STOPPED and stopped[-1].received == len(data)
    assert {s.event for s in stopped[:-1]} <= {StatusEvent.RUNNING}


def test_neon_relay_publishes_no_running_status_before_its_interval():
    rec = generate(duration=10.0, rate=200.0, seed=6, fov_deg=(103.0, 77.0)).recording
    sink = CollectingSink()
    config = SessionConfig(chunk_length=8, window=4.0, step=0.25, blinks="given")
    session = Session(config, sinks=[sink], seed=1, camera="neon")
    relay = NeonRelay(session, ReplayDevice(eyestates(rec)))  # the default interval: 10 s
    relay.device.relay = relay
    relay.run()
    assert [s.event for s in sink.statuses] == [StatusEvent.STOPPED]
    assert sink.statuses[0].received == len(rec.gaze) and sink.statuses[0].subscribers == 0


@pytest.mark.parametrize(
    ("interval", "error", "message"),
    [
        ("10", TypeError, "status_interval must be a number"),
        (0.0, ValueError, "finite and > 0"),
        (math.inf, ValueError, "finite and > 0"),
    ],
)
def test_a_bad_status_interval_is_refused(interval, error, message):
    session = Session(SessionConfig(blinks="given"), camera="neon")
    with pytest.raises(error, match=message):
        NeonRelay(session, ReplayDevice([]), status_interval=interval)
