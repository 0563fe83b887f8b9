"""A relay waiting for its source (issue #27 item 2): it says once what it waits for, counts its
attempts, starts counting again once connected, and with ``--wait-timeout`` gives up with one line
and exit status 2."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from streamdp.cli import main
from streamdp.cli.relay import Waiting
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.session import Session
from streamdp.synthetic import generate


def _silent_address() -> str:
    """A loopback port where nothing listens (a Pupil Remote that is not there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"tcp://127.0.0.1:{s.getsockname()[1]}"


def test_the_relay_hands_each_failed_attempt_to_its_hook_and_a_raising_hook_ends_the_loop():
    calls: list[int] = []

    def hook(problem: Exception, attempts: int) -> None:
        calls.append(attempts)
        assert "did not answer 'SUB_PORT'" in str(problem)
        if attempts == 3:
            raise InputError("given up")

    relay = Relay(Session(SessionConfig(), sinks=[]), remote=_silent_address(), timeout=0.05)
    relay.on_waiting = hook
    with pytest.raises(InputError, match="given up"):
        relay.run()
    assert calls == [1, 2, 3]


def test_the_waiting_ends_when_capture_answers():
    rec = generate(duration=5.0, seed=1).recording
    remote = _silent_address()
    sim = CaptureSimulator(rec, remote_port=int(remote.rsplit(":", 1)[1]), speed=0.0, wait_for_subscriber=True)
    calls: list[int] = []
    relay = Relay(Session(SessionConfig(chunk_length=8), sinks=[]), remote=remote, timeout=0.2)
    relay.on_waiting = lambda problem, attempts: calls.append(attempts)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    try:
        assert not relay.connected.wait(0.8) and calls[:2] == [1, 2]  # Capture is not there yet
        sim.start()
        assert relay.connected.wait(10.0)
        waited = len(calls)
        time.sleep(0.5)
        assert len(calls) == waited  # connected: no more waiting
    finally:
        relay.stop()
        thread.join(10)
        sim.stop()
    assert calls == list(range(1, waited + 1))


def test_waiting_says_once_what_it_waits_for_and_then_counts(capsys, caplog):
    import logging

    waiting = Waiting("tcp://127.0.0.1:50020", timeout=None)
    with caplog.at_level(logging.INFO, logger="streamdp.cli.relay"):
        for attempt in range(1, 6):
            waiting(TimeoutError("Pupil Remote at tcp://127.0.0.1:50020 did not answer 'SUB_PORT'"), attempt)
    # (with -v, which an earlier command of this process may have set, the attempts show on stderr too)
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "still waiting" not in line]
    assert line.startswith("streamdp relay: waiting for Pupil Capture's Pupil Remote at tcp://127.0.0.1:50020 ")
    assert "waits until stopped (Ctrl-C stops; --wait-timeout SECONDS sets a limit)" in line
    assert [r.getMessage().split(": ", 1)[1].split(",")[0] for r in caplog.records] == [
        f"attempt {n}" for n in range(1, 6)
    ]
    assert waiting.attempts == 5


def test_relay_wait_timeout_ends_with_one_error_line_and_status_2(capsys):
    remote = _silent_address()
    argv = ["relay", "--remote", remote, "--wait-timeout", "1.5", "--bind", "tcp://127.0.0.1:0",
            "--status-bind", "tcp://127.0.0.1:0"]  # fmt: skip
    assert main(argv) == 2
    lines = capsys.readouterr().err.splitlines()
    assert "Traceback" not in "\n".join(lines)
    assert sum(line.startswith("streamdp relay: waiting for Pupil Capture") for line in lines) == 1
    assert lines[-1].startswith(
        f"streamdp relay: error: --wait-timeout 1.5: Pupil Capture at {remote} did not answer in "
    )
    assert " attempts over " in lines[-1] and lines[-1].endswith("(Capture's Network API plugin)?")
