"""The relay's deployment check: once when it connects to Capture, again whenever Pupil Remote
restarts its server.

Capture sends no notification when Pupil Remote restarts (``network_api_plugin.py``:
``on_pupil_remote_server_did_start`` does nothing), whether from its menu or from a
``start_plugin`` naming ``NetworkApiPlugin``. What it does send is its logging: the world process's
root logger publishes every record, debug included, on the backbone as ``logging.<level>``
(``launchables/world.py``: ``zmq_tools.ZMQ_handler``), and the controller logs
``on_pupil_remote_server_did_start(<host>:<port>)`` once the new socket is bound, or an error
``Could not bind to Socket: …`` before falling back to ``tcp://*:*``. :class:`DeploymentWatch`
subscribes to those two topics on a socket of its own and reads it between the relay's reads, a
few times a second at most: never per gaze message.

Examples
--------
>>> import msgpack
>>> record = {"name": REMOTE_LOGGER, "msg": "on_pupil_remote_server_did_start(127.0.0.1:50020)"}
>>> announcement([b"logging.debug", msgpack.packb(record)])
('started', 50020)
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

import msgpack
import zmq

from .doctor import DeploymentReport

log = logging.getLogger(__name__)

#: the logger of Capture's Pupil Remote controller (its module path in ``pupil_src/shared_modules``)
REMOTE_LOGGER = "network_api.controller.pupil_remote_controller"
_TOPICS = (b"logging.debug", b"logging.error")
_STARTED = "on_pupil_remote_server_did_start("
_LOGGER_BYTES = REMOTE_LOGGER.encode()

DeploymentCheck = Callable[[Mapping[str, int]], DeploymentReport]


def log_verdict(report: DeploymentReport) -> None:
    """The verdict in one log line: info when private, a warning otherwise."""
    log.log(logging.INFO if report.private else logging.WARNING, "deployment: %s", report.verdict)


def announcement(frames: list[bytes]) -> tuple[str, int | None] | None:
    """``("started", port)`` when ``frames`` are Capture's record of Pupil Remote bound anew,
    ``("fell back", None)`` for its failed bind (it then binds every interface, a random port),
    None for any other record or anything unreadable."""
    if len(frames) < 2 or frames[0] not in _TOPICS or _LOGGER_BYTES not in frames[1]:
        return None  # most of Capture's debug records: not decoded at all
    try:
        record = msgpack.unpackb(frames[1], raw=False, strict_map_key=False)
    except Exception:  # anyone may publish on the backbone: a bad record is not ours to fail on
        return None
    if not isinstance(record, dict) or record.get("name") != REMOTE_LOGGER:
        return None
    msg = str(record.get("msg", ""))
    if frames[0] == b"logging.error" and msg.startswith("Could not bind"):
        return "fell back", None
    if msg.startswith(_STARTED) and msg.endswith(")"):
        port = msg[len(_STARTED) : -1].rpartition(":")[2]
        return ("started", int(port)) if port.isdigit() else ("started", None)
    return None


class DeploymentWatch:
    """Runs ``check`` on Capture's ports when the relay connects and whenever Pupil Remote
    announces a restart; hands each report to ``on_report``.

    Parameters
    ----------
    check : callable
        Capture's ports by name (``"Pupil Remote"``, ``"SUB_PORT"``, ``"PUB_PORT"``) → a
        :class:`~streamdp.network.doctor.DeploymentReport` (e.g. a partial of
        :func:`~streamdp.network.doctor.check_ports` with streamdp's side filled in).
    on_report : callable, optional
        Called with each report (default: :func:`log_verdict`, one line).
    interval : float
        Seconds between two reads of the announcements.
    """

    def __init__(
        self,
        check: DeploymentCheck,
        *,
        on_report: Callable[[DeploymentReport], None] | None = None,
        interval: float = 0.5,
    ) -> None:
        if not callable(check) or not (on_report is None or callable(on_report)):
            raise TypeError(f"check and on_report must be callables, got {check!r} and {on_report!r}")
        self._check = check
        self.on_report = on_report or log_verdict
        self.interval = interval
        self.due = float("inf")
        self.report: DeploymentReport | None = None
        self.checks = 0
        self._ports: dict[str, int] = {}
        self._sub: zmq.Socket | None = None

    def start(self, context: zmq.Context, host: str, ports: Mapping[str, int]) -> DeploymentReport:
        """Subscribe to Capture's announcements on ``host``'s ``SUB_PORT`` and check ``ports``."""
        self.close()
        sub = context.socket(zmq.SUB)
        sub.linger = 0
        sub.rcvhwm = 1000  # a burst of Capture's debug records; older ones may go, the newest matter
        sub.connect(f"tcp://{host}:{ports['SUB_PORT']}")
        for topic in _TOPICS:
            sub.setsockopt(zmq.SUBSCRIBE, topic)
        self._sub = sub
        self._ports = dict(ports)
        return self._run()

    def poll(self) -> DeploymentReport | None:
        """Read the announcements queued since the last poll; check again after a restart."""
        self.due = time.monotonic() + self.interval
        if self._sub is None:
            return None
        restarted = False
        for _ in range(10_000):
            try:
                frames = self._sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            event = announcement(frames)
            if event is None:
                continue
            restarted = True
            kind, port = event
            if kind == "fell back":
                log.warning(
                    "Pupil Remote could not bind its address: Capture fell back to every interface, a random port"
                )
                self._ports.pop("Pupil Remote", None)
            elif port is not None:
                if port != self._ports.get("Pupil Remote", port):
                    log.warning(
                        "Pupil Remote restarted on port %d; the relay asks %d", port, self._ports["Pupil Remote"]
                    )
                self._ports["Pupil Remote"] = port
        return self._run() if restarted else None

    def _run(self) -> DeploymentReport:
        report = self._check(self._ports)
        self.report = report
        self.checks += 1
        self.due = time.monotonic() + self.interval
        self.on_report(report)
        return report

    def close(self) -> None:
        if self._sub is not None:
            self._sub.close(linger=0)
            self._sub = None
        self.due = float("inf")
