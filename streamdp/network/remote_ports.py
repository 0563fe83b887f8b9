"""Asking a Pupil Remote for its ports, and what streamdp's own Pupil Remote serves (the doctor's check).

:func:`ask_ports` asks ``SUB_PORT`` and ``PUB_PORT`` of any Pupil Remote (Capture's, or streamdp's
own, :mod:`streamdp.network.pupil_remote`). :func:`facade_finding` is the doctor's line for
streamdp's Pupil Remote: it serves only sanitized data wherever it listens, provided it is
streamdp's and not Capture's own (the same ports would be Capture's raw backbone).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

import zmq

from .deployment import Finding

__all__ = ["RemoteUnanswered", "ask_ports", "facade_finding", "port_of"]


def port_of(endpoint: str) -> int | None:
    """The port of a ``tcp://`` endpoint (None for another scheme or a malformed one)."""
    try:
        return urlsplit(endpoint).port if endpoint.startswith("tcp://") else None
    except ValueError:
        return None


class RemoteUnanswered(Exception):
    """Pupil Remote did not answer, or not with a port."""


def ask_ports(remote: str, *, timeout: float = 1.0, context: zmq.Context | None = None) -> dict[str, int]:
    """Pupil Remote's port and the backbone's ``SUB_PORT`` and ``PUB_PORT``, asked of ``remote``.

    Raises
    ------
    RemoteUnanswered
        No answer within ``timeout`` seconds, or an answer that is not a port.
    """
    ctx = context or zmq.Context.instance()
    req = ctx.socket(zmq.REQ)
    req.linger = 0
    ports = {"Pupil Remote": port_of(remote) or 0}
    try:
        req.connect(remote)
        for command in ("SUB_PORT", "PUB_PORT"):
            req.send_string(command)
            if not req.poll(int(timeout * 1000)):
                raise RemoteUnanswered(f"Pupil Remote at {remote} did not answer {command} within {timeout:g} s")
            answer = req.recv().decode("utf-8", "replace")
            if not answer.isdigit() or not 1 <= int(answer) <= 65535:
                raise RemoteUnanswered(f"Pupil Remote at {remote} answered {answer[:40]!r} to {command}, not a port")
            ports[command] = int(answer)
    finally:
        req.close(linger=0)
    return ports


def facade_finding(address: str, capture_ports: Mapping[str, int], *, curve: bool, timeout: float = 1.0) -> Finding:
    """The doctor's finding for streamdp's Pupil Remote at ``address`` (``relay --pupil-remote``).

    "ok" when it answers with ports of its own (sanitized data only: the gaze channel as Capture's
    datums, ``streamdp.*``, notifications the policy passes); "exposed" when its ``SUB_PORT`` is
    Capture's (then it is Capture's own Pupil Remote, serving raw gaze) and it listens beyond
    loopback; "unknown" when it does not answer.

    Examples
    --------
    >>> facade_finding("tcp://127.0.0.1:9", {}, curve=False, timeout=0.05).status
    'unknown'
    """
    subject = f"streamdp's Pupil Remote {address}"
    host = urlsplit(address).hostname or ""
    # bound on every interface: it answers on loopback too
    reach = address.replace(f"//{host}:", "//127.0.0.1:", 1) if host in ("*", "0.0.0.0") else address
    try:
        ports = ask_ports(reach, timeout=timeout)
    except RemoteUnanswered as exc:
        return Finding(subject, "unknown", f"{exc} (is the relay running with --pupil-remote?)")
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False  # '*', a name or an interface: not provably loopback
    if capture_ports and ports.get("SUB_PORT") == capture_ports.get("SUB_PORT"):
        status = "ok" if loopback else "exposed"
        return Finding(subject, status, f"answers Capture's own SUB_PORT {ports['SUB_PORT']}: this is Capture's "
                       "Pupil Remote, serving raw gaze, not streamdp's")  # fmt: skip
    where = "this machine only" if loopback else "beyond loopback, CURVE on" if curve else "beyond loopback"
    return Finding(
        subject,
        "ok",
        f"{where}: SUB_PORT {ports['SUB_PORT']} carries only sanitized gaze (gaze.3d.01.), streamdp.* and the "
        f"notifications its policy passes; PUB_PORT {ports['PUB_PORT']} forwards what the policy allows",
    )
