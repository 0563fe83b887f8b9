"""The deployment check (:func:`streamdp.network.doctor.check_ports`) as the Capture plugin runs it
from inside Capture's world process, where Capture's ports are known without asking Pupil Remote:
the backbone's from ``g_pool.ipc_sub_url`` and ``g_pool.ipc_pub_url`` (``launchables/world.py``
receives them from ``main.py``, which binds both to ``tcp://*:*``), Pupil Remote's from the
Network API plugin (:func:`~streamdp.capture.watch.pupil_remote_port`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..config import SessionConfig
from ..network.doctor import DeploymentReport, check_ports
from .endpoint import PluginEndpoint
from .watch import pupil_remote_port

__all__ = ["capture_ports", "check_capture"]


def _url_port(url: object) -> int | None:
    tail = str(url).rpartition(":")[2] if isinstance(url, str) else ""
    return int(tail) if tail.isdigit() and 1 <= int(tail) <= 65535 else None


def capture_ports(g_pool: Any) -> dict[str, int]:
    """Capture's ports that carry raw gaze or command Capture, by the doctor's names
    (``Pupil Remote``, ``SUB_PORT``, ``PUB_PORT``, ``PUSH_PORT``); a port Capture does not have is
    left out."""
    ports: dict[str, int] = {}
    remote = pupil_remote_port(getattr(g_pool, "plugins", None) or (), getattr(g_pool, "preferred_remote_port", None))
    if remote is not None:
        ports["Pupil Remote"] = int(remote)
    # main.py binds all three on tcp://*:*; Pupil Remote reports only SUB and PUB
    for name, attribute in (("SUB_PORT", "ipc_sub_url"), ("PUB_PORT", "ipc_pub_url"), ("PUSH_PORT", "ipc_push_url")):
        port = _url_port(getattr(g_pool, attribute, None))
        if port is not None:
            ports[name] = port
    return ports


def check_capture(
    g_pool: Any, endpoint: PluginEndpoint | None, config: SessionConfig, *, proc_net: Path = Path("/proc/net")
) -> DeploymentReport:
    """Is this Capture with this plugin private? Capture's ports, the plugin's endpoint (if
    open) and its LSL streams, its durable ledger and whether its noise is seeded (it then goes
    onto Capture's backbone too), through the doctor's one check (LSL streams are not resolved
    here: that would hold up Capture's world loop)."""
    return check_ports(
        capture_ports(g_pool),
        sanitized=endpoint.endpoint if endpoint is not None else None,
        curve=endpoint.curve if endpoint is not None else False,
        status=endpoint.status.endpoint if endpoint is not None else None,
        identity=config.identity,
        ledger_dir=Path(config.ledger_dir).expanduser() if config.ledger_dir else None,
        budget=config.budget,
        seeded=config.seed is not None,
        proc_net=proc_net,
        pupil_remote=endpoint.facade.address if endpoint is not None and endpoint.facade is not None else None,
        lsl=endpoint.lsl.name if endpoint is not None and endpoint.lsl is not None else None,
    )
