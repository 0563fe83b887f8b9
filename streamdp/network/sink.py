"""The relay's network sink: sanitized chunks only, by construction.

:meth:`ReleasePublisher.publish` takes a :class:`~streamdp.privacy.release.PrivateRelease` and
refuses anything else; the only other frame it sends is the relay's status, built here from
counters. Raw gaze, pupil data or unsanitized features have no way onto the socket.

The socket binds to 127.0.0.1 by default. Binding any other interface requires ZeroMQ CURVE
(encryption and client authentication against a folder of allowed client public keys), unless
``insecure=True`` is asked for explicitly.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgpack
import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from ..errors import InputError
from ..privacy.release import PrivateRelease

log = logging.getLogger(__name__)

STATUS_TOPIC = "streamdp.status"
_STATUS_KEYS = frozenset(
    {
        "received",
        "malformed",
        "invalid",
        "late",
        "released",
        "dropped_steps",
        "reconnects",
        "restarts",
        "epsilon_spent",
        "budget_exhausted",
        "message",
        "mechanism",
        "subscribers",
    }
)


@dataclass(frozen=True)
class CurveServer:
    """CURVE for the relay's socket: its secret certificate, and the folder of allowed clients'
    public certificates (``zmq.auth.create_certificates`` makes both)."""

    secret_file: Path
    clients_dir: Path


def _is_loopback(endpoint: str) -> bool:
    if endpoint.startswith(("inproc://", "ipc://")):
        return True
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # '*', an interface name or a host name: not provably loopback


class ReleasePublisher:
    """A PUB socket that publishes sanitized chunks on ``streamdp.features.<mechanism>``.

    Slow subscribers never cost unbounded memory: ZeroMQ drops messages for a subscriber whose
    queue holds ``sndhwm`` of them, and a vanished subscriber costs nothing.

    Raises
    ------
    InputError
        ``endpoint`` is not loopback and neither CURVE nor ``insecure`` was given.
    """

    def __init__(
        self,
        endpoint: str = "tcp://127.0.0.1:5570",
        *,
        curve: CurveServer | None = None,
        insecure: bool = False,
        sndhwm: int = 1000,
        context: zmq.Context | None = None,
    ) -> None:
        if not _is_loopback(endpoint) and curve is None and not insecure:
            raise InputError(
                f"{endpoint}: refusing to publish sanitized features beyond this machine without "
                "CURVE authentication (give a server certificate and a clients folder, or --insecure)"
            )
        ctx = context or zmq.Context.instance()
        self._auth: ThreadAuthenticator | None = None
        self.socket = ctx.socket(zmq.XPUB)
        self.socket.linger = 0
        self.socket.sndhwm = sndhwm
        if curve is not None:
            self._auth = ThreadAuthenticator(ctx)
            self._auth.start()
            self._auth.configure_curve(domain="*", location=str(curve.clients_dir))
            public, secret = zmq.auth.load_certificate(str(curve.secret_file))
            if secret is None:
                raise InputError(f"{curve.secret_file}: holds no secret key")
            self.socket.curve_secretkey = secret
            self.socket.curve_publickey = public
            self.socket.curve_server = True
        if endpoint.endswith(":0"):
            port = self.socket.bind_to_random_port(endpoint.rsplit(":", 1)[0])
            self.endpoint = f"{endpoint.rsplit(':', 1)[0]}:{port}"
        else:
            self.socket.bind(endpoint)
            self.endpoint = endpoint
        self.subscriptions = 0
        self._pack = msgpack.Packer(use_bin_type=True).pack

    def poll_subscriptions(self) -> int:
        """Read pending (un)subscription frames; returns the number of live subscriptions."""
        while True:
            try:
                frame = self.socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return self.subscriptions
            if frame[:1] == b"\x01":
                self.subscriptions += 1
            elif frame[:1] == b"\x00":
                self.subscriptions = max(0, self.subscriptions - 1)

    def publish(self, release: PrivateRelease) -> None:
        if not isinstance(release, PrivateRelease):
            raise TypeError(f"only a PrivateRelease can be published, got {type(release).__name__}")
        self.socket.send_multipart([release.topic.encode(), self._pack(release.to_message())])

    def publish_status(self, status: dict[str, Any]) -> None:
        unknown = set(status) - _STATUS_KEYS
        if unknown:
            raise TypeError(f"status may hold only counters, got {sorted(unknown)}")
        self.socket.send_multipart([STATUS_TOPIC.encode(), self._pack(status)])

    def close(self) -> None:
        self.socket.close(linger=0)
        if self._auth is not None:
            self._auth.stop()


def backbone_publisher(context: zmq.Context, host: str, pub_port: int) -> zmq.Socket:
    """A PUB socket into Capture's backbone (``PUB_PORT``), so that Capture records releases."""
    sock = context.socket(zmq.PUB)
    sock.linger = 0
    sock.sndhwm = 1000
    sock.connect(f"tcp://{host}:{pub_port}")
    return sock
