"""Firewall commands that close Pupil Capture's raw-gaze ports to every host but this one.

``streamdp doctor`` prints them; nothing here runs them (the firewall is the user's). Capture's
backbone binds random ports (``tcp://*:*``) that change at every start, so a rule for today's
ports is stale tomorrow: the Linux and macOS rules drop new connections from other hosts to
Pupil Remote's port and to the whole range the system draws such ports from (the ephemeral
range), while loopback and replies to this machine's own connections pass. Windows gets rules
for the ports found now and one for Capture's program, which covers any port.

Examples
--------
>>> print(firewall_commands("linux", [50020, 41234], ephemeral=(32768, 60999))[-1])
sudo ip6tables -I INPUT -p tcp --dport 32768:60999 ! -i lo -m conntrack --ctstate NEW -j DROP
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

#: the ephemeral ranges the systems ship with (Linux reads its own from /proc)
DEFAULT_EPHEMERAL = {"linux": (32768, 60999), "darwin": (49152, 65535), "win32": (49152, 65535)}


def ephemeral_range(platform: str, *, proc_sys: Path = Path("/proc/sys")) -> tuple[int, int]:
    """The ports ``platform`` binds ``tcp://*:*`` to: Linux's ``ip_local_port_range`` when it can
    be read, else the system's default."""
    key = "linux" if platform.startswith("linux") else ("win32" if platform in ("win32", "cygwin") else platform)
    if key == "linux":
        try:
            low, high = (int(v) for v in (proc_sys / "net/ipv4/ip_local_port_range").read_text().split())
            return low, high
        except (OSError, ValueError):
            pass
    return DEFAULT_EPHEMERAL.get(key, (49152, 65535))


def _intervals(ports: Iterable[int], ephemeral: tuple[int, int]) -> list[tuple[int, int]]:
    """The ports and the range as sorted, non-overlapping intervals (nft refuses overlaps)."""
    spans = sorted([ephemeral, *((p, p) for p in ports)])
    merged: list[tuple[int, int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged


def _span(low: int, high: int, dash: str) -> str:
    return str(low) if low == high else f"{low}{dash}{high}"


def firewall_commands(platform: str, ports: Iterable[int], *, ephemeral: tuple[int, int] | None = None) -> list[str]:
    """The commands (comments start with ``#``) that drop other hosts' connections to ``ports``
    and to the ephemeral range on ``platform``; empty for a platform streamdp has none for.

    Parameters
    ----------
    platform : str
        ``sys.platform``'s value: ``linux`` (nftables, or iptables), ``darwin`` (pf), ``win32``
        (``netsh advfirewall``).
    ports : iterable of int
        The raw-gaze ports found listening beyond loopback (Pupil Remote's, the backbone's).
    ephemeral : (int, int), optional
        The range random ports come from (default: :func:`ephemeral_range`).
    """
    ports = sorted(set(ports))
    if ephemeral is None:
        ephemeral = ephemeral_range(platform)
    spans = _intervals(ports, ephemeral)
    low, high = ephemeral
    if platform.startswith("linux"):
        nft_set = ", ".join(_span(a, b, "-") for a, b in spans)
        rules = [
            f"# Capture's backbone takes a new random port in {low}-{high} at every start: drop other hosts'",
            "# new connections to Pupil Remote and that range (loopback and replies pass). With nftables:",
            "sudo nft add table inet streamdp_capture",
            "sudo nft add chain inet streamdp_capture input "
            "'{ type filter hook input priority -10 ; policy accept ; }'",
            "sudo nft add rule inet streamdp_capture input iif lo accept",
            "sudo nft add rule inet streamdp_capture input ct state established,related accept",
            f"sudo nft add rule inet streamdp_capture input tcp dport '{{ {nft_set} }}' drop",
            "# (undo: sudo nft delete table inet streamdp_capture) -- or, with iptables:",
        ]
        for tool in ("iptables", "ip6tables"):
            rules += [
                f"sudo {tool} -I INPUT -p tcp --dport {_span(a, b, ':')} ! -i lo -m conntrack --ctstate NEW -j DROP"
                for a, b in spans
            ]
        return rules
    if platform == "darwin":
        pf_ports = " ".join(_span(a, b, ":") for a, b in spans)
        rules_text = (
            "pass in quick on lo0 all\\n"
            f"block drop in quick proto tcp from any to any port {{ {pf_ports} }} flags S/SA\\n"
        )
        return [
            f"# Capture's backbone takes a new random port in {low}-{high} at every start: block other hosts'",
            "# new connections to Pupil Remote and that range (an anchor the stock pf.conf already loads):",
            f"printf '{rules_text}' | sudo pfctl -a com.apple/streamdp -f -",
            "sudo pfctl -E",
            "# (undo: sudo pfctl -a com.apple/streamdp -F rules)",
        ]
    if platform in ("win32", "cygwin"):
        listed = ",".join(str(p) for p in ports)
        return [
            "# Windows Firewall never filters loopback: blocking inbound TCP leaves this machine's apps working.",
            f'netsh advfirewall firewall add rule name="streamdp: Pupil Capture ports" dir=in action=block '
            f"protocol=TCP localport={listed}",
            "# the backbone's ports change at every Capture start; a rule for Capture's program covers them all:",
            'netsh advfirewall firewall add rule name="streamdp: Pupil Capture" dir=in action=block '
            'protocol=TCP program="<path to pupil_capture.exe>"',
            '# (undo: netsh advfirewall firewall delete rule name="streamdp: Pupil Capture ports")',
        ]
    return []
