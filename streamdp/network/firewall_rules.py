"""Reading back the firewall rules ``streamdp doctor`` prints: which ports they close to other hosts.

Capture's backbone listens on every interface; only a host firewall keeps other hosts from it. The
doctor calls such a port closed only when it can read a rule that drops other hosts' new
connections to it, and it reads exactly the rules it prints (:mod:`streamdp.network.firewall`):

- Linux: the nftables table ``inet streamdp_capture`` (``nft list table inet streamdp_capture``:
  a drop on ``tcp dport`` with no other accept before it than loopback's and established
  connections'), else iptables/ip6tables ``INPUT`` rules (``-S INPUT``) dropping ``! -i lo`` tcp
  ports, with no broader ACCEPT before them;
- macOS: the pf anchor ``com.apple/streamdp`` (``pfctl -a com.apple/streamdp -sr``), pf enabled;
- Windows: the rules named ``streamdp: Pupil Capture ports`` (``netsh advfirewall firewall show
  rule``), enabled, inbound, blocking.

Reading rules needs administrator rights on Linux and macOS (``sudo streamdp doctor``); when they
cannot be read, the reading says why and closes nothing.

Examples
--------
>>> nft = '''table inet streamdp_capture {
...     chain input {
...         type filter hook input priority -10; policy accept;
...         iif "lo" accept
...         ct state established,related accept
...         tcp dport { 32768-60999, 61500 } drop
...     }
... }'''
>>> parse_nft_table(nft)
[(32768, 60999), (61500, 61500)]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

__all__ = [
    "FirewallReading",
    "parse_iptables",
    "parse_netsh_rules",
    "parse_nft_table",
    "parse_pf_rules",
    "read_firewall",
]

Intervals = list[tuple[int, int]]


@dataclass(frozen=True)
class FirewallReading:
    """The port intervals closed to other hosts, for IPv4 and IPv6, where they were read, and why
    nothing could be read (``problem``) when so."""

    closed4: tuple[tuple[int, int], ...] = ()
    closed6: tuple[tuple[int, int], ...] = ()
    source: str = ""
    problem: str = field(default="")

    def closes(self, port: int, *, ipv6: bool) -> bool:
        return any(low <= port <= high for low, high in (self.closed6 if ipv6 else self.closed4))


def _ports(text: str) -> Intervals:
    """``"{ 32768-60999, 61500 }"``, ``"50020"``, ``"32768:60999"`` → intervals."""
    out = []
    for item in text.strip().strip("{}").split(","):
        item = item.strip()
        if not item:
            continue
        low, _, high = item.replace(":", "-").partition("-")
        out.append((int(low), int(high or low)))
    return out


_NFT_DROP = re.compile(r"^tcp dport (\{[^}]*\}|\d+(?:-\d+)?) (drop|reject)")
_NFT_HARMLESS_ACCEPT = ('iif "lo" accept', "ct state established,related accept", "ct state related,established accept")


def parse_nft_table(text: str) -> Intervals:
    """The ports the ``inet streamdp_capture`` table's input chain drops for other hosts."""
    if "hook input" not in text:
        return []
    closed: Intervals = []
    for line in (raw.strip() for raw in text.splitlines()):
        drop = _NFT_DROP.match(line)
        if drop:
            closed += _ports(drop.group(1))
        elif line.endswith("accept") and line not in _NFT_HARMLESS_ACCEPT:
            break  # an accept the doctor did not write: what follows may never be reached
    return closed


def parse_iptables(text: str) -> Intervals:
    """The ports ``iptables -S INPUT`` output drops for other hosts' tcp connections, up to the
    first ACCEPT that is not loopback's or established connections'."""
    closed: Intervals = []
    for line in text.splitlines():
        words = line.split()
        if words[:2] != ["-A", "INPUT"]:
            continue
        target = words[words.index("-j") + 1] if "-j" in words else ""
        if target == "ACCEPT":
            harmless = ("-i" in words and words[words.index("-i") + 1] == "lo" and "!" not in words) or any(
                "ESTABLISHED" in w and "NEW" not in w for w in words
            )
            if not harmless:
                break
        elif target in ("DROP", "REJECT") and "--dport" in words and "tcp" in words:
            if " ! -i lo " in f" {line} ":
                closed += _ports(words[words.index("--dport") + 1])
    return closed


def parse_pf_rules(text: str) -> Intervals:
    """The ports ``pfctl -a com.apple/streamdp -sr`` shows blocked inbound (``port = N`` or ``port N:M``)."""
    closed: Intervals = []
    for line in text.splitlines():
        if not line.startswith("block") or " in " not in f" {line} " or "proto tcp" not in line:
            continue
        match = re.search(r"port (?:= )?(\d+(?::\d+)?)", line)
        if match:
            closed += _ports(match.group(1))
    return closed


def parse_netsh_rules(text: str) -> Intervals:
    """The ports of enabled, inbound, blocking rules in ``netsh advfirewall firewall show rule`` output."""
    closed: Intervals = []
    for block in re.split(r"\n\s*\n", text):
        fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in block.splitlines())}
        if (fields.get("enabled"), fields.get("direction"), fields.get("action")) == ("Yes", "In", "Block"):
            if fields.get("protocol", "TCP").upper() == "TCP" and fields.get("localport", "").replace(",", "").strip():
                closed += _ports(fields["localport"])
    return closed


def _output(command: list[str]) -> str | None:
    tool = shutil.which(command[0])
    if tool is None:
        return None
    try:
        done = subprocess.run([tool, *command[1:]], capture_output=True, text=True, timeout=5.0, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def read_firewall(platform: str | None = None) -> FirewallReading:
    """The rules ``streamdp doctor`` prints, read back from this machine's firewall."""
    platform = sys.platform if platform is None else platform
    if platform.startswith("linux") or platform == "darwin":
        if hasattr(os, "geteuid") and os.geteuid() != 0:
            return FirewallReading(problem="reading firewall rules needs root: run 'sudo streamdp doctor'")
    if platform.startswith("linux"):
        nft = _output(["nft", "list", "table", "inet", "streamdp_capture"])
        if nft is not None and parse_nft_table(nft):
            both = tuple(parse_nft_table(nft))
            return FirewallReading(both, both, "nftables table inet streamdp_capture")
        v4, v6 = _output(["iptables", "-S", "INPUT"]), _output(["ip6tables", "-S", "INPUT"])
        if v4 is None and v6 is None and nft is None:
            return FirewallReading(problem="neither nft nor iptables could be read")
        return FirewallReading(tuple(parse_iptables(v4 or "")), tuple(parse_iptables(v6 or "")), "iptables INPUT")
    if platform == "darwin":
        info, rules = _output(["pfctl", "-s", "info"]), _output(["pfctl", "-a", "com.apple/streamdp", "-sr"])
        if info is None or rules is None:
            return FirewallReading(problem="pfctl could not be read")
        if "Status: Enabled" not in info:
            return FirewallReading(problem="pf is disabled ('sudo pfctl -E')")
        closed = tuple(parse_pf_rules(rules))
        return FirewallReading(closed, closed, "pf anchor com.apple/streamdp")
    if platform in ("win32", "cygwin"):
        shown = _output(["netsh", "advfirewall", "firewall", "show", "rule", "name=streamdp: Pupil Capture ports"])
        if shown is None:
            return FirewallReading(problem="no rule named 'streamdp: Pupil Capture ports'")
        closed = tuple(parse_netsh_rules(shown))
        return FirewallReading(closed, closed, "Windows Firewall rule 'streamdp: Pupil Capture ports'")
    return FirewallReading(problem=f"streamdp cannot read the firewall on {platform!r}")
