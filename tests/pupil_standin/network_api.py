"""Capture's Network API plugin as far as Pupil Remote goes
(pupil_src/shared_modules/network_api/network_api_plugin.py and
controller/pupil_remote_controller.py, v3).

What the stand-in keeps of Capture, each fact from that source:

- ``NetworkApiPlugin(g_pool, host="*", use_primary_interface=True, format="jpeg")``, order 0.01,
  keeps its controller in ``self.__pupil_remote``; its init dict is
  ``{"format", "host", "use_primary_interface"}``.
- On init it binds Pupil Remote (a REP socket served by a thread) to
  ``tcp://{host}:{g_pool.preferred_remote_port}``, whatever ``use_primary_interface`` says; if
  that fails it binds ``tcp://*:*`` instead (every interface, a random port).
- The menu restarts the server without any notification: the primary-interface switch
  (``tcp://*:{port}``), the port field, the custom address ``host:port``.
- ``cleanup`` stops the server (its thread gone, then Capture's 0.1 s poll); replacing the plugin
  (``start_plugin`` with its name) cleans the old instance up before the new one binds: should the
  old listener still hold the port, the new one falls back to ``tcp://*:*`` as Capture's does.
- Pupil Remote answers ``SUB_PORT``, ``PUB_PORT``, ``t``, ``T <time>`` and ``v``.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import zmq
from plugin import Plugin


class PupilRemoteController:
    """Capture's ``PupilRemoteController``: binds on init, restarts from its menu's setters."""

    def __init__(self, g_pool: Any, host: str = "*", use_primary_interface: bool = True, **kwargs: Any) -> None:
        port = int(g_pool.preferred_remote_port)
        self.g_pool = g_pool
        self.__primary_port = port
        self.__custom_port = port
        self.__custom_host = host
        self.__use_primary_interface = use_primary_interface
        self.__thread: threading.Thread | None = None
        self.__stop = threading.Event()
        self.bound = ""  # what the server's socket reports as its endpoint (host:port)
        self.__start_server(host, port)

    def get_init_dict(self) -> dict[str, Any]:
        return {"host": self.__custom_host, "use_primary_interface": self.__use_primary_interface}

    @property
    def primary_port(self) -> int:
        return self.__primary_port

    @primary_port.setter
    def primary_port(self, port: int) -> None:
        self.__primary_port = port
        self.restart_server("*", port)

    @property
    def use_primary_interface(self) -> bool:
        return self.__use_primary_interface

    @use_primary_interface.setter
    def use_primary_interface(self, value: bool) -> None:
        if self.__use_primary_interface == value:
            return
        self.__use_primary_interface = value
        if value:
            self.restart_server("*", self.__primary_port)
        else:
            self.restart_server(self.__custom_host, self.__custom_port)

    @property
    def custom_address(self) -> str:
        return f"{self.__custom_host}:{self.__custom_port}"

    @custom_address.setter
    def custom_address(self, address: str) -> None:
        self.__custom_host, port = address.split(":")
        self.__custom_port = int(port)
        self.restart_server(self.__custom_host, self.__custom_port)

    def restart_server(self, host: str, port: int) -> None:
        self.__stop_server()
        self.__start_server(host, port)

    def cleanup(self) -> None:
        self.__stop_server()

    def __start_server(self, host: str, port: int) -> None:
        socket = self.g_pool.zmq_ctx.socket(zmq.REP)
        socket.linger = 0
        try:
            socket.bind(f"tcp://{host}:{port}")
        except zmq.ZMQError:
            socket.bind("tcp://*:*")  # Capture's fallback: every interface, any port
            self.host, port_text = socket.last_endpoint.decode().replace("tcp://", "").rsplit(":", 1)
            self.port = int(port_text)
        self.bound = socket.last_endpoint.decode().replace("tcp://", "")
        self.__stop = threading.Event()
        self.__thread = threading.Thread(target=self.__serve, args=(socket, self.__stop), daemon=True)
        self.__thread.start()

    def __stop_server(self) -> None:
        # Capture sends "Exit" to its server thread, then polls every 0.1 s until the thread has
        # gone (`while self.__thread_pipe: sleep(0.1)`): it sleeps at least once, which leaves
        # ZeroMQ's reaper the time to close the old listener before a new one binds its port
        if self.__thread is not None:
            self.__stop.set()
            self.__thread.join()
            time.sleep(0.1)
            self.__thread = None

    def __serve(self, socket: zmq.Socket, stop: threading.Event) -> None:
        try:
            while not stop.is_set():
                if socket.poll(20):
                    socket.send_string(self.__answer(socket.recv_string()))
        finally:
            socket.close(linger=0)

    def __answer(self, msg: str) -> str:
        g = self.g_pool
        if msg == "SUB_PORT":
            return str(g.ipc_sub_url.split(":")[-1])
        if msg == "PUB_PORT":
            return str(g.ipc_pub_url.split(":")[-1])
        if msg[:1] == "T":
            g.timebase.value = g.get_now() - float(msg[2:])
            return "Timesync successful."
        if msg[:1] == "t":
            return repr(g.get_timestamp())
        if msg[:1] == "v":
            return str(g.version)
        return "Unknown command."


class NetworkApiPlugin(Plugin):
    order = 0.01

    def __init__(self, g_pool: Any, **kwargs: Any) -> None:
        super().__init__(g_pool)
        self.__format = kwargs.get("format", "jpeg")  # the frame publisher's setting
        self.__pupil_remote = PupilRemoteController(g_pool, **kwargs)

    def get_init_dict(self) -> dict[str, Any]:
        return {"format": self.__format, **self.__pupil_remote.get_init_dict()}

    def cleanup(self) -> None:
        self.__pupil_remote.cleanup()

    @property
    def pupil_remote_menu(self) -> PupilRemoteController:
        """What the Pupil Remote menu edits (``_use_primary_interface``, ``_primary_port``,
        ``_custom_address`` delegate to the controller's properties)."""
        return self.__pupil_remote
