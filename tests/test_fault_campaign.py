"""Faults again, through the command line (issue #22 item 5): ``streamdp relay`` as a user runs it,
on one stream that meets them all in turn, and a subscriber that reads everything.

The stream: gaze with a 5-minute gap in it; malformed, giant and NaN frames pushed onto Capture's
backbone meanwhile; a subscriber that connects and never reads; Capture killed and started again
with its clock set back; its clock then set ahead with ``T``; SIGINT while a chunk is half full.
What must hold: the relay exits as a stopped command does, every chunk it says it released reached
the reading subscriber once, no chunk spans a gap or a restart, the budget spent only grows, and
each bad frame is counted in the stop line.
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import subprocess
import sys
import time

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.gaze import GazeBatch, Recording
from streamdp.network.simulator import CaptureSimulator
from streamdp.network.subscriber import connect_subscriber
from streamdp.synthetic import generate

from .live_harness import LOSSLESS, ask_remote

pytestmark = pytest.mark.slow

CHUNK = 16
STEP = SessionConfig().step
SPEED = 60.0  # the 5-minute gap passes in 5 s
GAP = 300.0


def _with_a_gap() -> Recording:
    """100 s of gaze, 5 minutes of nothing (the eye cameras off), 100 s more."""
    before = generate(duration=100.0, rate=200.0, seed=31, start_time=5000.0).recording
    after = generate(duration=100.0, rate=200.0, seed=32, start_time=5100.0 + GAP).recording
    return Recording(GazeBatch.concat([before.gaze, after.gaze]), None, "gap")


def _free_endpoint() -> str:
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REP)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    sock.close(linger=0)
    return f"tcp://127.0.0.1:{port}"


def _inject(remote: str) -> dict[str, int]:
    """Bad frames onto Capture's backbone, as any app on the LAN may publish them: the counts sent."""
    pub = zmq.Context.instance().socket(zmq.PUB)
    pub.linger = 1000
    pub.connect(f"tcp://127.0.0.1:{ask_remote(remote, 'PUB_PORT')}")
    time.sleep(0.3)  # a PUB's connection must be up before it sends: nothing to poll for
    topic = b"gaze.3d.01."
    malformed = [b"\xc1", b"\x92\x01", os.urandom(64), os.urandom(16 * 2**20)]  # the last: 16 MB of noise
    t = float(ask_remote(remote, "t"))
    nan = [{"topic": "gaze.3d.01.", "timestamp": t, "norm_pos": [float("nan"), 0.5], "confidence": 1.0}]
    for payload in malformed:
        pub.send_multipart([topic, payload])
    for datum in nan:
        pub.send_multipart([topic, msgpack.packb(datum)])
    pub.close()
    return {"malformed": len(malformed), "invalid": len(nan)}


def _until(sub: zmq.Socket, out: list[dict], done, timeout: float) -> None:
    """Chunks into ``out`` until ``done(chunk)`` holds for one (a live relay releases on its public
    schedule whatever the gaze does: it is never quiet for long)."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0 and sub.poll(int(left * 1000)):
        frames = sub.recv_multipart()
        if frames[0].startswith(b"streamdp.features."):
            out.append(msgpack.unpackb(frames[1], raw=False, strict_map_key=False))
            if done(out[-1]):
                return
    raise AssertionError(f"no such chunk within {timeout} s; {len(out)} chunks so far")


def _drain(sub: zmq.Socket, out: list[dict]) -> None:
    while sub.poll(500):
        frames = sub.recv_multipart()
        if frames[0].startswith(b"streamdp.features."):
            out.append(msgpack.unpackb(frames[1], raw=False, strict_map_key=False))


def test_the_relay_meets_every_fault_in_turn_and_loses_or_repeats_nothing():
    endpoint, status, port = _free_endpoint(), _free_endpoint(), int(_free_endpoint().rsplit(":", 1)[1])
    reader = connect_subscriber(endpoint, ("streamdp.features.",))
    stalled = zmq.Context.instance().socket(zmq.SUB)  # connects, subscribes, never reads
    stalled.rcvhwm = 1
    stalled.setsockopt(zmq.SUBSCRIBE, b"")
    stalled.connect(endpoint)
    argv = ["relay", "--remote", f"tcp://127.0.0.1:{port}", "--bind", endpoint, "--status-bind", status]
    argv += ["--chunk-length", str(CHUNK)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    got: list[dict] = []
    first = CaptureSimulator(_with_a_gap(), speed=SPEED, remote_port=port, **LOSSLESS)
    first.start()
    proc = subprocess.Popen([sys.executable, "-m", "streamdp.cli", *argv], stderr=subprocess.PIPE, text=True, env=env)
    second = None
    try:
        _until(reader, got, lambda m: True, 30.0)  # the relay is reading
        sent = _inject(first.remote_address)
        _until(reader, got, lambda m: m["t"][0] > 5100 + GAP, 60.0)  # gaze again after the gap
        assert first.wait_until_finished(30)
        first.stop()  # Capture killed ...
        restarted = generate(duration=600.0, rate=200.0, seed=33, start_time=50.0).recording  # ... its clock back
        second = CaptureSimulator(restarted, speed=SPEED, remote_port=port, **LOSSLESS)
        second.start()
        _until(reader, got, lambda m: m["t"][0] < 5000, 60.0)
        ahead = float(ask_remote(second.remote_address, "t")) + 600.0
        assert ask_remote(second.remote_address, f"T {ahead!r}") == "Timesync successful."
        _until(reader, got, lambda m: m["t"][0] > ahead, 60.0)
        proc.send_signal(signal.SIGINT)  # mid-chunk: the stream is still playing
        _, err = proc.communicate(timeout=20)
        _drain(reader, got)
    finally:
        if proc.poll() is None:
            proc.kill()
        for sim in (first, second):
            if sim is not None:
                sim.stop()
        reader.close(linger=0)
        stalled.close(linger=0)
    assert proc.returncode == 0, err
    stop = next(line for line in err.splitlines() if line.startswith("streamdp relay: stopped ("))
    released = int(re.search(r"(\d+) chunks? released", stop).group(1))
    malformed, invalid = (int(re.search(rf"(\d+) {what}", stop).group(1)) for what in ("malformed", "invalid"))
    restarts = int(re.search(r"(\d+) restarts?", stop).group(1))
    # every chunk released reached the reader, once
    indices = [m["ledger"]["chunk_index"] for m in got]
    assert len(got) == released and len(set(indices)) == len(indices) and indices == sorted(indices)
    # no chunk spans the gap, the restart or the jump: each is whole, on the step grid
    for m in got:
        assert len(m["t"]) == CHUNK and np.allclose(np.diff(m["t"]), STEP)
    starts = np.array([m["t"][0] for m in got])
    assert np.all(starts[1:] != starts[:-1])
    spent = [m["ledger"]["epsilon_spent"] for m in got]
    assert all(b > a for a, b in itertools.pairwise(spent))  # the budget only grows
    # segments: before the gap, after it, after the restart (clock back), after T ahead
    assert any(5000 < t < 5100 for t in starts) and any(5100 + GAP < t < 6000 for t in starts)
    assert any(t < 5000 for t in starts) and starts[-1] > 600
    assert restarts >= 2  # Capture back with its clock back, then T ahead
    assert malformed >= sent["malformed"] and invalid >= sent["invalid"]
