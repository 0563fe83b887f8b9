"""streamdp's own Pupil Remote (issue #28) under Capture's traffic (:mod:`benchmarks.capture_traffic`).

One relay, in a process of its own, reads a stand-in Capture sending 200 Hz at real time, with the
real-time gaze channel and streamdp's Pupil Remote. After a warm-up its facade is switched on and
off in alternating windows (on, off, off, on, …: a linear drift cancels): off, the facade publishes
nothing and the app hears the channel's ``streamdp.gaze.`` only; on, it builds and sends every tick
as Capture's gaze datum, which the app hears on the facade's SUB_PORT, and nobody listens to the
channel's ticks, which its publisher then neither builds nor packs (as in a deployment whose apps
all speak Capture's API). The difference of the process's CPU between on and off windows is the
facade's cost (target: within 0.3 % of a core), given with its standard error over the window
pairs; a pair with a chunk of features released in either window is left out (a chunk costs the
relay a few milliseconds, more than the effect measured; the figure over every pair is given too).
Two relays in two processes were compared before: two identical ones differed by up to 0.45 % of a
core on this 2-core machine (where each process runs, what shares its core), as much as the effect
to be measured; one process switched in time sees the same placement both ways.

The latency the facade adds to a tick is its time on the relay's thread (that thread's CPU clock, as
the gaze channel's benchmark), where the datum is built and sent (target p99 ≤ 0.5 ms), measured
in a stretch of its own after the windows: reading a thread's clock twice a tick costs CPU too.
"""

from __future__ import annotations

import os
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from benchmarks.capture_traffic import capture_bursts
from benchmarks.test_bench_gaze import wait_for_gaze
from benchmarks.test_bench_relay import SPAWN, Capture, SendPlan, burst_stats
from streamdp.config import SessionConfig
from streamdp.network.pupil_remote import StreamdpPupilRemote
from streamdp.network.relay import Relay
from streamdp.network.sink import ReleasePublisher
from streamdp.session import Session

CONFIG = SessionConfig(chunk_length=64, seed=0, gaze_channel=True)  # the relay's default: a chunk every 64 s
WARM, RATE = 10.0, 200.0
WINDOW, PAIRS = 4.0, 12  # 2 × 12 windows of 4 s: on, off, off, on, on, off, … (a window holds 8 feature steps ± 1)
SETTLE = 0.3  # seconds between the app's switch and the window
LATENCY_SECONDS = 10.0  # after the windows, the facade's time per tick
SINK_WINDOW = 5.0  # then both sinks' time on the relay's thread, on, off, off, on
SECONDS = 2 * PAIRS * (WINDOW + SETTLE) + LATENCY_SECONDS + 4 * SINK_WINDOW + 7 * SETTLE


def _relay_child(remote: str, expected: int, ready_q, out_q, switch_q, switched_q) -> None:
    """Child process: a relay as ``streamdp relay --gaze-channel --pupil-remote`` runs it, its
    facade switched on and off in alternating windows (the app told to listen to it or to the
    channel, and the window begun once it has); the process CPU of each window."""
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    session = Session(CONFIG, sinks=[sink])
    facade = StreamdpPupilRemote(
        "tcp://127.0.0.1:0", capture_remote=remote, counters=session.counters,
        publish_reproducible_noise_not_private=True,
    )  # fmt: skip
    session.sinks.append(facade)
    chunks = _ChunkCounter()
    session.sinks.append(chunks)
    publish, spent = facade.publish, []

    def timed(release) -> None:  # the facade's own time on the relay's thread (its CPU clock: as the
        start = time.thread_time()  # channel's benchmark, not the machine's other load), per tick
        publish(release)
        spent.append(time.thread_time() - start)

    def off(release) -> None:
        pass

    facade.publish = off  # type: ignore[method-assign]
    relay = Relay(session, remote=remote)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    relay.connected.wait(30)
    ready_q.put((sink.endpoint, facade.sub_port))
    wait_for_gaze(relay, WARM)
    windows: dict[str, list[tuple[float, float, int]]] = {"on": [], "off": []}
    names = {thread.native_id: "relay thread", facade._server.native_id: "facade's server thread"}
    threads: dict[str, list[dict[str, float]]] = {"on": [], "off": []}
    for i in range(2 * PAIRS):
        state = "on" if i % 4 in (0, 3) else "off"
        _switch(facade, publish if state == "on" else off, switch_q, switched_q, state)
        cpu0, wall0, chunks0, by0 = time.process_time(), time.monotonic(), chunks.count, _thread_cpu(names)
        time.sleep(WINDOW)  # the main thread asleep: the process's CPU is the relay's
        windows[state].append((time.process_time() - cpu0, time.monotonic() - wall0, chunks.count - chunks0))
        by1 = _thread_cpu(names)
        threads[state].append({k: by1[k] - by0.get(k, 0.0) for k in by1})
    # the latency apart from the CPU windows: reading the thread's clock twice a tick costs CPU too
    _switch(facade, timed, switch_q, switched_q, "on")
    time.sleep(LATENCY_SECONDS)
    # both sinks' time on the relay's thread, per release, on and off: the cost itself, without
    # the rest of the process (its noise is what the windows' standard error shows)
    sink_publish, sinks = sink.publish, {"on": [0.0, 0], "off": [0.0, 0]}
    acc = sinks["off"]

    def timed_sink(release, publish=sink_publish) -> None:
        start = time.thread_time()
        publish(release)
        acc[0] += time.thread_time() - start
        acc[1] += 1

    def timed_facade(release) -> None:
        start = time.thread_time()
        publish(release)
        acc[0] += time.thread_time() - start

    sink.publish = timed_sink  # type: ignore[method-assign]
    for state in ("on", "off", "off", "on"):
        _switch(facade, timed_facade if state == "on" else off, switch_q, switched_q, state)
        acc = sinks[state]  # the relay's thread reads the new list at its next release
        time.sleep(SINK_WINDOW)
    acc = [0.0, 0]
    sink.publish = sink_publish  # type: ignore[method-assign]
    _switch(facade, off, switch_q, switched_q, "off")
    while relay.counters.received < expected and time.monotonic() - wall0 < 120:
        time.sleep(0.1)
    relay.stop()
    thread.join(10)
    sink.close()
    facade.close()
    c = relay.counters
    out_q.put({"windows": windows, "threads": threads, "publish_ms": [x * 1e3 for x in spent], "sinks": sinks,
               "received": c.received, "expected": expected, "late": c.late, "shed": c.shed,
               "refused": c.refused})  # fmt: skip


def _thread_cpu(names: dict[int | None, str]) -> dict[str, float]:
    """CPU seconds so far of this process's threads, by what they are (the scheduler's own count,
    in ns: /proc/self/task/*/schedstat; ZeroMQ names its threads ZMQbg/…)."""
    out: dict[str, float] = {}
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/schedstat") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/self/task/{task}/comm") as f:
                comm = f.read().strip()
        except OSError:  # a thread that ended
            continue
        kind = names.get(int(task)) or ("ZeroMQ's I/O threads" if comm.startswith("ZMQbg") else "other threads")
        out[kind] = out.get(kind, 0.0) + ns / 1e9
    return out


class _ChunkCounter:
    """A sink that counts the chunks of features released (each costs the relay milliseconds: a
    window holding one says more about the chunk than about the facade)."""

    accepts_gaze = False

    def __init__(self) -> None:
        self.count = 0

    def publish(self, release) -> None:
        self.count += 1

    def publish_status(self, status) -> None:
        pass


def _switch(facade: StreamdpPupilRemote, publish, switch_q, switched_q, state: str) -> None:
    """The facade's publish set to ``publish`` and the app listening where ``state`` says."""
    facade.publish = publish  # type: ignore[method-assign]
    switch_q.put(state)
    switched_q.get(timeout=30)
    time.sleep(SETTLE)  # the app's changed subscription reaches both sockets


def _app(endpoints: dict[str, tuple[str, bytes]], stop: threading.Event, ticks: dict[str, list[float]],
         switch_q, switched_q) -> None:  # fmt: skip
    """The app: the channel's ticks as ``streamdp.gaze`` messages while the facade is off, Capture's
    gaze datums from the facade while it is on (switched when the relay says)."""
    ctx = zmq.Context.instance()
    poller, socks, roles = zmq.Poller(), {}, {}
    for role, (endpoint, _) in endpoints.items():
        sock = ctx.socket(zmq.SUB)
        sock.linger = 0
        sock.rcvhwm = 0
        sock.connect(endpoint)
        poller.register(sock, zmq.POLLIN)
        socks[sock], roles[role] = role, sock
    state = "off"
    roles["channel"].setsockopt(zmq.SUBSCRIBE, endpoints["channel"][1])
    while not stop.is_set():
        if not switch_q.empty():
            new = switch_q.get()
            if new != state:
                listen, leave = ("facade", "channel") if new == "on" else ("channel", "facade")
                roles[leave].setsockopt(zmq.UNSUBSCRIBE, endpoints[leave][1])
                roles[listen].setsockopt(zmq.SUBSCRIBE, endpoints[listen][1])
                state = new
            switched_q.put(state)
        for sock, _ in poller.poll(50):
            payload = msgpack.unpackb(sock.recv_multipart()[1], raw=False)
            ticks[socks[sock]].append(payload["timestamp"] if "timestamp" in payload else payload["t"][0])
    for sock in socks:
        sock.close(linger=0)


@pytest.fixture(scope="module")
def measured() -> dict:
    total = WARM + SECONDS + 8.0
    capture = Capture(SendPlan(seconds=total, rate=RATE, speed=1.0))
    expected = int(burst_stats(capture_bursts(total, rate=RATE))["messages"])
    ready_q, out_q, switch_q, switched_q = SPAWN.Queue(), SPAWN.Queue(), SPAWN.Queue(), SPAWN.Queue()
    child = SPAWN.Process(target=_relay_child, args=(capture.remote, expected, ready_q, out_q, switch_q, switched_q))
    stop = threading.Event()
    ticks: dict[str, list[float]] = {"channel": [], "facade": []}
    try:
        child.start()
        endpoint, sub_port = ready_q.get(timeout=120)
        endpoints = {"channel": (endpoint, b"streamdp.gaze."), "facade": (f"tcp://127.0.0.1:{sub_port}", b"gaze.3d")}
        app = threading.Thread(target=_app, args=(endpoints, stop, ticks, switch_q, switched_q), daemon=True)
        app.start()
        time.sleep(1.0)  # the app's subscriptions reach the relay
        capture.go()
        result = out_q.get(timeout=total + 240)
        child.join(30)
    finally:
        stop.set()
        capture.stop()
        if child.is_alive():
            child.kill()
    share = {state: [100.0 * cpu / wall for cpu, wall, _ in w] for state, w in result["windows"].items()}
    # the pairs in time order (on, off), (off, on), …: each pair's difference, then their mean and
    # spread; a pair with a chunk of features released in either window is left out (a chunk costs
    # the relay a few ms, 0.1–0.5 % of a core in a 2 s window: more than the facade's whole cost)
    quiet = [i for i in range(PAIRS) if not (result["windows"]["on"][i][2] or result["windows"]["off"][i][2])]
    pairs = np.array([share["on"][i] - share["off"][i] for i in quiet])
    every = np.array([share["on"][i] - share["off"][i] for i in range(PAIRS)])
    return {**result, "share": share, "pairs": pairs, "every_pair": every,
            "ticks": {role: len(t) for role, t in ticks.items()},
            "publish_ms": np.array(result["publish_ms"])}  # fmt: skip


@pytest.mark.parametrize("role", ["channel", "facade"])
def test_relay_cpu_with_the_facade_and_with_the_channel_alone(benchmark, role, measured):
    benchmark.group = f"relay CPU at {RATE:g} Hz real time: gaze channel alone / with streamdp's Pupil Remote"
    state = {"channel": "off", "facade": "on"}[role]
    windows = benchmark.pedantic(lambda: measured["windows"][state], rounds=1, iterations=1)
    cpu_s, seconds, _ = (float(sum(x)) for x in zip(*windows, strict=True))
    # the summary's roles: the channel alone is the baseline, the facade the candidate
    benchmark.extra_info.update(role={"channel": "baseline", "facade": "candidate"}[role], cpu_s=cpu_s,
                                cpu_percent_of_a_core=100.0 * cpu_s / seconds)  # fmt: skip
    assert measured["received"] == measured["expected"]
    assert measured["late"] == measured["shed"] == measured["refused"] == 0
    # the app heard the channel through the warm-up and its windows, the facade through its own
    assert measured["ticks"]["channel"] >= 0.99 * (WARM + PAIRS * WINDOW) * CONFIG.gaze_rate
    assert measured["ticks"]["facade"] >= 0.99 * (PAIRS * WINDOW + LATENCY_SECONDS) * CONFIG.gaze_rate
    if role == "facade":
        pairs = measured["pairs"]
        assert len(pairs) >= PAIRS - 3  # a chunk every 64 s touches at most 2 of the 12 pairs
        mean, error = float(pairs.mean()), float(pairs.std(ddof=1) / np.sqrt(len(pairs)))
        every = measured["every_pair"]
        on, off = (float(np.mean(measured["share"][k])) for k in ("on", "off"))
        # both sinks' time per release on the relay's thread, on minus off, at the releases' rate
        (t_on, n_on), (t_off, n_off) = measured["sinks"]["on"], measured["sinks"]["off"]
        sinks_difference = 100.0 * (t_on / n_on - t_off / n_off) * n_off / (2 * SINK_WINDOW)
        by_thread = {}
        for kind in sorted({k for w in measured["threads"]["on"] + measured["threads"]["off"] for k in w}):
            diffs = np.array([
                (measured["threads"]["on"][i].get(kind, 0.0) - measured["threads"]["off"][i].get(kind, 0.0)) / WINDOW
                for i in range(PAIRS)
            ]) * 100.0  # fmt: skip
            by_thread[kind] = f"{diffs.mean():+.3f} ± {diffs.std(ddof=1) / np.sqrt(PAIRS):.3f}"
        benchmark.extra_info.update(
            difference_by_thread_percent_of_a_core=by_thread,
            difference_percent_of_a_core=mean, standard_error=error, pairs=pairs.tolist(),
            every_pair_mean=float(every.mean()), every_pair_error=float(every.std(ddof=1) / np.sqrt(len(every))),
            sinks_us_per_release={k: 1e6 * t / max(n, 1) for k, (t, n) in measured["sinks"].items()},
            sinks_difference_percent_of_a_core=sinks_difference,
            target=f"(one relay at {RATE:g} Hz, {len(pairs)} of {PAIRS} pairs of {WINDOW:g} s windows (those without "
            f"a chunk release) after a {WARM:g} s warm-up: the gaze channel alone {off:.2f} % of one core, with "
            f"streamdp's Pupil Remote {on:.2f} %, difference {mean:+.2f} ± {error:.2f} % of a core (mean ± standard "
            f"error over the pairs; all {PAIRS} pairs {every.mean():+.2f} ± {every.std(ddof=1) / np.sqrt(PAIRS):.2f}; "
            f"both sinks on the relay's thread {1e6 * t_on / n_on:.1f} µs a release with the facade, "
            f"{1e6 * t_off / n_off:.1f} µs without: {sinks_difference:+.3f} % of a core; target <= 0.3))",
        )  # fmt: skip


def test_added_latency_of_the_facade_per_tick(benchmark, measured):
    """The latency the facade adds to a tick: its time on the relay's thread, where the datum is
    built and sent on a socket of its own (no hop between threads)."""
    benchmark.group = "streamdp's Pupil Remote: added latency per tick"
    spent = benchmark.pedantic(lambda: measured["publish_ms"], rounds=1, iterations=1)
    assert len(spent) >= 0.99 * LATENCY_SECONDS * CONFIG.gaze_rate  # every tick of the stretch
    p50, p99, worst = np.percentile(spent, [50, 99, 100])
    benchmark.extra_info.update(
        ticks=len(spent), p50_ms=p50, p99_ms=p99, max_ms=worst,
        target=f"(per tick, the facade's time on the relay's thread (its CPU clock) over {len(spent)} ticks: "
        f"p50 {p50:.3f}, p99 {p99:.3f}, max {worst:.3f} ms; target p99 <= 0.5 ms)",
    )  # fmt: skip
