"""The relay's deployment check (``streamdp doctor``'s, :mod:`streamdp.network.remote_watch`): once
when it connects to Capture, and whenever Pupil Remote restarts its server — announced only by
Capture's log record ``on_pupil_remote_server_did_start(<host>:<port>)`` on the backbone. Capture
stands in as the simulator bound as Capture binds (every interface) or on loopback; tests connect
to 127.0.0.1 only.
"""

from __future__ import annotations

import functools
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import msgpack
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.network.doctor import EXIT_PRIVATE, EXIT_RAW_REACHABLE, check_ports
from streamdp.network.relay import Relay
from streamdp.network.remote_watch import REMOTE_LOGGER, announcement
from streamdp.network.simulator import CaptureSimulator
from streamdp.session import Session
from streamdp.synthetic import generate

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/net/tcp")
EXPOSED = {"remote_host": "*", "backbone_host": "*"}  # Capture's own binding


def _statuses(report) -> dict[str, str]:
    return {f.subject.split(" port ")[0]: f.status for f in report.findings}


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
    """Restart Pupil Remote until the relay reports again, then the last of its reports once they
    stop. The relay's announcement subscription joins the backbone asynchronously (ZeroMQ's slow
    joiner), so the first restarts may go unheard; a restart heard while the next one is under way
    is checked then (Pupil Remote closed), and the next announcement checks again."""
    quiet = 1.5  # > the watch's 0.5 s between reads, plus a check
    for _ in range(20):
        restart()
        try:
            report = reports.get(timeout=quiet)
        except queue.Empty:
            continue
        while True:
            try:
                report = reports.get(timeout=quiet)
            except queue.Empty:
                return report
    raise AssertionError("the relay never checked again after Pupil Remote restarted")


#: gaze flowing as from a Capture for the whole test (no gap between passes of a loop): the relay
#: reads and never asks Pupil Remote whether Capture is alive, so only the announcement re-checks
PLAYING = {"speed": 1.0}
STREAM = generate(duration=120.0, seed=4).recording


@LINUX
@pytest.mark.parametrize(
    ("bind", "code"),
    [pytest.param(EXPOSED, EXIT_RAW_REACHABLE, id="capture-default-*"), pytest.param({}, EXIT_PRIVATE, id="loopback")],
)
def test_the_relay_checks_the_deployment_when_it_connects(bind, code):
    with (
        CaptureSimulator(STREAM, **PLAYING, **bind) as sim,
        _relay(sim, status="tcp://127.0.0.1:5571") as (relay, reports),
    ):
        report = reports.get(timeout=10)
        assert report.exit_code == code
        assert relay.watch is not None and relay.watch.report is report


@LINUX
def test_the_relay_checks_again_when_pupil_remote_restarts_from_capture_menu():
    with (
        CaptureSimulator(STREAM, **PLAYING, remote_host="*", backbone_host="127.0.0.1") as sim,
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
        CaptureSimulator(STREAM, **PLAYING, remote_host="*", backbone_host="127.0.0.1") as sim,
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


def _stderr_lines(proc: subprocess.Popen) -> tuple[queue.Queue, threading.Thread]:
    """``proc``'s stderr, line by line as it comes, read by a thread to its end (no sleep, no
    buffered line missed); wait for the process with ``proc.wait`` and join the thread, not
    ``communicate``, which would read and close the same pipe under the thread."""
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True)
    reader.start()
    return lines, reader


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
    with CaptureSimulator(STREAM, **PLAYING, **bind) as sim:
        # two ports nobody holds, for the relay's sockets: picked once the simulator holds its own
        # (picked before, the simulator's random ports could take one of them)
        free = [ctx.socket(zmq.REP) for _ in range(2)]
        ports = [s.bind_to_random_port("tcp://127.0.0.1") for s in free]
        for s in free:
            s.close(linger=0)
        argv = ["relay", "--remote", sim.remote_address, "--bind", f"tcp://127.0.0.1:{ports[0]}"]
        argv += ["--status-bind", f"tcp://127.0.0.1:{ports[1]}"]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamdp.cli", *argv], stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            lines, reader = _stderr_lines(proc)
            assert "→" in _line_starting(lines, "streamdp relay: ")  # the start line: endpoints, mechanism
            line = _line_starting(lines, "streamdp relay: ")
            if line.startswith("streamdp relay: waiting for"):  # a loaded machine: Capture answered late
                line = _line_starting(lines, "streamdp relay: ")
            assert line.startswith(verdict) and line.count("\n") == 1
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=15)
            reader.join(5)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            proc.stderr.close()
    assert proc.returncode == 0
