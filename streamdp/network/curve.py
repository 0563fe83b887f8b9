"""ZeroMQ CURVE: the server's certificates for a socket that listens beyond this machine, and
reading a certificate file (``zmq.auth`` format) with errors that name the file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import zmq
import zmq.auth

from ..errors import InputError


@dataclass(frozen=True)
class CurveServer:
    """CURVE for the relay's socket: its secret certificate, and the folder of allowed clients'
    public certificates (``zmq.auth.create_certificates`` makes both)."""

    secret_file: Path
    clients_dir: Path


def read_certificate(path: str | Path, *, secret: bool) -> tuple[bytes, bytes]:
    """The (public, secret) keys of a ZeroMQ certificate file (``zmq.auth`` format); the secret
    is ``b""`` when ``secret`` is false.

    Raises
    ------
    InputError
        The file is missing or unreadable, not a certificate, or holds no secret key where one
        is needed.

    Examples
    --------
    >>> read_certificate("/no/such.key", secret=True)
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: /no/such.key: no such certificate file (make one with zmq.auth.create_certificates)
    """
    p = Path(path)
    if not p.is_file():
        what = "is a folder, not a certificate file" if p.is_dir() else "no such certificate file"
        raise InputError(f"{p}: {what} (make one with zmq.auth.create_certificates)")
    try:
        public, secret_key = zmq.auth.load_certificate(str(p))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a ZeroMQ certificate ({exc})") from None
    if not public:
        raise InputError(f"{p}: not a ZeroMQ certificate (no public key)")
    if secret and not secret_key:
        raise InputError(f"{p}: holds no secret key (give the .key_secret file)")
    return public, secret_key or b""
