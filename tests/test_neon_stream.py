"""Neon live from the realtime API's own datum classes built from raw packets: every gaze type,
the eye events, a slow consumer that loses nothing (or counts what did not fit), blinks from the
device's events, and the device closed when the relay stops."""

from __future__ import annotations

import struct
import threading

import numpy as np
import pytest

gaze_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.gaze")
events_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.eye_events")
from pupil_labs.realtime_api.streaming.base import RTSPData  # noqa: E402

from streamdp.config import SessionConfig  # noqa: E402
from streamdp.network.neon import NeonDecoder, NeonRelay  # noqa: E402
from streamdp.network.neon_stream import NeonStream  # noqa: E402
from streamdp.session import Session  # noqa: E402
from streamdp.sinks import CollectingSink  # noqa: E402
from streamdp.stages.schedule import ReleaseSchedule  # noqa: E402
from streamdp.synthetic import generate  # noqa: E402

T = 1.7e9


def _raw(fmt: str, *values: float) -> bytes:
    return struct.pack(fmt, *values)


#: each gaze type as the device sends it: (class, packet), binocular point (800, 300), worn,
#: diameters 3.0 (left) and 3.4 (right) where the type has them
EYE = (3.0, 1, 2, 3, 0, 0, 1)  # diameter, eyeball centre xyz, optical axis xyz
PACKETS = {
    gaze_mod.GazeData: _raw("!ffB", 800, 300, 255),
    gaze_mod.DualMonocularGazeData: _raw("!ffBff", 700, 200, 255, 900, 400),
    gaze_mod.EyestateGazeData: _raw("!ffB" + "f" * 14, 800, 300, 255, *EYE, 3.4, *EYE[1:]),
    gaze_mod.EyestateEyelidGazeData: _raw("!ffB" + "f" * 20, 800, 300, 255, *EYE, 3.4, *EYE[1:], *[0.5] * 6),
    gaze_mod.EyestateEyelidDualMonoGazeData: _raw(
        "!ffB" + "f" * 24, 800, 300, 255, *EYE, 3.4, *EYE[1:], *[0.5] * 6, 700, 200, 900, 400
    ),
    gaze_mod.BinoAndDualMonoGazeData: _raw("!ffBffff", 800, 300, 255, 700, 200, 900, 400),
}


@pytest.mark.parametrize("cls", list(PACKETS), ids=lambda c: c.__name__)
def test_every_gaze_type_of_the_realtime_api_is_decoded(cls):
    datum = cls.from_raw(RTSPData(PACKETS[cls], T))
    dec = NeonDecoder((1600.0, 1200.0))
    dec.add_gaze(datum)
    cols, _ = dec.take()
    assert dec.invalid == 0 and bool(cols.valid[0]) and cols.t[0] == T
    assert (cols.x[0], cols.y[0]) == (0.5, 0.75)
    has_diameters = hasattr(datum, "pupil_diameter_left")
    assert cols.diameter_mm[0] == pytest.approx(3.2) if has_diameters else np.isnan(cols.diameter_mm[0])


def test_the_eye_events_keep_blinks_and_leave_fixations():
    ns = 1_700_000_000_000_000_000
    events = [
        events_mod.BlinkEventData.from_raw(RTSPData(_raw("!iqq", 4, ns, ns + 150_000_000), T)),
        events_mod.FixationEventData.from_raw(RTSPData(_raw("!iqq" + "f" * 10, 1, ns, ns + 10**8, *[0.0] * 10), T)),
        events_mod.FixationOnsetEventData.from_raw(RTSPData(_raw("!iq", 2, ns), T)),
    ]
    dec = NeonDecoder()
    for e in events:
        dec.add_event(e)
    _, blinks = dec.take()
    assert dec.invalid == 0 and blinks is not None
    assert blinks.start.tolist() == [ns * 1e-9] and blinks.end.tolist() == [pytest.approx(ns * 1e-9 + 0.15)]


def _device_stream(recording, scene=(1600.0, 1200.0)):
    """The recording as the device's two RTSP streams: EyestateGazeData packets and blink events."""
    g = recording.gaze
    gaze = [
        gaze_mod.EyestateGazeData.from_raw(
            RTSPData(_raw("!ffB" + "f" * 14, x * scene[0], (1 - y) * scene[1], 255, d, *EYE[1:], d, *EYE[1:]), t)
        )
        for t, x, y, d in zip(g.t.tolist(), g.x.tolist(), g.y.tolist(), g.diameter.tolist(), strict=True)
    ]
    blinks = [
        events_mod.BlinkEventData.from_raw(RTSPData(_raw("!iqq", 4, round(s * 1e9), round(e * 1e9)), e))
        for s, e in zip(recording.blinks.start.tolist(), recording.blinks.end.tolist(), strict=True)
    ]

    async def gaze_stream():
        for d in gaze:
            yield d

    async def event_stream():
        for b in blinks:
            yield b

    return gaze, blinks, gaze_stream, event_stream


class StopWhenDrained:
    """The stream as the relay reads it, stopping the relay once the device's streams ended and
    the queue is empty (a finite recording instead of a device that never stops)."""

    def __init__(self, stream: NeonStream) -> None:
        self.stream = stream
        self.relay: NeonRelay | None = None

    def receive_gaze_datum(self, timeout_seconds=None):
        datum = self.stream.receive_gaze_datum(timeout_seconds=0.0)
        if datum is None and self.stream.finished:
            datum = self.stream.receive_gaze_datum(timeout_seconds=0.0)
            if datum is None and self.relay is not None:
                self.relay.stop()
        return datum

    def receive_eye_events(self, timeout_seconds=None):
        return self.stream.receive_eye_events(timeout_seconds)

    def close(self):
        self.stream.close()

    @property
    def dropped(self):
        return self.stream.dropped

    def __getattr__(self, name):  # what the relay watches: gaze_failure, eye_events_failure, reconnects
        return getattr(self.stream, name)


def _relay(recording, capacity, closed):
    gaze, blinks, gaze_stream, event_stream = _device_stream(recording)
    stream = NeonStream(gaze=gaze_stream, eye_events=event_stream, capacity=capacity, on_close=lambda: closed.append(1))
    # the slowest consumer: nothing is read before the device has sent everything
    assert stream.wait_until_drained(30.0)
    config = SessionConfig(chunk_length=8, window=4.0, step=0.25, blinks="given")
    session = Session(config, sinks=[CollectingSink()], seed=1, camera="neon")
    rows = session.keep_feature_rows()
    device = StopWhenDrained(stream)
    relay = NeonRelay(session, device)
    device.relay = relay
    relay.run()
    session.flush()
    return gaze, blinks, session, relay, rows


def test_a_slow_consumer_loses_no_gaze_and_the_device_is_closed_on_stop():
    rec = generate(duration=40.0, rate=200.0, seed=3, fov_deg=(103.0, 77.0)).recording
    closed: list[int] = []
    gaze, blinks, session, relay, rows = _relay(rec, capacity=60_000, closed=closed)
    assert len(blinks) >= 2
    assert session.counters.received == len(gaze) and relay.dropped == 0 and session.counters.late == 0
    assert closed == [1]
    blink_rate = np.concatenate([r.values for r in rows])[:, 27]
    assert blink_rate.max() > 0  # by default, from the device's own blink events


def test_what_does_not_fit_the_queue_is_counted():
    rec = generate(duration=10.0, rate=200.0, seed=4, fov_deg=(103.0, 77.0)).recording
    gaze, _, session, relay, _ = _relay(rec, capacity=500, closed=[])
    assert session.counters.received == 500
    assert relay.dropped == len(gaze) - 500


def test_the_neon_relay_refuses_blinks_from_confidence():
    with pytest.raises(ValueError, match="blinks='given'"):
        NeonRelay(Session(SessionConfig(blinks="confidence"), camera="neon"), StopWhenDrained(None))  # type: ignore[arg-type]


class StillConnected:
    """The stream as the relay reads it from a device that stays connected after its gaze
    stopped (the wearer took Neon off and the phone stopped sending): when nothing is queued, a
    read waits ``timeout_seconds`` and returns None, as ``simple.Device`` does, until closed."""

    def __init__(self, stream: NeonStream) -> None:
        self.stream = stream
        self._closed = threading.Event()

    def receive_gaze_datum(self, timeout_seconds=None):
        datum = self.stream.receive_gaze_datum(timeout_seconds=0.0)
        if datum is None:
            self._closed.wait(timeout_seconds)
        return datum

    def receive_eye_events(self, timeout_seconds=None):
        return self.stream.receive_eye_events(0.0)

    def close(self):
        self._closed.set()
        self.stream.close()


class ReleaseWatch(CollectingSink):
    """Keeps each release with the device clock the relay had when it went out, and says when
    ``count`` releases arrived."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.relay: NeonRelay | None = None
        self.device_times: list[float | None] = []
        self.arrived = threading.Event()

    def publish(self, release):
        super().publish(release)
        assert self.relay is not None
        self.device_times.append(self.relay.device_now())
        if len(self.releases) >= self.count:
            self.arrived.set()


def test_the_neon_relay_releases_chunks_at_their_deadlines_on_the_device_clock_when_gaze_stops():
    # 11.5 s of gaze from t = 1000: chunks of 8 steps of 0.25 s from 1004 s; the chunk of steps
    # 1010–1011.75 is due at 1011.9 s on the device's clock, 0.4 s after the last gaze
    rec = generate(duration=11.5, rate=200.0, seed=7, fov_deg=(103.0, 77.0)).recording
    gaze, _, gaze_stream, event_stream = _device_stream(rec)
    stream = NeonStream(gaze=gaze_stream, eye_events=event_stream)
    assert stream.wait_until_drained(30.0)  # the slowest consumer: everything queued first
    config = SessionConfig(chunk_length=8, window=4.0, step=0.25, blinks="given")
    schedule = ReleaseSchedule(config.window, config.step, config.chunk_length)
    slots = list(range(schedule.first_chunk(float(rec.gaze.t[0])), schedule.first_chunk(float(rec.gaze.t[0])) + 4))
    assert schedule.chunk_times(slots[-1])[0] < rec.gaze.t[-1] < schedule.chunk_times(slots[-1])[-1]
    watch = ReleaseWatch(count=len(slots))
    session = Session(config, sinks=[watch], seed=1, camera="neon")
    relay = NeonRelay(session, StillConnected(stream))
    watch.relay = relay
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        # the last chunk can only come from the relay's timer: no gaze reaches its deadline
        assert watch.arrived.wait(10.0), f"{len(watch.releases)} of {len(slots)} chunks released while running"
    finally:
        relay.stop()
        th.join(5)
    assert not th.is_alive()
    assert session.counters.received == len(gaze) and relay.dropped == 0 and session.counters.late == 0
    got = watch.releases[: len(slots)]
    assert [r.t.tolist() for r in got] == [schedule.chunk_times(c).tolist() for c in slots]
    # never before its deadline (last step + reorder window + slack) on the device's clock
    for c, now in zip(slots, watch.device_times, strict=False):
        assert now is not None and now > schedule.deadline(c) + config.reorder_window
