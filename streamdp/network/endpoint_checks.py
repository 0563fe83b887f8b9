"""Where the relay's sinks may listen: the sanitized socket on loopback unless CURVE (or an explicit
``insecure``) is given, the owner's status socket on a loopback address or IPC only. Checked
before anything binds, so that a refused endpoint leaves nothing running."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import InputError
from .curve import CurveServer, read_certificate


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


def _is_loopback_address(endpoint: str) -> bool:
    """Whether ``endpoint`` can only be reached from this machine: TCP on a loopback IP address
    (a name such as ``localhost`` or ``*`` is not trusted to resolve to one), or IPC."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return True
    parts = urlsplit(endpoint)
    if parts.scheme != "tcp":
        return False
    try:
        return ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        return False


def check_status_endpoint(endpoint: object) -> None:
    """Refuse a status endpoint that is not on a loopback address or IPC (what
    :class:`StatusPublisher` checks before it binds).

    Raises
    ------
    TypeError
        ``endpoint`` is not a str.
    ValueError
        It is not on a loopback address (127.0.0.1, ::1) or IPC.
    """
    if not isinstance(endpoint, str):
        raise TypeError(f"status endpoint must be a str, got {endpoint!r}")
    if not _is_loopback_address(endpoint):
        raise ValueError(
            "status endpoint must be on a loopback address (tcp://127.0.0.1:…) or ipc://, got "
            f"{endpoint!r}: the counters are raw functions of the gaze and stay on this device"
        )


def check_release_endpoint(
    endpoint: str, *, curve: CurveServer | None = None, insecure: bool = False
) -> tuple[bytes, bytes] | None:
    """What :class:`ReleasePublisher` checks before it binds; returns the server's CURVE keys
    (None without CURVE).

    Raises
    ------
    InputError
        ``endpoint`` is not loopback and neither CURVE nor ``insecure`` was given; the clients
        folder is missing; the secret certificate cannot be read.
    """
    if not _is_loopback(endpoint) and curve is None and not insecure:
        raise InputError(
            f"{endpoint}: refusing to publish sanitized features beyond this machine without "
            "CURVE authentication (give a server certificate and a clients folder, or --insecure)"
        )
    if curve is None:
        return None
    if not Path(curve.clients_dir).is_dir():
        raise InputError(f"{curve.clients_dir}: no such folder of allowed clients' public certificates")
    return read_certificate(curve.secret_file, secret=True)
