"""Capture's world loop and ``g_pool`` as far as plugins see them: each frame collects the
datums of the period into ``events`` (lists of dicts), calls every plugin's ``recent_events`` in
order, then publishes every datum of ``events`` (but the frame) on the IPC backbone under its
``topic``, packed with msgpack as Capture's ``Msg_Streamer`` does."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import msgpack
import zmq


class IPCPublisher:
    def __init__(self, address: str) -> None:
        self.socket = zmq.Context.instance().socket(zmq.PUB)
        self.socket.linger = 0
        self.socket.connect(address)

    def send(self, payload: dict[str, Any]) -> None:
        # msgpack refuses numpy scalars, as in Capture: a plugin must publish plain types
        self.socket.send_multipart([payload["topic"].encode(), msgpack.packb(payload, use_bin_type=True)])

    def notify(self, notification: dict[str, Any]) -> None:
        self.send({**notification, "topic": "notify." + notification["subject"]})

    def close(self) -> None:
        self.socket.close(linger=0)


def make_g_pool(ipc_pub: IPCPublisher) -> SimpleNamespace:
    """Capture's ``g_pool``: Pupil time is the monotonic clock minus ``timebase.value`` (a shared
    ``multiprocessing.Value`` in Capture)."""
    g_pool = SimpleNamespace(app="capture", ipc_pub=ipc_pub, menubar=[], plugins=None)
    g_pool.timebase = SimpleNamespace(value=0.0)
    g_pool.get_now = time.monotonic
    g_pool.get_timestamp = lambda: g_pool.get_now() - g_pool.timebase.value
    return g_pool


def set_clock(g_pool: SimpleNamespace, target: float) -> str:
    """Pupil Remote's ``T <target>``: the timebase is written directly and nothing is notified."""
    g_pool.timebase.value = g_pool.get_now() - float(target)
    return "Timesync successful."


def run_frame(g_pool: SimpleNamespace, events: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    for p in g_pool.plugins:
        p.recent_events(events)
    for key, data in events.items():
        if key not in ("frame", "depth_frame", "dt"):
            for d in data:
                g_pool.ipc_pub.send(d)
    return events


def deliver_notification(g_pool: SimpleNamespace, notification: dict[str, Any]) -> None:
    """A notification as Capture's world loop hands it to every plugin, in order."""
    for p in g_pool.plugins:
        p.on_notify(notification)
