"""Signals through the command line: the exit status of a stop is the same whatever the command was
doing (``streamdp simulate`` waiting for a subscriber or playing: 0, a clean stop), and the workers of an evaluation
never start half-way when the parent is stopped (no worker traceback on SIGTERM).

Processes are real; each is read line by line as it writes (never a sleep), then signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from streamdp.offline import executors

from .stderr_lines import read_lines


def _simulate(*argv: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "streamdp.cli", "simulate", "--port", "0", "--synthetic", "5", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")])
def test_simulate_says_it_waits_and_a_signal_while_waiting_exits_as_while_playing(sig, name):
    with _simulate() as proc:
        assert proc.stderr is not None
        (first,) = read_lines(proc.stderr.fileno(), 1, timeout=60.0)
        assert "waiting for a subscriber to gaze before playing synthetic-reading-0 at 1× real time" in first
        assert ", playing " not in first
        proc.send_signal(sig)
        rest = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 0
    assert rest.splitlines() == [f"simulated Pupil Capture stopped by {name} after 0 datums"]


def test_simulate_playing_without_waiting_exits_on_sigint_as_while_waiting():
    with _simulate("--no-wait", "--loop") as proc:
        assert proc.stderr is not None
        (first,) = read_lines(proc.stderr.fileno(), 1, timeout=60.0)
        assert ", playing synthetic-reading-0 at 1× real time, in a loop" in first and "waiting" not in first
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=60)[1].decode()
    assert proc.returncode == 0 and "Traceback" not in rest
    assert rest.splitlines()[-1].startswith("simulated Pupil Capture stopped by SIGINT after ")


def test_simulate_help_states_the_exit_statuses(capsys):
    from streamdp.cli import main

    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        "exit status: 0 the recording was played to its end, or SIGINT (Ctrl-C) or SIGTERM stopped it cleanly, "
        "whether it was waiting for a subscriber, playing or serving"
    ) in text


def _stop_signals_blocked() -> bool:
    """Whether SIGINT and SIGTERM are blocked in the calling thread."""
    return {signal.SIGINT, signal.SIGTERM} <= signal.pthread_sigmask(signal.SIG_BLOCK, [])


@pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="no signal masks on this platform")
def test_workers_start_with_the_stop_signals_held_back_and_run_with_them_delivered(monkeypatch):
    seen: list[bool] = []
    submit = executors.ProcessPoolExecutor.submit

    def recording_submit(self, *args, **kwargs):
        seen.append(_stop_signals_blocked())  # a signal now would interrupt a worker's start
        return submit(self, *args, **kwargs)

    monkeypatch.setattr(executors.ProcessPoolExecutor, "submit", recording_submit)
    before = _stop_signals_blocked()
    done = dict(executors.pool_results(_blocked_in_worker, [(), (), ()], 2, start_method="spawn"))
    assert seen == [True, True, True]
    # in the workers a SIGTERM ends them at once (not held back), and here the mask is as it was
    assert done == {0: False, 1: False, 2: False}
    assert _stop_signals_blocked() == before is False


def _blocked_in_worker() -> bool:
    return _stop_signals_blocked()
