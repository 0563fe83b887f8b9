"""The device side of Neon's RTSP streams, as the realtime API's own stream classes read them.

``RTSPGazeStreamer`` and ``RTSPEyeEventStreamer`` (the API's parsers) read RTP packets from their
``reader``: :class:`PacketReader` is that reader, handing out the payloads given to it as RTP
packets (dpkt's, as aiortsp's reader does) with the device's clock, and then ends as a closed
connection does. Everything above it is the realtime API's own code: the raw streamer's
timestamps, the parsers' lookup by packet length or event type, the datum classes.
"""

from __future__ import annotations

import struct
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import Any

import numpy as np
import pytest

gaze_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.gaze")
events_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.eye_events")
from dpkt.rtp import RTP  # noqa: E402  (aiortsp's packet class; installed with the realtime API)

#: the RTP clock of the device's streams
CLOCK_RATE = 90_000
#: eyeball centre and optical axis of one eye (EyestateGazeData's fields after the diameter)
EYE = (1.0, 2.0, 3.0, 0.0, 0.0, 1.0)


class PacketReader:
    """What aiortsp's reader gives the realtime API: RTP packets, each with a timestamp on the
    device's clock (``times``, Unix seconds), then the end of the stream."""

    def __init__(self, payloads: Sequence[bytes], times: Sequence[float]) -> None:
        self.payloads, self.times = list(payloads), list(times)
        self.t0 = self.times[0] if self.times else 0.0

    async def __aenter__(self) -> PacketReader:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    async def iter_packets(self) -> AsyncIterator[Any]:
        for raw, t in zip(self.payloads, self.times, strict=True):
            yield RTP(data=raw, ts=round((t - self.t0) * CLOCK_RATE))

    def absolute_timestamp_from_packet(self, packet: Any) -> float:
        return self.t0 + packet.ts / CLOCK_RATE


class GazeFromPackets(gaze_mod.RTSPGazeStreamer):  # type: ignore[misc]
    """The API's gaze streamer reading :class:`PacketReader` instead of an RTSP connection."""

    def __init__(self, reader: PacketReader) -> None:
        self._packets = reader

    @property
    def reader(self) -> Any:
        return self._packets


class EyeEventsFromPackets(events_mod.RTSPEyeEventStreamer):  # type: ignore[misc]
    """The API's eye-event streamer reading :class:`PacketReader`."""

    def __init__(self, reader: PacketReader) -> None:
        self._packets = reader

    @property
    def reader(self) -> Any:
        return self._packets


def stream_of(streamer_class: type, payloads: Sequence[bytes], times: Sequence[float]) -> Any:
    """A factory of the stream as ``receive_gaze_data`` / ``receive_eye_events_data`` give it,
    through the API's own streamer (a new connection each call)."""

    async def receive() -> AsyncIterator[Any]:
        async with streamer_class(PacketReader(payloads, times)) as streamer:
            async for datum in streamer.receive():
                yield datum

    return receive


def eyestate_packet(x: float, y: float, worn: bool, diameter: float) -> bytes:
    """A 65-byte ``EyestateGazeData`` packet (scene pixels, both diameters ``diameter``)."""
    return struct.pack("!ffB" + "f" * 14, x, y, 255 if worn else 0, diameter, *EYE, diameter, *EYE)


def gaze_packets(recording: Any, scene: tuple[float, float] = (1600.0, 1200.0)) -> tuple[list[bytes], list[float]]:
    """A recording's gaze as the device sends it: unworn (confidence 0) during its blinks."""
    g = recording.gaze
    t = np.asarray(g.t, dtype=np.float64)
    closed = np.zeros(t.shape[0], dtype=bool)
    if recording.blinks is not None:
        for s, e in zip(recording.blinks.start.tolist(), recording.blinks.end.tolist(), strict=True):
            closed |= (t >= s) & (t <= e)
    payloads = [
        eyestate_packet(x * scene[0], (1 - y) * scene[1], not c, d)
        for x, y, d, c in zip(g.x.tolist(), g.y.tolist(), g.diameter.tolist(), closed.tolist(), strict=True)
    ]
    return payloads, t.tolist()


def blink_packet(start: float, end: float) -> bytes:
    return struct.pack("!iqq", 4, round(start * 1e9), round(end * 1e9))


def blink_packets(recording: Any) -> tuple[list[bytes], list[float]]:
    b = recording.blinks
    pairs: Iterable[tuple[float, float]] = zip(b.start.tolist(), b.end.tolist(), strict=True)
    payloads, times = [], []
    for s, e in pairs:
        payloads.append(blink_packet(s, e))
        times.append(e)
    return payloads, times
