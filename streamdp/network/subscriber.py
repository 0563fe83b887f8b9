"""A small client for the sanitized topic: what an app needs to consume streamdp."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import zmq
import zmq.auth

from .sink import STATUS_TOPIC


def connect_subscriber(
    endpoint: str,
    topics: tuple[str, ...] = ("streamdp.features.", STATUS_TOPIC),
    *,
    server_public_key: Path | None = None,
    client_certificate: Path | None = None,
    context: zmq.Context | None = None,
) -> zmq.Socket:
    """A SUB socket on the relay, with CURVE when the relay requires it."""
    sock = (context or zmq.Context.instance()).socket(zmq.SUB)
    sock.linger = 0
    if server_public_key is not None:
        if client_certificate is None:
            raise ValueError("CURVE needs both the server's public key and a client certificate")
        server_public, _ = zmq.auth.load_certificate(str(server_public_key))
        public, secret = zmq.auth.load_certificate(str(client_certificate))
        if secret is None:
            raise ValueError(f"{client_certificate}: holds no secret key")
        sock.curve_serverkey = server_public
        sock.curve_publickey = public
        sock.curve_secretkey = secret
    sock.connect(endpoint)
    for topic in topics:
        sock.setsockopt_string(zmq.SUBSCRIBE, topic)
    return sock


def messages(sock: zmq.Socket, timeout: float = 5.0) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic, payload) as they arrive; ends after ``timeout`` seconds without a message."""
    while sock.poll(int(timeout * 1000)):
        topic, payload = sock.recv_multipart()[:2]
        yield topic.decode(), msgpack.unpackb(payload, raw=False, strict_map_key=False)
