"""The operating system's table of listening TCP sockets: which address each port is bound to.

``streamdp doctor`` asks where Capture's raw-gaze ports listen. ZeroMQ does not say (a socket
bound to ``tcp://*:*`` reports ``0.0.0.0``, but only to its owner), so the answer comes from the
system's own table, read as it prints it:

- Linux: ``/proc/net/tcp`` and ``/proc/net/tcp6``; addresses in hex, each 32-bit word in the host's
  byte order, state ``0A`` = LISTEN;
- macOS: ``netstat -anv -p tcp`` (every user's sockets; ``*.50020`` is every interface, the port
  after the last dot), else ``lsof -nP -iTCP -sTCP:LISTEN`` (only the caller's processes);
- Windows: ``netstat -ano``; a TCP row whose foreign address is ``0.0.0.0:0`` or ``[::]:0`` listens
  (read from the addresses, not from the state column, which Windows translates).

Anything else raises :class:`ListeningTableUnavailable` with how to check by hand.

Examples
--------
>>> row = "   0: 0100007F:C396 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000  0 1 1"
>>> parse_proc_net_tcp("  sl  local_address ...\\n" + row, byteorder="little")
[ListeningSocket(address='127.0.0.1', port=50070)]
>>> parse_proc_net_tcp("  sl  local_address ...\\n" + row, byteorder="little")[0].scope
'loopback'
"""

from __future__ import annotations

import ipaddress
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ListeningSocket",
    "ListeningTableUnavailable",
    "listening_sockets",
    "parse_lsof",
    "parse_netstat_macos",
    "parse_netstat_windows",
    "parse_proc_net_tcp",
]

#: where a user checks by hand when streamdp cannot read the table
BY_HAND = (
    "check by hand with your system's list of listening TCP sockets (e.g. 'ss -ltn', 'netstat -an'): "
    "Capture's ports must show 127.0.0.1 or ::1, not 0.0.0.0, ::, * or another address"
)

_LISTEN = "0A"  # TCP_LISTEN in the kernel's tcp_states.h, as /proc prints it


class ListeningTableUnavailable(Exception):
    """The table of listening sockets cannot be read here; the message says why and what to do."""


@dataclass(frozen=True)
class ListeningSocket:
    """One listening TCP socket: the IP address it is bound to (``0.0.0.0`` or ``::`` for every
    interface) and its port."""

    address: str
    port: int

    @property
    def scope(self) -> str:
        """``"loopback"`` (reachable from this machine only), ``"every interface"`` or
        ``"one interface"`` (a specific, non-loopback address: reachable from its network)."""
        ip = ipaddress.ip_address(self.address.split("%", 1)[0])
        if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        if ip.is_loopback:
            return "loopback"
        if ip.is_unspecified:
            return "every interface"
        return "one interface"

    @property
    def loopback_only(self) -> bool:
        return self.scope == "loopback"


def _hex_address(text: str, byteorder: str) -> str:
    """An address of /proc/net/tcp{,6}: 8 or 32 hex digits, 32-bit words in host byte order."""
    raw = bytes.fromhex(text)
    if byteorder == "little":
        raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw))


def parse_proc_net_tcp(text: str, *, byteorder: str = sys.byteorder) -> list[ListeningSocket]:
    """The listening sockets of the text of Linux's ``/proc/net/tcp`` or ``/proc/net/tcp6``.

    Raises
    ------
    ValueError
        ``byteorder`` is not ``"little"`` or ``"big"``; the text is not such a table (no header,
        or a row whose local address is not ``HEX:PORT``).
    """
    if byteorder not in ("little", "big"):
        raise ValueError(f"byteorder must be 'little' or 'big', got {byteorder!r}")
    lines = text.splitlines()
    if not lines or "local_address" not in lines[0]:
        raise ValueError("not a /proc/net/tcp table (no 'local_address' header)")
    found = []
    for number, line in enumerate(lines[1:], start=2):
        fields = line.split()
        if not fields:
            continue
        try:
            host, port = fields[1].split(":")
            state = fields[3]
            if state.upper() != _LISTEN:
                continue
            found.append(ListeningSocket(_hex_address(host, byteorder), int(port, 16)))
        except (IndexError, ValueError):
            raise ValueError(f"line {number} is not a socket row: {line.strip()[:60]!r}") from None
    return found


def _split_host_port(text: str, separator: str) -> tuple[str, int]:
    host, _, port = text.rpartition(separator)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _unspecified(family: str) -> str:
    return "::" if "6" in family else "0.0.0.0"


def parse_netstat_macos(text: str) -> list[ListeningSocket]:
    """The listening sockets of macOS's ``netstat -anv -p tcp``: rows ``tcp4``/``tcp6``/``tcp46``
    whose state is LISTEN, local address ``host.port`` (``*.port``: every interface).

    Raises
    ------
    ValueError
        A LISTEN row whose local address cannot be read.
    """
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 6 or not fields[0].startswith("tcp") or fields[5] != "LISTEN":
            continue
        try:
            host, port = _split_host_port(fields[3], ".")
            address = _unspecified(fields[0]) if host == "*" else str(ipaddress.ip_address(host.split("%", 1)[0]))
        except ValueError:
            raise ValueError(f"cannot read the local address of {line.strip()[:70]!r}") from None
        found.append(ListeningSocket(address, port))
    return found


def parse_lsof(text: str) -> list[ListeningSocket]:
    """The listening sockets of ``lsof -nP -iTCP -sTCP:LISTEN``: the NAME column ``host:port
    (LISTEN)``, ``*:port`` meaning every interface of the row's TYPE (IPv4 or IPv6).

    Raises
    ------
    ValueError
        A LISTEN row whose address cannot be read.
    """
    found = []
    for line in text.splitlines():
        if not line.rstrip().endswith("(LISTEN)"):
            continue
        fields = line.split()
        family = next((f for f in fields if f in ("IPv4", "IPv6")), "IPv4")
        try:
            host, port = _split_host_port(fields[-2], ":")
            address = _unspecified(family) if host == "*" else str(ipaddress.ip_address(host.split("%", 1)[0]))
        except (IndexError, ValueError):
            raise ValueError(f"cannot read the address of {line.strip()[:70]!r}") from None
        found.append(ListeningSocket(address, port))
    return found


_WINDOWS_ANY_PEER = re.compile(r"^(0\.0\.0\.0|\[::\]):0$")


def parse_netstat_windows(text: str) -> list[ListeningSocket]:
    """The listening sockets of Windows's ``netstat -ano``: TCP rows whose foreign address is
    ``0.0.0.0:0`` or ``[::]:0`` (the state column is translated on non-English Windows).

    Raises
    ------
    ValueError
        A listening row whose local address cannot be read.
    """
    found = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0].upper() != "TCP" or not _WINDOWS_ANY_PEER.match(fields[2]):
            continue
        try:
            host, port = _split_host_port(fields[1], ":")
            address = str(ipaddress.ip_address(host.split("%", 1)[0]))
        except ValueError:
            raise ValueError(f"cannot read the local address of {line.strip()[:70]!r}") from None
        found.append(ListeningSocket(address, port))
    return found


def _run(command: list[str], timeout: float) -> str:
    tool = shutil.which(command[0])
    if tool is None:
        raise ListeningTableUnavailable(f"'{command[0]}' is not on this system's PATH; {BY_HAND}")
    try:
        done = subprocess.run([tool, *command[1:]], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ListeningTableUnavailable(f"'{' '.join(command)}' failed ({exc}); {BY_HAND}") from None
    if command[0] == "lsof" and done.returncode == 1 and not done.stderr.strip():
        return ""  # lsof's way of saying that nothing listens
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
        raise ListeningTableUnavailable(f"'{' '.join(command)}' failed: {reason}; {BY_HAND}")
    return done.stdout


def _read_proc(proc_net: Path) -> list[ListeningSocket]:
    found: list[ListeningSocket] = []
    for name in ("tcp", "tcp6"):
        path = proc_net / name
        try:
            text = path.read_text(encoding="ascii")
        except FileNotFoundError:
            if name == "tcp6":
                continue  # a kernel without IPv6
            raise ListeningTableUnavailable(f"{path}: missing; {BY_HAND}") from None
        except (OSError, UnicodeDecodeError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
            raise ListeningTableUnavailable(f"{path}: cannot be read ({reason}); {BY_HAND}") from None
        try:
            found.extend(parse_proc_net_tcp(text))
        except ValueError as exc:
            raise ListeningTableUnavailable(f"{path}: {exc}; {BY_HAND}") from None
    return found


def listening_sockets(
    *, platform: str | None = None, proc_net: Path = Path("/proc/net"), timeout: float = 5.0
) -> list[ListeningSocket]:
    """This machine's listening TCP sockets, from the system's own table.

    Parameters
    ----------
    platform : str, optional
        ``sys.platform`` by default: ``linux`` reads ``proc_net``, ``darwin`` runs netstat (or
        lsof), ``win32`` runs netstat.
    proc_net : Path
        Where Linux's tables are.
    timeout : float
        Seconds a system tool may take.

    Raises
    ------
    ListeningTableUnavailable
        The table cannot be read (missing, unreadable, not a table, the tool missing or failing,
        another platform): the message says why and how to check by hand.
    """
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux"):
        return _read_proc(proc_net)
    command: list[str]
    if platform == "darwin":
        if shutil.which("netstat") is None and shutil.which("lsof") is not None:
            command, parse = ["lsof", "-nP", "-iTCP", "-sTCP:LISTEN"], parse_lsof
        else:
            command, parse = ["netstat", "-anv", "-p", "tcp"], parse_netstat_macos
    elif platform in ("win32", "cygwin"):
        command, parse = ["netstat", "-ano"], parse_netstat_windows
    else:
        raise ListeningTableUnavailable(f"streamdp cannot read the listening sockets on {platform!r}; {BY_HAND}")
    try:
        return parse(_run(command, timeout))
    except ValueError as exc:
        raise ListeningTableUnavailable(f"'{' '.join(command)}': {exc}; {BY_HAND}") from None
