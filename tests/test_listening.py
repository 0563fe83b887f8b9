"""The system's tables of listening sockets and the firewall rules ``streamdp doctor`` prints and reads
back, each parsed from text written from the tool's documented output format (Linux ``/proc/net/tcp``,
macOS ``netstat -anv``/``lsof``, Windows ``netstat -ano``; nftables, iptables, pf, netsh).
"""

from __future__ import annotations

import ipaddress
import sys

import pytest
import zmq

from streamdp.network.firewall import firewall_commands
from streamdp.network.firewall_rules import (
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

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/net/tcp")

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
