"""Lines a process writes, read as they come: with a timeout for each, never a sleep."""

from __future__ import annotations

import os
import selectors
import subprocess
import sys


def read_lines(fd: int, want: int, timeout: float) -> list[str]:
    """Up to ``want`` lines read from ``fd``, waiting at most ``timeout`` s for each."""
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    buf, lines = b"", []
    try:
        while len(lines) < want and sel.select(timeout):
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            *done, buf = buf.split(b"\n")
            lines += [d.decode() for d in done]
    finally:
        sel.close()
    return lines[:want]


def first_lines_then_kill(argv: list[str], want: int, timeout: float = 30.0) -> list[str]:
    """The first ``want`` lines ``streamdp argv`` writes to stderr; then the process is ended
    (long work is announced before it starts: the test needs the announcement, not the work).

    It is ended as a user would, with SIGTERM, and waited for: on a loaded machine it may already
    have begun the work (its staging folder made) when the signal lands, and a command ended at any
    moment must leave nothing behind. SIGKILL only when it has not exited 30 s later."""
    with subprocess.Popen(
        [sys.executable, "-m", "streamdp.cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    ) as proc:
        try:
            assert proc.stderr is not None
            return read_lines(proc.stderr.fileno(), want, timeout)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
