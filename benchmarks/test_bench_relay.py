"""The relay under Capture's traffic (:mod:`benchmarks.capture_traffic`: ~30 Hz world-frame
bursts of ~7 gaze datums of ~1.3 kB, monocular gaze up to 90 ms late), in a stand-in Capture
process speaking Pupil Remote.

- Throughput per CPU-second on bursts: a bare SUB + msgpack decode loop and the relay (features,
  DCFPA, publishing) consume the same bursty stream; each reports the CPU seconds its process
  spent (``time.process_time``), and the summary prints bare / relay (target: relay ≥ 0.8× the
  bare loop, i.e. the ratio ≥ 0.8).
- Latency: from the relay's receipt of the burst that took the ordered gaze past a chunk's
  deadline to the release's arrival at a subscriber in another process, over ≥ 500 releases;
  p50/p90/p99/max (targets p50 ≤ 0.5 ms, p99 ≤ 2 ms). The deliberate holds (reorder window and
  slack, configuration) are reported beside it.
- CPU at a real 120, 200 and 400 Hz: the relay's own loop (``Relay.run``) paced by the stand-in
  Capture, CPU seconds per second of gaze (target ≤ 1 % of one core at 200 Hz).
- Flood: 1M messages flat out into a relay process whose subscriber never reads: peak RSS and
  RSS after (targets ≤ 120 MB, back under 80 MB).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from benchmarks.capture_traffic import SendPlan, burst_stats, capture_bursts, serve_capture
from streamdp.config import SessionConfig
from streamdp.network.relay import Relay
from streamdp.network.sink import ReleasePublisher
from streamdp.session import Session

GROUP = "relay on Capture bursts: CPU-seconds, bare SUB+msgpack loop / relay with features and DCFPA"
SPAWN = mp.get_context("spawn")


class Capture:
    """A stand-in Capture in a child process, sending per ``plan`` once :meth:`go` is called."""

    def __init__(self, plan: SendPlan, *, report_sends: bool = False) -> None:
        self.ports, self._go = SPAWN.Queue(), SPAWN.Event()
        self.sent_q = SPAWN.Queue() if report_sends else None
        self.proc = SPAWN.Process(target=serve_capture, args=(plan, self.ports, self._go, self.sent_q))
        self.proc.start()
        self.remote_port, self.sub_port = self.ports.get(timeout=120)
        self.remote = f"tcp://127.0.0.1:{self.remote_port}"

    def go(self) -> None:
        self._go.set()

    def stop(self) -> None:
        req = zmq.Context.instance().socket(zmq.REQ)
        req.linger = 0
        req.connect(self.remote)
        req.send_string("quit")
        req.poll(5000)
        req.close(linger=0)
        self.proc.join(30)
        if self.proc.is_alive():
            self.proc.kill()


def _subscribe(port: int) -> zmq.Socket:
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.rcvhwm = 0
    sub.connect(f"tcp://127.0.0.1:{port}")
    sub.setsockopt(zmq.SUBSCRIBE, b"gaze.")
    return sub


THROUGHPUT_SECONDS, THROUGHPUT_SPEED = 120.0, 20.0


def _bare(capture: Capture, expected: int) -> float:
    sub = _subscribe(capture.sub_port)
    time.sleep(0.5)  # the subscription reaches the publisher before anything is sent
    capture.go()
    got, cpu0 = 0, time.process_time()
    while got < expected and sub.poll(5000):
        while True:
            try:
                frames = sub.recv_multipart(zmq.NOBLOCK)
            except zmq.Again:
                break
            msgpack.unpackb(frames[1], raw=False, strict_map_key=False)
            got += 1
    cpu = time.process_time() - cpu0
    sub.close(linger=0)
    assert got == expected
    return cpu


def _relay(capture: Capture, expected: int) -> tuple[float, int]:
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    relay = Relay(Session(SessionConfig(chunk_length=32, seed=0), sinks=[sink]), remote=capture.remote)
    relay._connect()
    time.sleep(0.5)
    capture.go()
    cpu0 = time.process_time()
    assert relay._sub is not None
    while relay.counters.received < expected and relay._sub.poll(5000):
        relay._drain()
    cpu = time.process_time() - cpu0
    released = relay.counters.released
    relay._disconnect()
    sink.close()
    assert relay.counters.received == expected and relay.counters.late == 0
    return cpu, released


@pytest.fixture(scope="module")
def throughput_messages() -> int:
    return int(burst_stats(capture_bursts(THROUGHPUT_SECONDS))["messages"])


@pytest.mark.parametrize("role", ["baseline", "candidate"])
def test_throughput_per_cpu_second_on_capture_bursts(benchmark, role, throughput_messages):
    benchmark.group = GROUP
    benchmark.extra_info["role"] = role
    plan = SendPlan(seconds=THROUGHPUT_SECONDS, speed=THROUGHPUT_SPEED)
    cpus = []

    def one_round():
        capture = Capture(plan)
        try:
            if role == "baseline":
                cpus.append(_bare(capture, throughput_messages))
            else:
                cpu, released = _relay(capture, throughput_messages)
                assert released >= 2
                cpus.append(cpu)
        finally:
            capture.stop()

    benchmark.pedantic(one_round, rounds=3, iterations=1)
    benchmark.extra_info["cpu_s"] = float(np.median(cpus))
    benchmark.extra_info["messages_per_cpu_s"] = throughput_messages / float(np.median(cpus))
    if role == "candidate":
        benchmark.extra_info["target"] = "(target: relay >= 0.8x the bare loop per CPU-second)"


def _app(endpoint: str, ready, out_q, expected: int) -> None:
    """Child process: an app receiving sanitized chunks; reports (chunk index, arrival time)."""
    ctx = zmq.Context()
    sub = ctx.socket(zmq.SUB)
    sub.linger = 0
    sub.connect(endpoint)
    sub.setsockopt(zmq.SUBSCRIBE, b"streamdp.features.")
    ready.set()
    got = []
    while len(got) < expected and sub.poll(10_000):
        payload = sub.recv_multipart()[1]
        now = time.monotonic()
        got.append((msgpack.unpackb(payload, raw=False)["ledger"]["chunk_index"], now))
    out_q.put(got)
    sub.close(linger=0)
    ctx.term()


LATENCY_RELEASES = 520


def test_release_latency_under_capture_bursts(benchmark):
    """Chunks of 2 steps (1 s), so that ≥ 500 releases take ~9 min of gaze sent at 20× real
    time; the work per release is that of its chunk length (a 64-step DCFPA chunk's noise is
    in test_bench_privacy)."""
    config = SessionConfig(chunk_length=2, seed=0)
    seconds = 30.0 + LATENCY_RELEASES * config.chunk_length * config.step + 5.0
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    out_q, ready = SPAWN.Queue(), SPAWN.Event()
    app = SPAWN.Process(target=_app, args=(sink.endpoint, ready, out_q, LATENCY_RELEASES))
    app.start()
    capture = Capture(SendPlan(seconds=seconds, speed=20.0))
    assert ready.wait(60) and sink.wait_for_subscribers(1, timeout=10.0)
    relay = Relay(Session(config, sinks=[sink]), remote=capture.remote)
    relay._connect()
    time.sleep(0.5)
    sent_at: dict[int, float] = {}
    relay.on_release = lambda rel, t: sent_at.__setitem__(rel.ledger["chunk_index"], t)

    def run():
        capture.go()
        assert relay._sub is not None
        while relay.counters.released < LATENCY_RELEASES and relay._sub.poll(5000):
            relay._drain()
        return relay.counters.released

    try:
        released = benchmark.pedantic(run, rounds=1, iterations=1)
        arrivals = out_q.get(timeout=60)
    finally:
        app.join(30)
        relay._disconnect()
        sink.close()
        capture.stop()
    lat = np.array([(t - sent_at[i]) * 1000 for i, t in arrivals])
    p50, p90, p99 = np.percentile(lat, [50, 90, 99])
    benchmark.extra_info.update(
        releases=int(lat.size),
        p50_ms=float(p50),
        p90_ms=float(p90),
        p99_ms=float(p99),
        max_ms=float(lat.max()),
        target=f"(latency ms over {lat.size} releases: p50 {p50:.3f}, p90 {p90:.3f}, p99 {p99:.3f}, "
        f"max {lat.max():.3f}; targets p50 <= 0.5, p99 <= 2; holds by configuration: reorder "
        f"{config.reorder_window * 1000:.0f} ms + slack {config.deadline_slack * 1000:.0f} ms)",
    )
    assert released >= LATENCY_RELEASES and lat.size >= 500


CPU_SECONDS = 20.0


@pytest.mark.parametrize("rate", [120.0, 200.0, 400.0])
def test_relay_cpu_at_a_real_rate(benchmark, rate):
    capture = Capture(SendPlan(seconds=CPU_SECONDS, rate=rate, speed=1.0))
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    relay = Relay(Session(SessionConfig(chunk_length=32, seed=0), sinks=[sink]), remote=capture.remote)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    assert relay.connected.wait(10)
    time.sleep(0.5)
    expected = int(burst_stats(capture_bursts(CPU_SECONDS, rate=rate))["messages"])

    def run():
        # the main thread sleeps between looks: the process's CPU is the relay's
        cpu0, wall0 = time.process_time(), time.monotonic()
        capture.go()
        while relay.counters.received < expected and time.monotonic() - wall0 < CPU_SECONDS + 20:
            time.sleep(0.25)
        return time.process_time() - cpu0

    try:
        cpu = benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        relay.stop()
        thread.join(10)
        sink.close()
        capture.stop()
    share = 100.0 * cpu / CPU_SECONDS
    benchmark.extra_info.update(
        cpu_percent_of_a_core=share,
        target=f"(relay CPU at {rate:g} Hz: {share:.2f} % of one core per second of gaze; target <= 1 % at 200 Hz)",
    )
    assert relay.counters.received == expected and relay.counters.late == 0


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _flooded_relay(remote: str, endpoint_q, done, counters_q) -> None:
    """Child process: the relay, with an app that subscribes and never reads."""
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    app = zmq.Context.instance().socket(zmq.SUB)
    app.connect(sink.endpoint)
    app.setsockopt(zmq.SUBSCRIBE, b"")
    relay = Relay(Session(SessionConfig(chunk_length=32, seed=0), sinks=[sink]), remote=remote)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    relay.connected.wait(10)
    endpoint_q.put(os.getpid())
    done.wait(600)
    relay.stop()
    thread.join(10)
    c = relay.counters
    counters_q.put((c.received, c.shed, c.released))
    sink.close()


FLOOD_MESSAGES = 1_000_000


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads RSS from /proc")
def test_flood_keeps_memory_bounded(benchmark):
    seconds = 120.0
    per_cycle = burst_stats(capture_bursts(seconds))["messages"]
    capture = Capture(SendPlan(seconds=seconds, speed=0.0, cycles=int(np.ceil(FLOOD_MESSAGES / per_cycle))))
    pid_q, counters_q, done = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Event()
    proc = SPAWN.Process(target=_flooded_relay, args=(capture.remote, pid_q, done, counters_q))
    proc.start()
    pid = pid_q.get(timeout=60)
    time.sleep(0.5)
    before = _rss_kb(pid)
    peak = before

    def run():
        nonlocal peak
        capture.go()
        while not _sent_everything(capture):
            peak = max(peak, _rss_kb(pid))
            time.sleep(0.05)

    try:
        benchmark.pedantic(run, rounds=1, iterations=1)
        time.sleep(2.0)
        after = _rss_kb(pid)
        peak = max(peak, after)
        done.set()
        received, shed, _ = counters_q.get(timeout=60)
    finally:
        proc.join(30)
        capture.stop()
    benchmark.extra_info.update(
        rss_before_mb=before / 1024,
        rss_peak_mb=peak / 1024,
        rss_after_mb=after / 1024,
        received=received,
        shed=shed,
        target=f"(flood of {FLOOD_MESSAGES:,} messages: RSS {before / 1024:.0f} MB before, peak {peak / 1024:.0f} MB, "
        f"{after / 1024:.0f} MB after; {received:,} decoded, {shed:,} shed and counted; "
        f"targets peak <= 120 MB, after < 80 MB)",
    )
    assert peak / 1024 < 300


def _sent_everything(capture: Capture) -> bool:
    """Whether the stand-in Capture finished sending (it then only answers Pupil Remote)."""
    req = zmq.Context.instance().socket(zmq.REQ)
    req.linger = 0
    req.connect(capture.remote)
    req.send_string("done?")
    answered = req.poll(200)
    reply = req.recv_string() if answered else ""
    req.close(linger=0)
    return reply == "done"
