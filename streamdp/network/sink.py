"""The relay's network sink: sanitized chunks only, by construction.

:class:`ReleasePublisher` is a :class:`~streamdp.sinks.ReleaseSink`: :meth:`~ReleasePublisher.publish`
takes only a sealed :class:`~streamdp.privacy.release.PrivateRelease`, and the only other frame it
sends is a typed :class:`~streamdp.status.SessionStatus`. Its socket is private: raw gaze, pupil
data or unsanitized features have no way onto it.

The socket binds to 127.0.0.1 by default. Binding any other interface requires ZeroMQ CURVE
(encryption and client authentication against a folder of allowed client public keys), unless
``insecure=True`` is asked for explicitly.
"""

from __future__ import annotations

import ipaddress
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import msgpack
import zmq
import zmq.auth
from zmq.auth.thread import ThreadAuthenticator

from ..errors import InputError
from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, check_status

log = logging.getLogger(__name__)

STATUS_TOPIC = "streamdp.status"


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
    """A PUB socket that publishes sanitized chunks on ``streamdp.features.<mechanism>`` and
    status on ``streamdp.status`` (a :class:`~streamdp.sinks.ReleaseSink`).

    Slow subscribers never cost unbounded memory: ZeroMQ drops messages for a subscriber whose
    queue holds ``sndhwm`` of them, and a vanished subscriber costs nothing.

    Raises
    ------
    InputError
        ``endpoint`` is not loopback and neither CURVE nor ``insecure`` was given.

    Examples
    --------
    >>> sink = ReleasePublisher("tcp://127.0.0.1:0")
    >>> sink.publish_status({"released": 1})
    Traceback (most recent call last):
    ...
    TypeError: status may hold only counters: give a SessionStatus, got dict
    >>> sink.wait_for_subscribers(1, timeout=0.01)
    False
    >>> sink.close()
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
        self._socket = ctx.socket(zmq.XPUB)
        self._socket.linger = 0
        self._socket.sndhwm = sndhwm
        if curve is not None:
            self._auth = ThreadAuthenticator(ctx)
            self._auth.start()
            self._auth.configure_curve(domain="*", location=str(curve.clients_dir))
            public, secret = zmq.auth.load_certificate(str(curve.secret_file))
            if secret is None:
                raise InputError(f"{curve.secret_file}: holds no secret key")
            self._socket.curve_secretkey = secret
            self._socket.curve_publickey = public
            self._socket.curve_server = True
        if endpoint.endswith(":0"):
            port = self._socket.bind_to_random_port(endpoint.rsplit(":", 1)[0])
            self.endpoint = f"{endpoint.rsplit(':', 1)[0]}:{port}"
        else:
            self._socket.bind(endpoint)
            self.endpoint = endpoint
        self.subscriptions = 0
        self._pack = msgpack.Packer(use_bin_type=True).pack

    def poll_subscriptions(self) -> int:
        """Read pending (un)subscription frames; returns the number of live subscriptions."""
        while True:
            try:
                frame = self._socket.recv(zmq.NOBLOCK)
            except zmq.Again:
                return self.subscriptions
            if frame[:1] == b"\x01":
                self.subscriptions += 1
            elif frame[:1] == b"\x00":
                self.subscriptions = max(0, self.subscriptions - 1)

    def wait_for_subscribers(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until ``count`` subscriptions are live or ``timeout`` seconds pass, reading
        subscription frames as they arrive; returns whether ``count`` was reached.

        Raises
        ------
        TypeError, ValueError
            ``count`` is not an int ≥ 1, or ``timeout`` is not a number ≥ 0.
        """
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, got {count!r}")
        if count < 1:
            raise ValueError(f"count must be ≥ 1, got {count!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
        if not timeout >= 0:
            raise ValueError(f"timeout must be ≥ 0 seconds, got {timeout!r}")
        deadline = time.monotonic() + timeout
        while self.poll_subscriptions() < count:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._socket.poll(max(1, int(left * 1000)), zmq.POLLIN)
        return True

    def publish(self, release: PrivateRelease) -> None:
        """Publish one sealed release on its topic.

        Raises
        ------
        TypeError
            ``release`` is not a genuine, unmodified :class:`~streamdp.privacy.release.PrivateRelease`.
        """
        check_sealed(release)
        self._socket.send_multipart([release.topic.encode(), self._pack(release.to_message())])

    def publish_status(self, status: SessionStatus) -> None:
        """Publish one status on ``streamdp.status``.

        Raises
        ------
        TypeError
            ``status`` is not a :class:`~streamdp.status.SessionStatus`.
        """
        check_status(status)
        self._socket.send_multipart([STATUS_TOPIC.encode(), self._pack(status.to_message())])

    def close(self) -> None:
        """Close the socket (dropping what is unsent) and stop CURVE's authenticator."""
        self._socket.close(linger=0)
        if self._auth is not None:
            self._auth.stop()
