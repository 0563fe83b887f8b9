"""The simulator's Pupil Remote: Capture's Network API plugin as far as binding, commands and
restarts go, written from Capture's source (``network_api/network_api_plugin.py``,
``network_api/controller/pupil_remote_controller.py``, ``launchables/world.py``, v3.0–v3.6).

What Capture does, and so does this:

- Pupil Remote binds ``tcp://{host}:{port}``: ``host="*"`` (every interface) unless the user set a
  custom address; when that bind fails, Capture falls back to ``tcp://*:*`` (every interface, a
  random port) and logs the failure as an error.
- A restart stops the server and binds again. It happens from the plugin's menu (primary
  interface on/off, port, custom address: no notification at all) or when the plugin is replaced
  by a ``start_plugin`` notification naming ``NetworkApiPlugin`` (its ``args``: ``host``,
  ``use_primary_interface``, ``format``; the port stays Capture's preferred remote port). Replacing
  the plugin notifies ``frame_publishing.stopped`` (the old instance's cleanup) and
  ``frame_publishing.started`` (the new one's init); ``stop_plugin`` stops the server.
- The only trace of a restart on the backbone is Capture's logging: the world process's root
  logger publishes every record, debug included, as ``logging.<level>`` with the record's fields
  (``name``, ``msg``, ``levelname``, …). The controller logs ``on_pupil_remote_server_did_stop``
  and ``on_pupil_remote_server_did_start(<host>:<port>)`` (debug, logger
  ``network_api.controller.pupil_remote_controller``) after the bind succeeded.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import msgpack
import zmq

from .binding import bind_error

#: the logger whose records announce Pupil Remote's restarts (Capture's module path)
REMOTE_LOGGER = "network_api.controller.pupil_remote_controller"
DID_START = "on_pupil_remote_server_did_start"
DID_STOP = "on_pupil_remote_server_did_stop"
NETWORK_API = "NetworkApiPlugin"
PUPIL_VERSION = "3.5.1"

Publish = Callable[[list[bytes]], None]


def log_record(
    level: str, msg: str, *, logger: str = REMOTE_LOGGER, func: str = "", process: str = "world"
) -> list[bytes]:
    """The frames of a log record as Capture's processes publish it (``zmq_tools.ZMQ_handler``:
    ``record.__dict__`` plus ``topic``); ``process`` is the publishing process (``eye0``, …)."""
    now = time.time()
    record: dict[str, Any] = {
        "name": logger,
        "msg": msg,
        "args": [],
        "levelname": level.upper(),
        "levelno": {"debug": 10, "info": 20, "warning": 30, "error": 40}[level],
        "module": logger.rsplit(".", 1)[-1],
        "funcName": func,
        "created": now,
        "msecs": (now % 1) * 1000,
        "processName": process,
        "exc_info": None,
        "exc_text": None,
        "topic": f"logging.{level}",
    }
    return [record["topic"].encode(), msgpack.packb(record, use_bin_type=True)]


def notification(subject: str, **fields: Any) -> list[bytes]:
    payload = {"subject": subject, **fields, "topic": "notify." + subject}
    return [payload["topic"].encode(), msgpack.packb(payload, use_bin_type=True)]


def plugin_request(frames: list[bytes]) -> tuple[str, dict[str, Any]] | None:
    """``("start_plugin" | "stop_plugin", args)`` when ``frames`` notify Capture to start or stop
    its Network API plugin, else None."""
    if len(frames) < 2 or frames[0] not in (b"notify.start_plugin", b"notify.stop_plugin"):
        return None
    try:
        note = msgpack.unpackb(frames[1], raw=False, strict_map_key=False)
    except Exception:  # Capture's world process would fail on it too; the simulator only ignores it
        return None
    if not isinstance(note, dict) or note.get("name") != NETWORK_API:
        return None
    args = note.get("args") or {}
    return str(note.get("subject")), (args if isinstance(args, dict) else {})


def bind_retrying(sock: zmq.Socket, address: str, patience: float = 3.0) -> None:
    """Bind, waiting out a previous owner of the port: ZeroMQ releases a closed socket's port
    asynchronously, so a Capture restarted on 50020 may find it still taken for a moment.

    Raises
    ------
    InputError
        The port is still taken after ``patience`` seconds, or the address cannot be bound.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            sock.bind(address)
            return
        except zmq.ZMQError as exc:
            if exc.errno != zmq.EADDRINUSE or time.monotonic() > deadline:
                raise bind_error(address, exc) from None
            time.sleep(0.05)


class PupilRemoteServer:
    """Pupil Remote's REP socket with Capture's binding and restarts; owned by one thread (the
    simulator's broker), which calls :meth:`start`, :meth:`restart` and :meth:`stop`.

    Parameters
    ----------
    context : zmq.Context
    host : str
        Where Pupil Remote binds: ``"*"`` as Capture's default, or an address.
    port : int
        Capture's preferred remote port (0: any free port, for tests).
    publish : callable
        Puts frames on the backbone (the announcements).
    bind : callable
        Binds a socket to an address, raising :class:`~streamdp.errors.InputError` when it cannot.
    """

    def __init__(
        self, context: zmq.Context, *, host: str, port: int, publish: Publish, bind: Callable[[zmq.Socket, str], None]
    ) -> None:
        self._ctx = context
        self.host = host
        self.preferred_port = port
        self.port = 0
        self.socket: zmq.Socket | None = None
        self._publish = publish
        self._bind = bind

    def start(self, host: str, port: int, *, announce: bool = True) -> None:
        """Bind ``tcp://{host}:{port}``, falling back to ``tcp://*:*`` as Capture does."""
        sock = self._ctx.socket(zmq.REP)
        sock.linger = 0
        address = f"tcp://{host}:{port or '*'}"
        fell_back = False
        try:
            self._bind(sock, address)
        except Exception as exc:
            if not announce:  # the simulator's own start: its caller hears of it
                sock.close(linger=0)
                raise
            # Capture's fallback, announced only as an error record: every interface, any port
            self._publish(log_record("error", f"Could not bind to Socket: {address}. Reason: {exc}"))
            sock.bind("tcp://*:*")
            host, fell_back = "*", True
        self.socket = sock
        self.host = host
        self.port = int(sock.last_endpoint.decode().rsplit(":", 1)[1])
        if announce and not fell_back:
            self._publish(log_record("debug", f"{DID_START}({host}:{port or self.port})", func=DID_START))

    def stop(self, *, announce: bool = True) -> None:
        if self.socket is None:
            return
        self.socket.close(linger=0)
        self.socket = None
        if announce:
            self._publish(log_record("debug", DID_STOP, func=DID_STOP))

    def restart(self, host: str, port: int | None = None) -> None:
        """What the menu does: stop, then bind ``host`` on ``port`` (default: the current one)."""
        port = self.port if port is None else port
        self.stop()
        self.start(host, port)

    def answer(
        self,
        frames: list[bytes],
        *,
        ports: tuple[int, int],
        now: Callable[[], float],
        set_time: Callable[[float], None],
        on_recording: Callable[[bool], None],
    ) -> str:
        """Pupil Remote's reply to ``frames`` (``ports``: SUB_PORT, PUB_PORT), its notifications
        published, as ``PupilRemoteController.__on_recv`` answers."""
        if len(frames) >= 2:  # Capture forwards any multi-frame request onto the backbone
            self._publish(frames)
            return "Message forwarded."
        try:
            cmd = frames[0].decode()
        except UnicodeDecodeError:
            return "Unknown command."
        if cmd in ("SUB_PORT", "PUB_PORT"):
            return str(ports[0] if cmd == "SUB_PORT" else ports[1])
        if cmd.startswith("T"):
            try:
                target = float(cmd[2:])
            except ValueError:
                return f"'{cmd[2:]}' cannot be converted to float."
            set_time(target)
            return "Timesync successful."
        if cmd.startswith("t"):
            return repr(now())
        if cmd.startswith(("R", "r")):
            on_recording(cmd.startswith("R"))
            if cmd.startswith("R"):
                self._publish(notification("recording.should_start", session_name=cmd[2:]))
            else:
                self._publish(notification("recording.should_stop"))
            return "OK"
        if cmd in ("C", "c"):
            self._publish(notification("calibration.should_start" if cmd == "C" else "calibration.should_stop"))
            return "OK"
        if cmd == "v":
            return PUPIL_VERSION
        return "Unknown command."

    def replace_plugin(self, subject: str, args: dict[str, Any]) -> None:
        """What Capture does on ``start_plugin``/``stop_plugin`` naming its Network API plugin."""
        self._publish(notification("frame_publishing.stopped"))
        self.stop()
        if subject != "start_plugin":
            return
        self._publish(notification("frame_publishing.started", format=str(args.get("format", "jpeg"))))
        self.start(str(args.get("host", "*")), self.preferred_port or self.port)
