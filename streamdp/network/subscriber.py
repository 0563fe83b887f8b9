"""A small client for the sanitized topic: what an app needs to consume streamdp."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgpack
import zmq

from ..errors import InputError
from .curve import read_certificate
from .sink import STATUS_TOPIC


def check_address(endpoint: str, *, example: str = "tcp://127.0.0.1:5570") -> str:
    """``endpoint`` if ZeroMQ can connect to it (a ``tcp://host:port`` port in 1–65535).

    Nothing is contacted: an address that nobody serves yet is accepted (ZeroMQ connects when
    it appears).

    Raises
    ------
    InputError
        ``endpoint`` is not an address ZeroMQ connects to, named with an ``example``.

    Examples
    --------
    >>> check_address("tcp://127.0.0.1:50020")
    'tcp://127.0.0.1:50020'
    >>> check_address("foo")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: foo: not an address to connect to (give e.g. tcp://127.0.0.1:5570)
    """
    problem = f"{endpoint}: not an address to connect to (give e.g. {example})"
    if not isinstance(endpoint, str):
        raise InputError(problem)
    if endpoint.startswith("tcp://"):
        try:
            parts = urlsplit(endpoint)
            port = parts.port
        except ValueError:
            raise InputError(f"{endpoint}: the port must be a number 1–65535 (give e.g. {example})") from None
        if not parts.hostname or port is None or port == 0:
            raise InputError(problem)
    sock: zmq.Socket = zmq.Context.instance().socket(zmq.SUB)
    try:
        sock.connect(endpoint)
    except zmq.ZMQError:
        raise InputError(problem) from None
    finally:
        sock.close(linger=0)
    return endpoint


def connect_subscriber(
    endpoint: str,
    topics: tuple[str, ...] = ("streamdp.features.", STATUS_TOPIC),
    *,
    server_public_key: Path | None = None,
    client_certificate: Path | None = None,
    context: zmq.Context | None = None,
    rcvhwm: int | None = None,
) -> zmq.Socket:
    """A SUB socket on the relay, with CURVE when the relay requires it; ``rcvhwm`` sets its
    receive high-water mark (messages queued before ZeroMQ drops; 0: no limit; default ZeroMQ's,
    1000).

    Raises
    ------
    InputError
        ``endpoint`` is not an address to connect to; a certificate cannot be read, or the
        client certificate holds no secret key.
    ValueError
        Only one of ``server_public_key`` and ``client_certificate`` was given.
    """
    check_address(endpoint)
    if (server_public_key is None) != (client_certificate is None):
        raise ValueError("CURVE needs both the server's public key and a client certificate")
    keys = None
    if server_public_key is not None and client_certificate is not None:
        server_public, _ = read_certificate(server_public_key, secret=False)
        keys = (server_public, *read_certificate(client_certificate, secret=True))
    sock = (context or zmq.Context.instance()).socket(zmq.SUB)
    sock.linger = 0
    if rcvhwm is not None:
        sock.rcvhwm = rcvhwm  # before connecting, or it does not apply
    if keys is not None:
        sock.curve_serverkey, sock.curve_publickey, sock.curve_secretkey = keys
    sock.connect(endpoint)
    for topic in topics:
        sock.setsockopt_string(zmq.SUBSCRIBE, topic)
    return sock


def messages(sock: zmq.Socket, timeout: float = 5.0) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic, payload) as they arrive; ends after ``timeout`` seconds without a message."""
    while sock.poll(int(timeout * 1000)):
        topic, payload = sock.recv_multipart()[:2]
        yield topic.decode(), msgpack.unpackb(payload, raw=False, strict_map_key=False)
