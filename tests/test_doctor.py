"""``streamdp doctor`` and the relay's start-up check: where raw gaze is reachable.

Capture stands in as the simulator, bound as Capture binds (``remote_host="*"``,
``backbone_host="*"``: every interface, as ``pupil_remote_controller.py`` and ``main.py`` do) or on
loopback only; tests connect to 127.0.0.1 only. The listening-socket parsers are tested on text
written from each tool's documented output format.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from streamdp.cli import main
from streamdp.network.doctor import EXIT_PRIVATE, EXIT_RAW_REACHABLE, EXIT_UNCHECKED, check_deployment, check_ports
from streamdp.network.firewall import ephemeral_range
from streamdp.network.firewall_rules import (
    FirewallReading,
)
from streamdp.network.simulator import CaptureSimulator
from streamdp.synthetic import generate

REC = generate(duration=2.0, seed=1).recording
LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/net/tcp")
EXPOSED = {"remote_host": "*", "backbone_host": "*"}  # Capture's own binding
NO_FIREWALL = FirewallReading(problem="not read in tests")

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


_TCP_HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
_TCP6_HEADER = (
    "  sl  local_address                         remote_address                        st tx_queue rx_queue tr "
    "tm->when retrnsmt   uid  timeout inode\n"
)


@pytest.mark.parametrize(
    ("closed4", "closed6", "code"),
    [
        pytest.param(((50070, 50070),), (), EXIT_RAW_REACHABLE, id="ipv4-rule-only"),
        pytest.param((), ((50070, 50070),), EXIT_RAW_REACHABLE, id="ipv6-rule-only"),
        pytest.param(((50070, 50070),), ((50070, 50070),), EXIT_PRIVATE, id="both-families"),
    ],
)
def test_an_ipv6_wildcard_takes_ipv4_too_so_both_families_must_be_closed(tmp_path, closed4, closed6, code):
    """Linux's default bindv6only=0: a socket on :: also answers IPv4 (and macOS's tcp46)."""
    (tmp_path / "tcp").write_text(_TCP_HEADER)
    wildcard = "0" * 32
    row = f"   0: {wildcard}:{50070:04X} {wildcard}:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"
    (tmp_path / "tcp6").write_text(_TCP6_HEADER + row)
    firewall = FirewallReading(closed4, closed6, "test rules")
    report = check_ports({"Pupil Remote": 50070}, platform="linux", proc_net=tmp_path, firewall=firewall)
    assert report.exit_code == code, report.lines()
