"""Is this deployment private? Where raw gaze is reachable, and what streamdp itself serves.

streamdp's published bytes are private; Pupil Capture beside it is not, unless the deployment
closes it: Capture binds Pupil Remote (``tcp://*:50020``) and its IPC backbone (``tcp://*:*``) on
every interface, and the backbone carries raw gaze. :func:`check_deployment` asks Pupil Remote for
the backbone's ports, finds where each port is bound in the system's table of listening sockets
(:mod:`streamdp.network.listening`), and looks at streamdp's own side: the sanitized endpoint
(CURVE on or off), the owner's status endpoint (loopback or ipc only), the durable ledger (ε
spent and left) and whether the noise is seeded. :func:`check_ports` is the same check for a
caller that already knows Capture's ports (the Capture plugin). Lab Streaming Layer streams have no
authentication: :func:`check_deployment` also lists the LSL streams that answer within half a
second (:mod:`streamdp.network.lsl_streams`: streamdp's carry sanitized releases only, another gaze
stream on this machine, such as Pupil's LSL relay, is raw gaze exposed), and a caller with its own
outlet names it (``lsl``).

The verdict's exit code: 0 private, 1 raw gaze (or what stands for it) reachable beyond
loopback, 2 could not check. A port bound to every interface counts as reachable unless the
firewall rules the doctor prints (:mod:`streamdp.network.firewall`, never run by it) are read back
and close it (:mod:`streamdp.network.firewall_rules`; reading them needs administrator rights).

Examples
--------
>>> report = check_ports({}, sanitized="tcp://127.0.0.1:5570", status="tcp://127.0.0.1:5571")
>>> report.exit_code, report.verdict.split(":")[0]
(0, 'private')
"""

from __future__ import annotations

import functools
import ipaddress
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urlsplit

import zmq

from .deployment import EXIT_PRIVATE, EXIT_RAW_REACHABLE, EXIT_UNCHECKED, DeploymentReport, Finding
from .firewall import firewall_commands
from .firewall_rules import FirewallReading, read_firewall
from .listening import ListeningSocket, ListeningTableUnavailable, listening_sockets
from .lsl_streams import LSL_LOOK_S, LslSurvey, check_look, lsl_findings, outlet_finding, survey_lsl
from .remote_ports import RemoteUnanswered, ask_ports, facade_finding

__all__ = [
    "EXIT_PRIVATE",
    "EXIT_RAW_REACHABLE",
    "EXIT_UNCHECKED",
    "DeploymentReport",
    "Finding",
    "RemoteUnanswered",
    "ask_ports",
    "check_deployment",
    "check_ports",
]

#: what reaching each of Capture's ports gives another host
ROLES = {
    "Pupil Remote": "answers SUB_PORT to anyone and commands Capture (recording, plugins, its own address)",
    "SUB_PORT": "Capture's backbone (XPUB): raw gaze to any subscriber",
    "PUB_PORT": "Capture's backbone (XSUB): anyone may publish into Capture (start_plugin, recording)",
    "PUSH_PORT": "Capture's backbone (PULL): anyone may push notifications into Capture (start_plugin, recording)",
}


def _closed(reading: FirewallReading, port: int, address: str) -> bool:
    """Whether the rules read back drop other hosts on ``port`` at ``address``: an IPv6 wildcard
    also takes IPv4 (Linux's default bindv6only=0, macOS tcp46), so both families must be closed;
    an IPv4-mapped address is IPv4."""
    bare = address.strip("[]").lower()
    if bare == "::":
        return reading.closes(port, ipv6=True) and reading.closes(port, ipv6=False)
    if bare.startswith("::ffff:"):
        return reading.closes(port, ipv6=False)
    return reading.closes(port, ipv6=":" in bare)


def _where(sockets: list[ListeningSocket]) -> str:
    return ", ".join(f"{s.address} ({s.scope})" for s in sockets)


def _raw_port_finding(
    name: str, port: int, table: list[ListeningSocket], firewall: Callable[[], FirewallReading]
) -> Finding:
    subject = f"{name} port {port}"
    bound = [s for s in table if s.port == port]
    if not bound:
        return Finding(
            subject,
            "unknown",
            "not in this machine's table of listening sockets (Capture on another host or network namespace?)",
        )
    beyond = [s for s in bound if not s.loopback_only]
    if not beyond:
        return Finding(subject, "ok", f"listens on loopback only ({', '.join(s.address for s in bound)})")
    reading = firewall()
    if all(_closed(reading, port, s.address) for s in beyond):
        return Finding(subject, "ok", f"listens on {_where(beyond)}; other hosts dropped by {reading.source}")
    why = reading.problem or f"no rule of {reading.source or 'the firewall'} drops it"
    role = ROLES.get(name, "carries raw gaze")
    return Finding(subject, "exposed", f"listens on {_where(beyond)}: {role}; firewall: {why}")


def _host(endpoint: str) -> str | None:
    """The IP literal or name of a ``tcp://`` endpoint; None for ipc/inproc (this machine only)."""
    if endpoint.startswith(("ipc://", "inproc://")):
        return None
    host = urlsplit(endpoint).hostname or endpoint.partition("://")[2].rpartition(":")[0]
    return host.strip("[]")


def _is_loopback_host(host: str | None) -> bool:
    if host is None:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # '*', a name or an interface: not provably loopback


def _port(endpoint: str) -> int | None:
    try:
        return urlsplit(endpoint).port if endpoint.startswith("tcp://") else None
    except ValueError:
        return None


def _also_listening(endpoint: str, table: list[ListeningSocket] | None) -> str:
    """A note when the table shows the endpoint's port beyond loopback though it was given as loopback."""
    port = _port(endpoint)
    if table is None or port is None:
        return ""
    beyond = [s for s in table if s.port == port and not s.loopback_only]
    return f"; but port {port} also listens on {_where(beyond)} (a relay started with other options?)" if beyond else ""


def _endpoint_findings(
    sanitized: str | None, curve: bool, status: str | None, table: list[ListeningSocket] | None
) -> list[Finding]:
    found = []
    if sanitized is not None:
        subject = f"sanitized endpoint {sanitized}"
        if _is_loopback_host(_host(sanitized)):
            extra = _also_listening(sanitized, table)
            found.append(Finding(subject, "unknown" if extra else "ok", "this machine only" + extra))
        elif curve:
            found.append(Finding(subject, "ok", "beyond loopback, CURVE on: allowed clients only"))
        else:
            found.append(
                Finding(
                    subject, "warning", "beyond loopback with CURVE off: chunks are private, but any host may subscribe"
                )
            )
    if status is not None:
        subject = f"status endpoint {status}"
        if _is_loopback_host(_host(status)):
            extra = _also_listening(status, table)
            found.append(Finding(subject, "unknown" if extra else "ok", "this machine only" + extra))
        else:
            found.append(
                Finding(
                    subject,
                    "exposed",
                    "beyond loopback: its counters and clip rate are raw functions of the gaze (loopback/ipc only)",
                )
            )
    return found


def _ledger_finding(identity: str | None, ledger_dir: Path | None, budget: float | None) -> Finding:
    """The durable ledger's total (the one place that reads it: its format is the ledger's own)."""
    from ..errors import InputError
    from ..privacy.ledger_store import LedgerStore

    if identity is None:
        return Finding("ledger", "note", "no identity: ε spent is not kept across restarts (the chunk unit needs none)")
    try:
        store = LedgerStore(identity, folder=ledger_dir)
        spent = store.read().epsilon_spent
    except (InputError, OSError, TypeError, ValueError) as exc:
        return Finding("ledger", "unknown", str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    text = f"{store.path}: ε {spent:g} spent"
    if budget is not None:
        left = max(0.0, budget - spent)
        text += f" of {budget:g}, {left:g} left" + (" (exhausted: nothing more is released)" if left <= 0 else "")
    return Finding("ledger", "ok", text)


def _verdict(findings: list[Finding], exposed_ports: list[int]) -> tuple[str, int]:
    exposed = [f.subject for f in findings if f.status == "exposed" and f.subject != "noise"]
    seeded = any(f.subject == "noise" and f.status == "exposed" for f in findings)
    unknown = [f for f in findings if f.status == "unknown"]
    if exposed or seeded:
        reasons = [f"reachable beyond loopback: {', '.join(exposed)}"] if exposed else []
        reasons += ["noise is seeded: reproducible, not private"] if seeded else []
        close = "; the firewall commands streamdp doctor prints close Capture's ports" if exposed_ports else ""
        return f"NOT private: {'; '.join(reasons)}{close}", EXIT_RAW_REACHABLE
    if unknown:
        return f"could not check: {unknown[0].subject}: {unknown[0].text}", EXIT_UNCHECKED
    return "private: raw gaze is reachable from this machine only; apps see only sanitized data", EXIT_PRIVATE


def check_ports(
    raw_ports: Mapping[str, int],
    *,
    sanitized: str | None = None,
    curve: bool = False,
    status: str | None = None,
    identity: str | None = None,
    ledger_dir: Path | None = None,
    budget: float | None = None,
    seeded: bool = False,
    platform: str | None = None,
    proc_net: Path = Path("/proc/net"),
    firewall: FirewallReading | None = None,
    pupil_remote: str | None = None,
    lsl: str | None = None,
    lsl_survey: LslSurvey | None = None,
) -> DeploymentReport:
    """The deployment check for a caller that knows Capture's raw-gaze ports.

    Parameters
    ----------
    raw_ports : mapping of str to int
        Each port that carries raw gaze or commands Capture, by name: ``"Pupil Remote"``,
        ``"SUB_PORT"``, ``"PUB_PORT"`` (other names are checked the same way).
    sanitized, status : str, optional
        streamdp's sanitized and status endpoints as bound (``tcp://…`` or ``ipc://…``).
    curve : bool
        Whether the sanitized endpoint requires CURVE.
    identity, ledger_dir, budget : optional
        The durable ledger to read (ε spent and, with ``budget``, left).
    seeded : bool
        Whether the noise is seeded (reproducible: not private).
    platform : str, optional
        ``sys.platform`` by default: which table of listening sockets and which firewall commands.
    proc_net : Path
        Where Linux's ``tcp``/``tcp6`` tables are.
    firewall : FirewallReading, optional
        The firewall rules closing ports to other hosts (default: read when a raw port listens
        beyond loopback, :func:`~streamdp.network.firewall_rules.read_firewall`).
    pupil_remote : str, optional
        streamdp's own Pupil Remote (``relay --pupil-remote``): asked for its ports, which must
        not be Capture's (:func:`~streamdp.network.remote_ports.facade_finding`).
    lsl : str, optional
        The name of streamdp's own LSL outlet (``relay --lsl``, the plugin's ``lsl``): its streams.
    lsl_survey : LslSurvey, optional
        The LSL streams resolved on the network (:func:`~streamdp.network.lsl_streams.survey_lsl`).

    Raises
    ------
    TypeError
        A port is not an int, ``curve`` or ``seeded`` not a bool.
    ValueError
        A port is outside 1–65535.
    """
    for name, port in raw_ports.items():
        if isinstance(port, bool) or not isinstance(port, int):
            raise TypeError(f"raw_ports[{name!r}] must be an int port, got {port!r}")
        if not 1 <= port <= 65535:
            raise ValueError(f"raw_ports[{name!r}] must be a port 1–65535, got {port!r}")
    for flag, value in (("curve", curve), ("seeded", seeded)):
        if not isinstance(value, bool):
            raise TypeError(f"{flag} must be a bool, got {value!r}")
    platform = sys.platform if platform is None else platform
    findings: list[Finding] = []
    table: list[ListeningSocket] | None = None
    needs_table = bool(raw_ports) or any(_port(e or "") for e in (sanitized, status))
    if needs_table:
        try:
            table = listening_sockets(platform=platform, proc_net=proc_net)
        except ListeningTableUnavailable as exc:
            findings.append(Finding("listening sockets", "unknown", str(exc)))
    if table is not None:
        read = functools.cache(lambda: read_firewall(platform) if firewall is None else firewall)
        findings += [_raw_port_finding(name, port, table, read) for name, port in raw_ports.items()]
    findings += _endpoint_findings(sanitized, curve, status, table)
    if pupil_remote is not None:
        findings.append(facade_finding(pupil_remote, raw_ports, curve=curve))
    if lsl is not None:
        findings.append(outlet_finding(lsl))
    if lsl_survey is not None:
        findings += lsl_findings(lsl_survey, known=(lsl,) if lsl is not None else ())
    if seeded:
        findings.append(
            Finding("noise", "exposed", "seeded: reproducible, not private (whoever knows the seed removes it)")
        )
    else:
        findings.append(Finding("noise", "ok", "from the system's entropy (not seeded)"))
    findings.append(_ledger_finding(identity, ledger_dir, budget))
    exposed_subjects = {f.subject for f in findings if f.status == "exposed"}
    exposed_ports = sorted({port for name, port in raw_ports.items() if f"{name} port {port}" in exposed_subjects})
    verdict, code = _verdict(findings, exposed_ports)
    commands = tuple(firewall_commands(platform, exposed_ports)) if exposed_ports else ()
    return DeploymentReport(tuple(findings), verdict, code, commands, platform)


def _absent_or_silent(remote: str, problem: str, platform: str, proc_net: Path) -> str:
    """Why Pupil Remote did not answer: nothing listens on its port (Capture absent), or something does."""
    port = _port(remote)
    if port is None or not _is_loopback_host(_host(remote)):
        return problem
    try:
        table = listening_sockets(platform=platform, proc_net=proc_net)
    except ListeningTableUnavailable:
        return problem
    if not any(s.port == port for s in table):
        return f"nothing listens on port {port}: is Pupil Capture running, with its Network API plugin?"
    return f"{problem} (port {port} is open: another program, or Capture busy?)"


def check_deployment(
    *,
    remote: str,
    sanitized: str | None = None,
    curve: bool = False,
    status: str | None = None,
    identity: str | None = None,
    ledger_dir: Path | None = None,
    budget: float | None = None,
    seeded: bool = False,
    timeout: float = 1.0,
    platform: str | None = None,
    proc_net: Path = Path("/proc/net"),
    firewall: FirewallReading | None = None,
    context: zmq.Context | None = None,
    pupil_remote: str | None = None,
    lsl: str | None = None,
    lsl_timeout: float | None = LSL_LOOK_S,
) -> DeploymentReport:
    """The whole check: Capture's ports asked of Pupil Remote at ``remote``, then :func:`check_ports`
    with the LSL streams that answer within ``lsl_timeout`` seconds (None: not looked for).

    Parameters
    ----------
    remote : str
        Pupil Remote's address, e.g. ``tcp://127.0.0.1:50020``.
    timeout : float
        Seconds Pupil Remote has to answer each question.
    sanitized, curve, status, identity, ledger_dir, budget, seeded, platform, proc_net, firewall, pupil_remote, lsl
        As for :func:`check_ports`.

    Returns
    -------
    DeploymentReport
        Exit code 2 with one finding when Pupil Remote is absent or does not answer.

    Raises
    ------
    TypeError
        ``remote`` is not a str, ``timeout`` or ``lsl_timeout`` not a number.
    ValueError
        ``remote`` is not a ``tcp://host:port`` address, ``timeout`` or ``lsl_timeout`` is not positive.
    """
    if not isinstance(remote, str):
        raise TypeError(f"remote must be a str such as 'tcp://127.0.0.1:50020', got {remote!r}")
    if not remote.startswith("tcp://") or not _port(remote):
        raise ValueError(f"remote must be a tcp://host:port address such as 'tcp://127.0.0.1:50020', got {remote!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
    if not 0 < timeout < float("inf"):
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if lsl_timeout is not None:
        check_look(lsl_timeout)
    platform = sys.platform if platform is None else platform
    try:
        ports = ask_ports(remote, timeout=timeout, context=context)
    except RemoteUnanswered as exc:
        text = _absent_or_silent(remote, str(exc), platform, proc_net)
        finding = Finding(f"Pupil Remote {remote}", "unknown", text)
        return DeploymentReport((finding,), f"could not check: {finding.subject}: {text}", EXIT_UNCHECKED, (), platform)
    return check_ports(
        ports,
        sanitized=sanitized,
        curve=curve,
        status=status,
        identity=identity,
        ledger_dir=ledger_dir,
        budget=budget,
        seeded=seeded,
        platform=platform,
        proc_net=proc_net,
        firewall=firewall,
        pupil_remote=pupil_remote,
        lsl=lsl,
        lsl_survey=survey_lsl(lsl_timeout) if lsl_timeout is not None else None,
    )
