"""``streamdp doctor`` and the relay's start-up check: where raw gaze is reachable.

Capture stands in as the simulator, bound as Capture binds (``remote_host="*"``,
``backbone_host="*"``: every interface, as ``pupil_remote_controller.py`` and ``main.py`` do) or on
loopback only; tests connect to 127.0.0.1 only. The listening-socket parsers are tested on text
written from each tool's documented output format.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import msgpack
import pytest
import zmq

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.network.doctor import EXIT_PRIVATE, EXIT_RAW_REACHABLE, EXIT_UNCHECKED, check_deployment, check_ports
from streamdp.network.firewall import ephemeral_range, firewall_commands
from streamdp.network.firewall_rules import (
    FirewallReading,
    parse_iptables,
    parse_netsh_rules,
    parse_nft_table,
    parse_pf_rules,
)
from streamdp.network.listening import (
    ListeningSocket,
    listening_sockets,
    parse_lsof,
    parse_netstat_macos,
    parse_netstat_windows,
    parse_proc_net_tcp,
)
from streamdp.network.relay import Relay
from streamdp.network.remote_watch import REMOTE_LOGGER, announcement
from streamdp.network.simulator import CaptureSimulator
from streamdp.session import Session
from streamdp.synthetic import generate

REC = generate(duration=2.0, seed=1).recording
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/net/tcp")
EXPOSED = {"remote_host": "*", "backbone_host": "*"}  # Capture's own binding
NO_FIREWALL = FirewallReading(problem="not read in tests")

# ----------------------------------------------------------------------------- the tables

_PROC_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
_PROC_TAIL = " 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0"


def _proc_row(local: str, state: str = "0A", remote: str = "00000000:0000") -> str:
    return f"   0: {local} {remote} {state}{_PROC_TAIL}\n"


_V6_ZERO = "0" * 32
PROC_ROWS = [
    # (local address as /proc prints it on a little-endian host, expected address, expected scope)
    pytest.param("0100007F:C364", "127.0.0.1", 50020, "loopback", id="ipv4-127.0.0.1"),
    pytest.param("00000000:C364", "0.0.0.0", 50020, "every interface", id="ipv4-0.0.0.0"),
    pytest.param("1401A8C0:15C2", "192.168.1.20", 5570, "one interface", id="ipv4-lan-192.168.1.20"),
    pytest.param("00000000000000000000000001000000:15C2", "::1", 5570, "loopback", id="ipv6-::1"),
    pytest.param(f"{_V6_ZERO}:A1B2", "::", 41394, "every interface", id="ipv6-::"),
    pytest.param("B80D0120000000000000000005000000:A1B2", "2001:db8::5", 41394, "one interface", id="ipv6-lan"),
    pytest.param("0000000000000000FFFF00000100007F:C364", "::ffff:127.0.0.1", 50020, "loopback", id="ipv6-mapped-lo"),
]


@pytest.mark.parametrize(("local", "address", "port", "scope"), PROC_ROWS)
def test_proc_net_tcp_rows_give_address_port_and_scope(local, address, port, scope):
    table = _PROC_HEADER + _proc_row(local) + _proc_row(local, state="01", remote="0100007F:D431")  # + ESTABLISHED
    (found,) = parse_proc_net_tcp(table, byteorder="little")
    assert ipaddress.ip_address(found.address) == ipaddress.ip_address(address) and found.port == port
    assert found.scope == scope
    assert found.loopback_only is (scope == "loopback")


def test_proc_net_tcp_on_a_big_endian_host_reads_words_in_network_order():
    (found,) = parse_proc_net_tcp(_PROC_HEADER + _proc_row("7F000001:C364"), byteorder="big")
    assert found == ListeningSocket("127.0.0.1", 50020)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("hello world\n", id="no-header"),
        pytest.param(_PROC_HEADER + "   0: 0100007F 00000000:0000 0A\n", id="address-without-port"),
        pytest.param(_PROC_HEADER + "   0: ZZ00007F:C364 00000000:0000 0A\n", id="not-hex"),
    ],
)
def test_proc_net_tcp_that_is_not_a_table_is_refused(text):
    with pytest.raises(ValueError, match=r"table|line"):
        parse_proc_net_tcp(text, byteorder="little")


# macOS `netstat -anv -p tcp` (the columns of its manual page; -v adds the pid and more)
MACOS_NETSTAT = """\
Active Internet connections (including servers)
Proto Recv-Q Send-Q  Local Address          Foreign Address        (state)      rhiwat  shiwat    pid   epid
tcp4       0      0  127.0.0.1.50020        *.*                    LISTEN       131072  131072   4321      0
tcp46      0      0  *.50021                *.*                    LISTEN       131072  131072   4321      0
tcp4       0      0  *.61234                *.*                    LISTEN       131072  131072   4321      0
tcp6       0      0  ::1.5570               *.*                    LISTEN       131072  131072   5555      0
tcp6       0      0  *.5571                 *.*                    LISTEN       131072  131072   5555      0
tcp4       0      0  192.168.1.20.5572      *.*                    LISTEN       131072  131072   5555      0
tcp4       0      0  127.0.0.1.50020        127.0.0.1.61999        ESTABLISHED  408241  146988   4321      0
"""

# `lsof -nP -iTCP -sTCP:LISTEN` (COMMAND PID USER FD TYPE DEVICE SIZE/OFF NODE NAME)
LSOF = """\
COMMAND     PID  USER   FD   TYPE             DEVICE SIZE/OFF NODE NAME
pupil_cap  4321 alice   12u  IPv4 0x8e2f1b2c3d4e5f60      0t0  TCP 127.0.0.1:50020 (LISTEN)
pupil_cap  4321 alice   13u  IPv4 0x8e2f1b2c3d4e5f61      0t0  TCP *:61234 (LISTEN)
pupil_cap  4321 alice   14u  IPv6 0x8e2f1b2c3d4e5f62      0t0  TCP *:61235 (LISTEN)
python3.1  5555 alice    7u  IPv6 0x8e2f1b2c3d4e5f63      0t0  TCP [::1]:5570 (LISTEN)
python3.1  5555 alice    8u  IPv4 0x8e2f1b2c3d4e5f64      0t0  TCP 192.168.1.20:5572 (LISTEN)
"""

# Windows `netstat -ano` (its state column is translated: the German row says ABHÖREN)
WINDOWS_NETSTAT = """\

Active Connections

  Proto  Local Address          Foreign Address        State           PID
  TCP    0.0.0.0:135            0.0.0.0:0              LISTENING       1044
  TCP    127.0.0.1:50020        0.0.0.0:0              LISTENING       4321
  TCP    192.168.1.20:139       0.0.0.0:0              ABHÖREN         4
  TCP    127.0.0.1:50020        127.0.0.1:61999        ESTABLISHED     4321
  TCP    [::]:61234             [::]:0                 LISTENING       4321
  TCP    [::1]:5570             [::]:0                 LISTENING       5555
  TCP    [fe80::1%4]:5572       [::]:0                 LISTENING       5555
  UDP    0.0.0.0:5353           *:*                                    2100
"""


@pytest.mark.parametrize(
    ("parse", "text", "expected"),
    [
        pytest.param(
            parse_netstat_macos,
            MACOS_NETSTAT,
            [
                ("127.0.0.1", 50020),
                ("::", 50021),
                ("0.0.0.0", 61234),
                ("::1", 5570),
                ("::", 5571),
                ("192.168.1.20", 5572),
            ],
            id="macos-netstat",
        ),
        pytest.param(
            parse_lsof,
            LSOF,
            [("127.0.0.1", 50020), ("0.0.0.0", 61234), ("::", 61235), ("::1", 5570), ("192.168.1.20", 5572)],
            id="macos-lsof",
        ),
        pytest.param(
            parse_netstat_windows,
            WINDOWS_NETSTAT,
            [
                ("0.0.0.0", 135),
                ("127.0.0.1", 50020),
                ("192.168.1.20", 139),
                ("::", 61234),
                ("::1", 5570),
                ("fe80::1", 5572),
            ],
            id="windows-netstat",
        ),
    ],
)
def test_system_tool_output_gives_every_listening_socket_and_nothing_else(parse, text, expected):
    assert [(s.address, s.port) for s in parse(text)] == expected


@pytest.mark.parametrize(
    ("text", "scopes"),
    [
        pytest.param(MACOS_NETSTAT, parse_netstat_macos, id="macos-netstat"),
        pytest.param(LSOF, parse_lsof, id="macos-lsof"),
        pytest.param(WINDOWS_NETSTAT, parse_netstat_windows, id="windows-netstat"),
    ],
)
def test_only_loopback_rows_count_as_loopback(text, scopes):
    found = scopes(text)
    assert {s.address for s in found if s.loopback_only} <= {"127.0.0.1", "::1"}
    assert any(s.scope == "every interface" for s in found) and any(s.scope == "one interface" for s in found)


@LINUX
def test_the_real_table_shows_a_loopback_and_an_every_interface_bind():
    ctx = zmq.Context.instance()
    lo, anywhere = ctx.socket(zmq.REP), ctx.socket(zmq.REP)
    try:
        lo_port = lo.bind_to_random_port("tcp://127.0.0.1")
        any_port = anywhere.bind_to_random_port("tcp://*")
        table = listening_sockets()
        assert {s.scope for s in table if s.port == lo_port} == {"loopback"}
        assert {s.scope for s in table if s.port == any_port} == {"every interface"}
    finally:
        lo.close(linger=0)
        anywhere.close(linger=0)


@pytest.mark.parametrize(
    ("platform", "ports", "expected"),
    [
        pytest.param("linux", [50020, 41234], "tcp dport '{ 32768-60999 }' drop", id="linux-nft-merged"),
        pytest.param("linux", [50020, 61500], "tcp dport '{ 32768-60999, 61500 }' drop", id="linux-nft-outside"),
        pytest.param("darwin", [50020], "port { 49152:65535 } flags S/SA", id="macos-pf"),
        pytest.param("win32", [50020, 61234], "localport=50020,61234", id="windows-netsh"),
    ],
)
def test_firewall_commands_close_the_ports_and_the_ephemeral_range(platform, ports, expected):
    ephemeral = (32768, 60999) if platform == "linux" else (49152, 65535)
    assert any(expected in line for line in firewall_commands(platform, ports, ephemeral=ephemeral))


def test_no_firewall_commands_for_an_unknown_platform():
    assert firewall_commands("sunos5", [50020]) == []


# ----------------------------------------------------------------------------- doctor on the simulator


@pytest.fixture
def capture(request) -> Iterator[CaptureSimulator]:
    with CaptureSimulator(REC, speed=0, wait_for_subscriber=True, **getattr(request, "param", {})) as sim:
        yield sim


def _statuses(report) -> dict[str, str]:
    return {f.subject.split(" port ")[0]: f.status for f in report.findings}


@LINUX
@pytest.mark.parametrize(
    ("capture", "code", "exposed"),
    [
        pytest.param(EXPOSED, EXIT_RAW_REACHABLE, {"Pupil Remote", "SUB_PORT", "PUB_PORT"}, id="capture-default-*"),
        pytest.param(
            {"remote_host": "127.0.0.1", "backbone_host": "*"},
            EXIT_RAW_REACHABLE,
            {"SUB_PORT", "PUB_PORT"},
            id="remote-lo",
        ),
        pytest.param(
            {"remote_host": "*", "backbone_host": "127.0.0.1"}, EXIT_RAW_REACHABLE, {"Pupil Remote"}, id="bb-lo"
        ),
        pytest.param({}, EXIT_PRIVATE, set(), id="all-loopback"),
    ],
    indirect=["capture"],
)
def test_doctor_finds_every_raw_port_beyond_loopback(capture, code, exposed):
    report = check_deployment(
        remote=capture.remote_address, sanitized="tcp://127.0.0.1:5570", status="ipc:///tmp/s", firewall=NO_FIREWALL
    )
    assert report.exit_code == code
    statuses = _statuses(report)
    assert {name for name in ("Pupil Remote", "SUB_PORT", "PUB_PORT") if statuses[name] == "exposed"} == exposed
    assert report.verdict.startswith("private" if code == EXIT_PRIVATE else "NOT private")
    assert bool(report.firewall_commands) is bool(exposed)
    assert json.loads(report.as_json())["exit_code"] == code


@LINUX
@pytest.mark.parametrize("capture", [EXPOSED], indirect=True)
def test_the_firewall_commands_printed_cover_every_exposed_port(capture):
    report = check_deployment(remote=capture.remote_address, firewall=NO_FIREWALL)
    rule = next(line for line in report.firewall_commands if "dport" in line and line.startswith("sudo nft"))
    low, high = (int(v) for v in Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    for port in (capture.ports.remote, capture.ports.sub, capture.ports.pub):
        assert low <= port <= high or str(port) in rule


@LINUX
@pytest.mark.parametrize(
    ("argv", "code", "status"),
    [
        pytest.param([], EXIT_PRIVATE, {"noise": "ok", "ledger": "note"}, id="private"),
        pytest.param(["--seed", "3"], EXIT_RAW_REACHABLE, {"noise": "exposed"}, id="seeded"),
        pytest.param(["--bind", "tcp://0.0.0.0:5570"], EXIT_PRIVATE, {"sanitized endpoint": "warning"}, id="no-curve"),
        pytest.param(
            ["--status-bind", "tcp://0.0.0.0:5571"], EXIT_RAW_REACHABLE, {"status endpoint": "exposed"}, id="st"
        ),
    ],
)
def test_doctor_command_prints_findings_and_verdict_and_exits_with_its_code(capture, capsys, argv, code, status):
    assert main(["doctor", "--remote", capture.remote_address, *argv]) == code
    out = capsys.readouterr().out.splitlines()
    verdict = "private:" if code == EXIT_PRIVATE else "NOT private:"
    assert any(line.startswith(verdict) for line in out)
    for subject, expected in status.items():
        assert any(line.split()[0] == expected and line.split(None, 1)[1].startswith(subject) for line in out), out


@LINUX
def test_doctor_json_and_the_ledger_spent_and_left(capture, capsys, tmp_path):
    argv = ["--unit", "session", "--budget", "100", "--identity", "alice@headset1", "--ledger-dir", str(tmp_path)]
    assert main(["doctor", "--remote", capture.remote_address, "--json", *argv]) == EXIT_PRIVATE
    report = json.loads(capsys.readouterr().out)
    assert report["private"] is True and report["exit_code"] == 0
    (ledger,) = [f for f in report["findings"] if f["subject"] == "ledger"]
    assert ledger["status"] == "ok" and "ε 0 spent of 100, 100 left" in ledger["text"]


# ----------------------------------------------------------------------------- the firewall, read back

NFT_TABLE = """\
table inet streamdp_capture {
\tchain input {
\t\ttype filter hook input priority -10; policy accept;
\t\tiif "lo" accept
\t\tct state established,related accept
\t\ttcp dport { 32768-60999, 61500 } drop
\t}
}
"""
IPTABLES = """\
-P INPUT ACCEPT
-A INPUT -i lo -j ACCEPT
-A INPUT ! -i lo -p tcp -m tcp --dport 32768:60999 -m conntrack --ctstate NEW -j DROP
-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT
-A INPUT ! -i lo -p tcp -m tcp --dport 5000 -j DROP
"""
PF = """\
pass in quick on lo0 all flags S/SA keep state
block drop in quick proto tcp from any to any port = 50020 flags S/SA
block drop in quick proto tcp from any to any port 49152:65535 flags S/SA
"""
NETSH = """\

Rule Name:                            streamdp: Pupil Capture ports
----------------------------------------------------------------------
Enabled:                              Yes
Direction:                            In
Profiles:                             Domain,Private,Public
Grouping:
LocalIP:                              Any
RemoteIP:                             Any
Protocol:                             TCP
LocalPort:                            50020,61234
RemotePort:                           Any
Edge traversal:                       No
Action:                               Block
Ok.
"""


@pytest.mark.parametrize(
    ("parse", "text", "closed"),
    [
        pytest.param(parse_nft_table, NFT_TABLE, [(32768, 60999), (61500, 61500)], id="nftables"),
        pytest.param(
            parse_nft_table, NFT_TABLE.replace('iif "lo" accept', "tcp dport 41000 accept"), [], id="nft-accept"
        ),
        pytest.param(parse_nft_table, "table inet streamdp_capture {\n}\n", [], id="nft-no-chain"),
        pytest.param(parse_iptables, IPTABLES, [(32768, 60999)], id="iptables-up-to-a-broader-accept"),
        pytest.param(parse_iptables, IPTABLES.replace("! -i lo ", ""), [], id="iptables-loopback-too"),
        pytest.param(parse_pf_rules, PF, [(50020, 50020), (49152, 65535)], id="pf"),
        pytest.param(parse_netsh_rules, NETSH, [(50020, 50020), (61234, 61234)], id="netsh"),
        pytest.param(parse_netsh_rules, NETSH.replace("Yes", "No"), [], id="netsh-disabled"),
    ],
)
def test_the_firewall_rules_the_doctor_prints_are_read_back(parse, text, closed):
    assert parse(text) == closed


@LINUX
@pytest.mark.parametrize("capture", [EXPOSED], indirect=True)
def test_ports_on_every_interface_closed_by_a_firewall_read_back_are_private(capture):
    low, high = ephemeral_range("linux")
    closed = ((min(low, capture.ports.remote), max(high, capture.ports.remote)),)
    firewall = FirewallReading(closed, closed, "nftables table inet streamdp_capture")
    report = check_deployment(remote=capture.remote_address, firewall=firewall)
    assert report.exit_code == EXIT_PRIVATE, report.lines()
    assert all("dropped by nftables" in f.text for f in report.findings if " port " in f.subject)
    ipv6_only = FirewallReading((), closed, "ip6tables INPUT")  # Capture binds IPv4: not closed
    assert check_deployment(remote=capture.remote_address, firewall=ipv6_only).exit_code == EXIT_RAW_REACHABLE


@LINUX
@pytest.mark.parametrize("capture", [EXPOSED], indirect=True)
def test_a_firewall_that_cannot_be_read_is_named_in_the_finding(capture):
    report = check_deployment(remote=capture.remote_address, firewall=FirewallReading(problem="needs root: sudo"))
    assert report.exit_code == EXIT_RAW_REACHABLE
    assert all("firewall: needs root: sudo" in f.text for f in report.findings if f.status == "exposed")


def test_doctor_for_a_neon_checks_this_pc_only(capsys):
    assert main(["doctor", "--neon", "192.0.2.7"]) == EXIT_PRIVATE
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("   note  device 192.0.2.7:") and out[-1].startswith("private on this PC:")


# ----------------------------------------------------------------------------- bad input: exit 2, one line


class _Silent:
    """A REP socket that never answers: Pupil Remote hung."""

    def __enter__(self) -> str:
        self.sock = zmq.Context.instance().socket(zmq.REP)
        self.sock.linger = 0
        return f"tcp://127.0.0.1:{self.sock.bind_to_random_port('tcp://127.0.0.1')}"

    def __exit__(self, *exc: object) -> None:
        self.sock.close(linger=0)


class _Absent:
    """A port nobody listens on: Capture not running."""

    def __enter__(self) -> str:
        sock = zmq.Context.instance().socket(zmq.REP)
        port = sock.bind_to_random_port("tcp://127.0.0.1")
        sock.close(linger=0)
        return f"tcp://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        pass


class _Garbled:
    """Pupil Remote answering something that is not a port."""

    def __enter__(self) -> str:
        self.sock = zmq.Context.instance().socket(zmq.REP)
        self.sock.linger = 0
        address = f"tcp://127.0.0.1:{self.sock.bind_to_random_port('tcp://127.0.0.1')}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        return address

    def _serve(self) -> None:
        if self.sock.poll(10_000):
            self.sock.recv()
            self.sock.send_string("Unknown command.")

    def __exit__(self, *exc: object) -> None:
        self.thread.join(11)
        self.sock.close(linger=0)


@LINUX
@pytest.mark.parametrize(
    ("remote", "message"),
    [
        pytest.param(_Absent, "nothing listens on port", id="capture-absent"),
        pytest.param(_Silent, "did not answer SUB_PORT within 0.3 s", id="remote-not-answering"),
        pytest.param(_Garbled, "answered 'Unknown command.' to SUB_PORT, not a port", id="remote-garbled"),
    ],
)
def test_doctor_without_a_pupil_remote_says_so_in_one_line_and_exits_2(capsys, remote, message):
    with remote() as address:
        assert main(["doctor", "--remote", address, "--timeout", "0.3"]) == EXIT_UNCHECKED
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("streamdp doctor: could not check:") and message in line


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--remote", "foo"], id="not-an-address"),
        pytest.param(["--remote", "tcp://127.0.0.1:99999"], id="port-out-of-range"),
        pytest.param(["--curve-secret", "server.key_secret"], id="curve-half"),
        pytest.param(["--budget", "-1", "--unit", "session"], id="negative-budget"),
    ],
)
def test_doctor_bad_options_give_one_line_and_exit_2(capsys, argv):
    assert main(["doctor", *argv]) == EXIT_UNCHECKED
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("streamdp doctor: error:")


def _dir_as_tcp(tmp: Path) -> Path:
    (tmp / "tcp").mkdir()
    return tmp


def _garbage_tcp(tmp: Path) -> Path:
    (tmp / "tcp").write_text("this is not a socket table\n")
    return tmp


@pytest.mark.parametrize(
    ("platform", "proc_net", "message"),
    [
        pytest.param("linux", lambda tmp: tmp, "tcp: missing", id="linux-table-missing"),
        pytest.param("linux", _dir_as_tcp, "tcp: cannot be read", id="linux-table-unreadable"),
        pytest.param("linux", _garbage_tcp, "not a /proc/net/tcp table", id="linux-table-garbage"),
        pytest.param("darwin", lambda tmp: tmp, "'netstat' is not on this system's PATH", id="macos-no-tool"),
        pytest.param("win32", lambda tmp: tmp, "'netstat' is not on this system's PATH", id="windows-no-tool"),
        pytest.param("sunos5", lambda tmp: tmp, "cannot read the listening sockets on 'sunos5'", id="other-platform"),
    ],
)
def test_a_table_that_cannot_be_read_means_could_not_check(capture, monkeypatch, tmp_path, platform, proc_net, message):
    monkeypatch.setenv("PATH", str(tmp_path))  # no system tool on it
    report = check_deployment(remote=capture.remote_address, platform=platform, proc_net=proc_net(tmp_path))
    assert report.exit_code == EXIT_UNCHECKED
    assert "\n" not in report.verdict and report.verdict.startswith("could not check: listening sockets:")
    assert message in report.verdict and "check by hand" in report.verdict


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"remote": 50020}, TypeError, id="remote-not-str"),
        pytest.param({"remote": "udp://127.0.0.1:50020"}, ValueError, id="remote-not-tcp"),
        pytest.param({"remote": "tcp://127.0.0.1:50020", "timeout": 0}, ValueError, id="timeout-zero"),
        pytest.param({"remote": "tcp://127.0.0.1:50020", "timeout": "1"}, TypeError, id="timeout-str"),
    ],
)
def test_check_deployment_parameters_are_checked(kwargs, error):
    with pytest.raises(error, match=r"remote|timeout"):
        check_deployment(**kwargs)


@pytest.mark.parametrize(
    ("ports", "kwargs", "error"),
    [
        pytest.param({"SUB_PORT": "41234"}, {}, TypeError, id="port-str"),
        pytest.param({"SUB_PORT": True}, {}, TypeError, id="port-bool"),
        pytest.param({"SUB_PORT": 0}, {}, ValueError, id="port-zero"),
        pytest.param({"SUB_PORT": 70000}, {}, ValueError, id="port-too-big"),
        pytest.param({}, {"curve": "yes"}, TypeError, id="curve-str"),
        pytest.param({}, {"seeded": 1}, TypeError, id="seeded-int"),
    ],
)
def test_check_ports_parameters_are_checked(ports, kwargs, error):
    with pytest.raises(error, match=r"raw_ports|curve|seeded"):
        check_ports(ports, **kwargs)


# ----------------------------------------------------------------------------- the relay's check


def _record(msg: str, *, logger: str = REMOTE_LOGGER, topic: bytes = b"logging.debug") -> list[bytes]:
    return [topic, msgpack.packb({"name": logger, "msg": msg, "args": [], "levelname": "DEBUG"})]


@pytest.mark.parametrize(
    ("frames", "expected"),
    [
        pytest.param(_record("on_pupil_remote_server_did_start(127.0.0.1:50020)"), ("started", 50020), id="started"),
        pytest.param(_record("on_pupil_remote_server_did_start(*:50020)"), ("started", 50020), id="started-*"),
        pytest.param(_record("on_pupil_remote_server_did_stop"), None, id="stopped"),
        pytest.param(
            _record("Could not bind to Socket: tcp://10.1.1.1:50020. Reason: x", topic=b"logging.error"),
            ("fell back", None),
            id="fell-back",
        ),
        pytest.param(_record("on_pupil_remote_server_did_start(x:1)", logger="other"), None, id="other-logger"),
        pytest.param([b"logging.debug", b"\xc1 not msgpack"], None, id="garbage"),
        pytest.param([b"gaze.3d.01.", b"\x80"], None, id="gaze"),
    ],
)
def test_capture_announcements_of_pupil_remote_restarts(frames, expected):
    assert announcement(frames) == expected


@contextmanager
def _relay(sim: CaptureSimulator, **side) -> Iterator[tuple[Relay, queue.Queue]]:
    """A relay on ``sim`` whose deployment reports land in a queue, as ``streamdp relay`` builds it."""
    reports: queue.Queue = queue.Queue()
    session = Session(SessionConfig(), sinks=[], source=f"Capture at {sim.remote_address}")
    relay = Relay(session, remote=sim.remote_address, deployment_check=functools.partial(check_ports, **side))
    assert relay.watch is not None
    relay.watch.on_report = reports.put
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    try:
        yield relay, reports
    finally:
        relay.stop()
        thread.join(10)


def _restarted_until_reported(restart, reports: queue.Queue):
    """Restart Pupil Remote until the relay reports again: its announcement subscription joins the
    backbone asynchronously (ZeroMQ's slow joiner), and each restart is announced anew."""
    for _ in range(40):
        restart()
        try:
            return reports.get(timeout=0.5)
        except queue.Empty:
            continue
    raise AssertionError("the relay never checked again after Pupil Remote restarted")


PLAYING = {"speed": 1.0, "loop": True}  # gaze flowing as from a Capture: the relay reads, never asks 't'


@LINUX
@pytest.mark.parametrize(
    ("bind", "code"),
    [pytest.param(EXPOSED, EXIT_RAW_REACHABLE, id="capture-default-*"), pytest.param({}, EXIT_PRIVATE, id="loopback")],
)
def test_the_relay_checks_the_deployment_when_it_connects(bind, code):
    with (
        CaptureSimulator(REC, **PLAYING, **bind) as sim,
        _relay(sim, status="tcp://127.0.0.1:5571") as (relay, reports),
    ):
        report = reports.get(timeout=10)
        assert report.exit_code == code
        assert relay.watch is not None and relay.watch.report is report


@LINUX
def test_the_relay_checks_again_when_pupil_remote_restarts_from_capture_menu():
    with (
        CaptureSimulator(REC, **PLAYING, remote_host="*", backbone_host="127.0.0.1") as sim,
        _relay(sim) as (relay, reports),
    ):
        first = reports.get(timeout=10)
        assert first.exit_code == EXIT_RAW_REACHABLE and _statuses(first)["Pupil Remote"] == "exposed"
        again = _restarted_until_reported(lambda: sim.restart_remote(host="127.0.0.1"), reports)
        assert again.exit_code == EXIT_PRIVATE, again.lines()
        assert relay.counters.reconnects == 0 and relay.counters.restarts == 0  # the announcement, not a reconnect


@LINUX
def test_the_relay_checks_again_when_capture_restarts_its_network_api_plugin_on_loopback():
    to_loopback = {"subject": "start_plugin", "name": "NetworkApiPlugin", "args": {"host": "127.0.0.1"}}
    to_loopback["args"]["use_primary_interface"] = False
    ctx = zmq.Context.instance()
    with (
        CaptureSimulator(REC, **PLAYING, remote_host="*", backbone_host="127.0.0.1") as sim,
        _relay(sim) as (_, reports),
    ):
        assert reports.get(timeout=10).exit_code == EXIT_RAW_REACHABLE
        pub = ctx.socket(zmq.PUB)  # the way a plugin in Capture notifies: onto the backbone
        pub.linger = 0
        pub.connect(f"tcp://127.0.0.1:{sim.ports.pub}")
        try:
            frames = [b"notify.start_plugin", msgpack.packb({**to_loopback, "topic": "notify.start_plugin"})]
            again = _restarted_until_reported(lambda: pub.send_multipart(frames), reports)
        finally:
            pub.close(linger=0)
        assert again.exit_code == EXIT_PRIVATE, again.lines()


def _stderr_lines(proc: subprocess.Popen) -> queue.Queue:
    """``proc``'s stderr, line by line as it comes, read by a thread (no sleep, no buffered line missed)."""
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True).start()
    return lines


def _line_starting(lines: queue.Queue, prefix: str, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if line.startswith(prefix):
            return line
    raise AssertionError(f"no line starting {prefix!r} within {timeout} s")


@LINUX
@pytest.mark.parametrize(
    ("bind", "verdict"),
    [
        pytest.param(EXPOSED, "streamdp relay: NOT private:", id="capture-default-*"),
        pytest.param({}, "streamdp relay: private:", id="loopback"),
    ],
)
def test_streamdp_relay_says_the_verdict_in_one_line_once_connected(bind, verdict):
    ctx = zmq.Context.instance()
    free = [ctx.socket(zmq.REP) for _ in range(2)]
    ports = [s.bind_to_random_port("tcp://127.0.0.1") for s in free]
    for s in free:
        s.close(linger=0)  # two ports nobody holds, for the relay's sockets
    with CaptureSimulator(REC, **PLAYING, **bind) as sim:
        argv = ["relay", "--remote", sim.remote_address, "--bind", f"tcp://127.0.0.1:{ports[0]}"]
        argv += ["--status-bind", f"tcp://127.0.0.1:{ports[1]}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamdp.cli", *argv], stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            lines = _stderr_lines(proc)
            assert "→" in _line_starting(lines, "streamdp relay: ")  # the start line: endpoints, mechanism
            line = _line_starting(lines, "streamdp relay: ")
            assert line.startswith(verdict) and line.count("\n") == 1
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=15)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 0
