"""Neon's streams fail one at a time and loudly (issue #24, item 2).

Bad packets go through the realtime API's own parsers (``RTSPGazeStreamer``,
``RTSPEyeEventStreamer``: see tests/neon_packets.py) into the real :class:`NeonStream` and
:class:`NeonRelay`: an eye event the API cannot read leaves gaze running, is said once with its
reason and count, and blinks then come from confidence; gaze the API cannot read ends the relay
with one line naming the reason; a stream that ends is reopened with backoff and counted.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import threading
from typing import Any

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.network.neon import DeviceStreamError, NeonRelay
from streamdp.network.neon_stream import NeonStream
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.status import StatusEvent
from streamdp.synthetic import generate

from .neon_packets import (
    EyeEventsFromPackets,
    GazeFromPackets,
    blink_packet,
    blink_packets,
    eyestate_packet,
    gaze_packets,
    stream_of,
)
from .test_neon_stream import StopWhenDrained

T0 = 1.7e9
GOOD = eyestate_packet(800.0, 300.0, True, 3.0)
BLINK = blink_packet(T0, T0 + 0.1)

#: eye events the realtime API cannot read: (packet, what its parser raises, our reason)
BAD_EVENTS = {
    "unknown-type-9": (struct.pack("!iqq", 9, 1, 2), KeyError, "an eye event of type 9, a format"),
    "unknown-type-negative": (struct.pack("!i", -1), KeyError, "an eye event of type -1, a format"),
    "blink-cut-short": (struct.pack("!iq", 4, 1), struct.error, "could not read an eye event: error: unpack"),
    "fixation-cut-short": (struct.pack("!iqq", 1, 1, 2), struct.error, "could not read an eye event: error: unpack"),
}

#: gaze packets the realtime API cannot read (no gaze type has their length)
BAD_GAZE = {
    "7-bytes": (b"\x00" * 7, "a gaze packet of 7 bytes, a format"),
    "empty": (b"", "a gaze packet of 0 bytes, a format"),
    "64-bytes-one-short-of-eyestate": (GOOD[:-1], "a gaze packet of 64 bytes, a format"),
}


def _times(n: int, start: float = T0, rate: float = 200.0) -> list[float]:
    return [start + i / rate for i in range(n)]


def _parse(streamer: type, payloads: list[bytes]) -> tuple[list[Any], BaseException | None]:
    """What the realtime API's own streamer makes of ``payloads``: its datums, and what it raised."""
    got: list[Any] = []

    async def read() -> None:
        async for datum in stream_of(streamer, payloads, _times(len(payloads)))():
            got.append(datum)

    try:
        asyncio.run(read())
    except Exception as exc:
        return got, exc
    return got, None


def _drain(read: Any) -> list[Any]:
    out = []
    while (datum := read(0.0)) is not None:
        out.append(datum)
    return out


@pytest.mark.parametrize("bad", list(BAD_EVENTS.values()), ids=list(BAD_EVENTS))
def test_an_eye_event_the_api_cannot_read_fails_that_stream_alone(bad):
    packet, error, reason = bad
    parsed, raised = _parse(EyeEventsFromPackets, [BLINK, packet])
    assert len(parsed) == 1 and isinstance(raised, error)  # the API's own parser refuses it
    events = [BLINK, packet, blink_packet(T0 + 1, T0 + 1.1)]
    stream = NeonStream(
        gaze=stream_of(GazeFromPackets, [GOOD] * 2000, _times(2000)),
        eye_events=stream_of(EyeEventsFromPackets, events, [T0 + 0.1, T0 + 0.2, T0 + 1.1]),
    )
    try:
        assert stream.wait_until_drained(30.0)
        assert len(_drain(stream.receive_gaze_datum)) == 2000 and stream.gaze_failure is None
        assert [e.event_type for e in _drain(stream.receive_eye_events)] == [4]
        failure = stream.eye_events_failure
        assert failure is not None and (failure.stream, failure.received) == ("eye events", 1)
        assert reason in failure.reason and "\n" not in str(failure)
        assert str(failure).startswith("the eye events stream failed after 1 eye events: ")
    finally:
        stream.close()


@pytest.mark.parametrize("bad", list(BAD_GAZE.values()), ids=list(BAD_GAZE))
def test_gaze_the_api_cannot_read_fails_that_stream_alone(bad):
    packet, reason = bad
    parsed, raised = _parse(GazeFromPackets, [GOOD, packet])
    assert len(parsed) == 1 and isinstance(raised, KeyError)
    gaze = [GOOD] * 1000 + [packet] + [GOOD] * 1000
    blinks = [blink_packet(T0 + i, T0 + i + 0.1) for i in range(5)]
    stream = NeonStream(
        gaze=stream_of(GazeFromPackets, gaze, _times(len(gaze))),
        eye_events=stream_of(EyeEventsFromPackets, blinks, _times(5, T0 + 0.1, 1.0)),
    )
    try:
        assert stream.wait_until_drained(30.0)
        assert len(_drain(stream.receive_gaze_datum)) == 1000 and len(_drain(stream.receive_eye_events)) == 5
        failure = stream.gaze_failure
        assert failure is not None and (failure.stream, failure.received) == ("gaze", 1000)
        assert reason in failure.reason and stream.eye_events_failure is None
    finally:
        stream.close()


def test_the_api_s_own_traceback_is_left_out_of_the_log(caplog):
    caplog.set_level(logging.DEBUG)
    stream = NeonStream(gaze=stream_of(GazeFromPackets, [GOOD, b"\x00" * 7], _times(2)), eye_events=None)
    try:
        assert stream.wait_until_drained(30.0) and stream.gaze_failure is not None
    finally:
        stream.close()
    assert not [r for r in caplog.records if r.exc_info]


# ---------------------------------------------------------------- the relay


CONFIG = SessionConfig(chunk_length=8, window=4.0, step=0.25, blinks="given")


def _relay_run(gaze_stream: Any, event_stream: Any) -> tuple[Session, NeonRelay, list[Any], CollectingSink]:
    """The relay over a NeonStream that queued everything before the relay reads (the slowest
    consumer), stopped once the streams ended and the queue is empty."""
    stream = NeonStream(gaze=gaze_stream, eye_events=event_stream)
    assert stream.wait_until_drained(30.0)
    sink = CollectingSink()
    session = Session(CONFIG, sinks=[sink], seed=1, camera="neon")
    rows = session.keep_feature_rows()
    device = StopWhenDrained(stream)
    relay = NeonRelay(session, device)
    device.relay = relay
    relay.run()
    session.flush()
    return session, relay, rows, sink


BLINK_RATE = 27


def test_the_relay_keeps_releasing_from_gaze_when_eye_events_fail_and_blinks_come_from_confidence(caplog):
    rec = generate(duration=40.0, rate=200.0, seed=3, fov_deg=(103.0, 77.0)).recording
    assert rec.blinks is not None and len(rec.blinks.start) >= 2
    gaze = stream_of(GazeFromPackets, *gaze_packets(rec))
    events, times = blink_packets(rec)
    working = _relay_run(gaze, stream_of(EyeEventsFromPackets, events, times))
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        # the device's first eye event is of a type the API does not know: no blink event at all
        unknown = struct.pack("!iqq", 9, 1, 2)
        failing = _relay_run(gaze, stream_of(EyeEventsFromPackets, [unknown, *events], [times[0], *times]))
    session, relay, rows, sink = failing
    said = [r.getMessage() for r in caplog.records if "eye events stream failed" in r.getMessage()]
    assert said == [
        "gaze: the eye events stream failed after 0 eye events: an eye event of type 9, a format "
        + said[0].split("a format ", 1)[1]
    ]
    assert "blinks now come from confidence" in said[0]
    # gaze went on: every sample received, the same chunks at the same public times
    assert session.counters.received == len(rec.gaze) == working[0].counters.received
    assert [r.t.tolist() for r in sink.releases] == [r.t.tolist() for r in working[3].releases]
    assert len(sink.releases) >= 3 and relay.fallback_blinks is not None
    # the worn flag's drops (the only blinks on this stream) are found from confidence
    assert np.concatenate([r.values for r in rows])[:, BLINK_RATE].max() > 0


@pytest.mark.parametrize("bad", list(BAD_GAZE.values()), ids=list(BAD_GAZE))
def test_the_relay_ends_naming_the_reason_when_gaze_fails(bad):
    packet, reason = bad
    gaze = [GOOD] * 1000 + [packet] + [GOOD] * 1000
    sink = CollectingSink()
    session = Session(CONFIG, sinks=[sink], seed=1, camera="neon", source="Neon at 10.0.0.7")
    stream = NeonStream(gaze=stream_of(GazeFromPackets, gaze, _times(len(gaze))), eye_events=None)
    relay = NeonRelay(session, stream)
    raised: list[BaseException] = []

    def run() -> None:
        try:
            relay.run()
        except BaseException as exc:
            raised.append(exc)

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(10.0)
    if th.is_alive():
        relay.stop()
        th.join(5.0)
        pytest.fail("the relay went on after its gaze stream failed")
    assert len(raised) == 1 and isinstance(raised[0], DeviceStreamError)
    message = str(raised[0])
    assert message.startswith("Neon at 10.0.0.7: the gaze stream failed after 1000 gaze datums: ")
    assert reason in message and "\n" not in message
    # what came before the failure was fed; the stop was published
    assert session.counters.received == 1000 and sink.statuses[-1].event is StatusEvent.STOPPED


# ---------------------------------------------------------------- reconnection


class Sessions:
    """A device whose stream closes after each batch of ``per_connection`` datums, for
    ``connections`` connections, each through the API's own streamer."""

    def __init__(self, streamer: type, payload: bytes, per_connection: int, connections: int) -> None:
        self.streamer, self.payload = streamer, payload
        self.per_connection, self.connections = per_connection, connections
        self.opened = 0

    def __call__(self) -> Any:
        n = self.per_connection if self.opened < self.connections else 0
        start = T0 + self.opened * self.per_connection / 200.0
        self.opened += 1
        return stream_of(self.streamer, [self.payload] * n, _times(n, start))()


def test_a_stream_that_ends_is_reopened_with_backoff_and_counted():
    gaze = Sessions(GazeFromPackets, GOOD, per_connection=300, connections=3)
    stream = NeonStream(gaze=gaze, eye_events=None, reconnect_for=1.0)
    try:
        # three connections give gaze; the ones after give nothing: it fails once 1 s passed
        assert stream.wait_until_drained(30.0)
        assert len(_drain(stream.receive_gaze_datum)) == 900
        assert stream.reconnects == gaze.opened - 1 and stream.reconnects >= 3
        failure = stream.gaze_failure
        assert failure is not None and failure.received == 900
        assert failure.reason.startswith("it ended and gave nothing for 1 s of reconnecting")
    finally:
        stream.close()


def test_the_relay_counts_reconnections_in_its_status_and_says_so(caplog):
    gaze = Sessions(GazeFromPackets, GOOD, per_connection=400, connections=3)
    stream = NeonStream(gaze=gaze, eye_events=None, reconnect_for=1.0)
    assert stream.wait_until_drained(30.0)
    sink = CollectingSink()
    session = Session(CONFIG, sinks=[sink], seed=1, camera="neon")
    relay = NeonRelay(session, stream)
    with caplog.at_level(logging.WARNING), pytest.raises(DeviceStreamError, match="gave nothing for 1 s"):
        relay.run()
    assert session.counters.reconnects == stream.reconnects >= 3 and session.counters.received == 1200
    reconnecting = [s for s in sink.statuses if s.event is StatusEvent.RECONNECTING]
    assert reconnecting and reconnecting[-1].reconnects == stream.reconnects
    assert any("reconnecting" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- parameters


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("30", TypeError, "reconnect_for must be None or a number of seconds, got '30'"),
        (True, TypeError, "reconnect_for must be None or a number of seconds, got True"),
        (0.0, ValueError, "reconnect_for must be finite and > 0 seconds, got 0.0"),
        (-1, ValueError, "reconnect_for must be finite and > 0 seconds, got -1"),
        (float("inf"), ValueError, "reconnect_for must be finite and > 0 seconds, got inf"),
    ],
    ids=["string", "bool", "zero", "negative", "infinite"],
)
def test_a_bad_reconnect_for_is_refused(value, error, message):
    with pytest.raises(error, match=f"^{message}$"):
        NeonStream(gaze=stream_of(GazeFromPackets, [], []), eye_events=None, reconnect_for=value)


# ---------------------------------------------------------------- the command


def test_relay_neon_ends_with_one_line_and_a_non_zero_exit_when_gaze_fails(monkeypatch, capsys):
    from streamdp.cli import main
    from streamdp.network import neon

    gaze = [GOOD] * 1000 + [b"\x00" * 7] + [GOOD] * 1000
    opened: list[NeonStream] = []

    def device_at(address: str | None) -> NeonStream:  # the device: its gaze through the API's parser
        opened.append(NeonStream(gaze=stream_of(GazeFromPackets, gaze, _times(len(gaze))), eye_events=None))
        return opened[0]

    monkeypatch.setattr(neon, "connect_device", device_at)
    status = main(["relay", "--neon", "10.0.0.7", "--bind", "tcp://127.0.0.1:0", "--status-bind", "tcp://127.0.0.1:0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(opened) == 1
    assert err[0].startswith("streamdp relay: Neon at 10.0.0.7 → tcp://127.0.0.1:")
    assert len(err) == 2 and err[1].startswith(
        "streamdp relay: error: Neon at 10.0.0.7: the gaze stream failed after 1000 gaze datums: "
        "a gaze packet of 7 bytes, a format pupil-labs-realtime-api"
    )


# ---------------------------------------------------------------- the device's public interface


class PublicDevice:
    """``simple.Device`` as open_device_streams may use it: its public sensor methods and
    ``close()``, nothing private (a ``_status`` read would fail here)."""

    def __init__(self, port: int) -> None:
        from pupil_labs.realtime_api.models import Sensor

        self.phone_name = "Neon Companion"
        self._sensor = Sensor(sensor="gaze", conn_type="DIRECT", connected=True, ip="127.0.0.1", port=port,
                              params="camera=gaze")
        self.closed = 0

    def gaze_sensor(self) -> Any:
        return self._sensor

    def eye_events_sensor(self) -> Any:
        return None  # Companion before 2.9: no eye-event stream

    def close(self) -> None:
        self.closed += 1


def test_device_streams_open_through_the_public_interface_and_give_up_when_nothing_answers():
    import socket

    from streamdp.network.neon_stream import open_device_streams

    with socket.socket() as probe:  # a port nothing listens on: every connection is refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    device = PublicDevice(port)
    stream = open_device_streams(device, reconnect_for=1.0)
    try:
        assert stream.wait_until_drained(30.0)
        failure = stream.gaze_failure
        assert failure is not None and failure.received == 0 and stream.reconnects >= 1
        assert failure.reason.startswith("it ended and gave nothing for 1 s of reconnecting")
    finally:
        stream.close()
    assert device.closed == 1
