"""Binding a ZeroMQ socket, with a sentence that says why a bind failed (the relay's sinks, the
simulator and its Pupil Remote bind through here)."""

from __future__ import annotations

import errno

import zmq

from ..errors import InputError


def bind_error(endpoint: str, exc: zmq.ZMQError) -> InputError:
    """The sentence for a failed bind, naming ``endpoint``.

    Examples
    --------
    >>> print(bind_error("tcp://127.0.0.1:5570", zmq.ZMQError(zmq.EADDRNOTAVAIL)))
    tcp://127.0.0.1:5570: cannot listen there: no interface of this machine has that address
    """
    reasons = {
        errno.EADDRINUSE: "the address is already in use (another program, or another relay, holds the port)",
        errno.EADDRNOTAVAIL: "no interface of this machine has that address",
        errno.EINVAL: "not a ZeroMQ address (e.g. tcp://127.0.0.1:5570)",
        errno.ENODEV: "no interface of this machine has that name",
        errno.EACCES: "permission denied (ports below 1024 need privileges)",
    }
    return InputError(f"{endpoint}: cannot listen there: {reasons.get(exc.errno or 0, exc.strerror)}")


def bind(sock: zmq.Socket, endpoint: str) -> str:
    """Bind ``sock`` to ``endpoint`` (port 0: a free port); returns the bound address.

    Raises
    ------
    InputError
        The bind failed (:func:`bind_error`).
    """
    try:
        if endpoint.endswith(":0"):
            host = endpoint.rsplit(":", 1)[0]
            return f"{host}:{sock.bind_to_random_port(host)}"
        sock.bind(endpoint)
    except zmq.ZMQError as exc:
        raise bind_error(endpoint, exc) from None
    return endpoint
