"""Capture's world loop and ``g_pool`` as far as plugins see them (pupil_src/launchables/world.py,
v3): each frame collects the datums of the period into ``events`` (lists of dicts), calls every
plugin's ``recent_events`` in order, removes the plugins that are no longer alive
(``Plugin_List.clean``), then publishes every datum of ``events`` (but the frame) on the IPC
backbone under its ``topic``, packed with msgpack as Capture's ``Msg_Streamer`` does. A
notification is handled by the world (``start_plugin``, ``stop_plugin``) and then given to every
plugin; at shutdown every plugin is marked dead and cleaned up."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import msgpack
import zmq

#: Capture's default Pupil Remote port (``preferred_remote_port``); tests give a free one
PREFERRED_REMOTE_PORT = 50020


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


def make_g_pool(
    ipc_pub: IPCPublisher,
    *,
    plugins: tuple[type, ...] = (),
    remote_port: int = PREFERRED_REMOTE_PORT,
    ipc_sub_url: str = "tcp://127.0.0.1:9",
) -> SimpleNamespace:
    """Capture's ``g_pool``: Pupil time is the monotonic clock minus ``timebase.value`` (a shared
    ``multiprocessing.Value`` in Capture); ``plugin_by_name`` holds the plugin classes a
    ``start_plugin`` notification may name (``plugins``)."""
    g_pool = SimpleNamespace(app="capture", ipc_pub=ipc_pub, menubar=[], plugins=None, version="3.6.0")
    g_pool.timebase = SimpleNamespace(value=0.0)
    g_pool.get_now = time.monotonic
    g_pool.get_timestamp = lambda: g_pool.get_now() - g_pool.timebase.value
    g_pool.zmq_ctx = zmq.Context.instance()
    g_pool.preferred_remote_port = remote_port
    g_pool.ipc_sub_url = ipc_sub_url
    g_pool.ipc_pub_url = ipc_sub_url
    g_pool.plugin_by_name = {cls.__name__: cls for cls in plugins}
    return g_pool


def set_clock(g_pool: SimpleNamespace, target: float) -> str:
    """Pupil Remote's ``T <target>``: the timebase is written directly and nothing is notified."""
    g_pool.timebase.value = g_pool.get_now() - float(target)
    return "Timesync successful."


def run_frame(g_pool: SimpleNamespace, events: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    for p in g_pool.plugins:
        p.recent_events(events)
    g_pool.plugins.clean()
    for key, data in events.items():
        if key not in ("frame", "depth_frame", "dt"):
            for d in data:
                g_pool.ipc_pub.send(d)
    return events


def handle_notification(g_pool: SimpleNamespace, notification: dict[str, Any]) -> None:
    """What the world process itself does with a notification before the plugins see it."""
    subject = notification["subject"]
    if subject == "start_plugin":
        try:
            g_pool.plugins.add(g_pool.plugin_by_name[notification["name"]], args=notification.get("args", {}))
        except KeyError:
            pass  # Capture logs "Attempt to load unknown plugin"
    elif subject == "stop_plugin":
        for p in g_pool.plugins:
            if p.class_name == notification["name"]:
                p.alive = False
                g_pool.plugins.clean()


def deliver_notification(g_pool: SimpleNamespace, notification: dict[str, Any]) -> None:
    """A notification as Capture's world loop hands it on: to the world, then to every plugin."""
    handle_notification(g_pool, notification)
    for p in g_pool.plugins:
        p.on_notify(notification)


def shutdown(g_pool: SimpleNamespace) -> None:
    """Capture's world process ends (window closed, ``world_process.should_stop``): every plugin
    is marked dead, then cleaned up."""
    for p in g_pool.plugins:
        p.alive = False
    g_pool.plugins.clean()
