"""The real-time gaze channel (issue #20) under Capture's traffic (:mod:`benchmarks.capture_traffic`).

- Per tick: a live session with the channel (the relay's pacing, the relay's publisher) is handed
  120 s of 200 Hz Capture bursts (~30 Hz world frames of ~7 datums of ~1.3 kB, monocular gaze up to
  90 ms late) burst by burst, as the relay does when it reads every burst; each
  ``receive_frames`` call that releases ticks is timed, and divided by the ticks it released
  (p50/p99 per tick; target p99 <= 1 ms). Times are the thread's CPU time
  (``time.thread_time_ns``), so that another process taking the core (a shared 2-core CI
  machine) does not land in the tail. Beside it, on the same bursts in the same loop: the
  same call of a session without the channel (the difference is what the channel costs the
  call) and the time spent inside the channel itself (ticks, noise, sealing, publishing).
- Relay CPU: two relays in processes of their own (``Relay.run``, the CLI's publisher, an app
  reading each) read one stand-in Capture sending 200 Hz at real time, one with the channel and
  one without, measured over the same stretch: process CPU seconds per second over
  ``CPU_SECONDS`` of steady state after ``CPU_WARM_SECONDS`` (shorter than
  ``test_relay_cpu_at_a_real_rate``'s 40 s + 40 s, to keep this benchmark near a minute);
  the summary prints off / on, the target line the difference in % of one core. The target
  (issue #38) is at most twice the floor of waking at the tick rate measured in the same run:
  ``test_the_floor_of_waking_at_the_tick_rate`` prints the ratio.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import zmq

from benchmarks.capture_traffic import capture_bursts
from benchmarks.test_bench_relay import SPAWN, Capture, SendPlan, burst_stats
from streamdp.config import SessionConfig
from streamdp.live_pacing import FeedPacing
from streamdp.network.relay import Relay
from streamdp.network.sink import ReleasePublisher
from streamdp.session import Session

CONFIG = SessionConfig(chunk_length=32, seed=0)
GAZE = SessionConfig(chunk_length=32, seed=0, gaze_channel=True)
TICK_SECONDS, WARM = 120.0, 35.0  # the first window fills before the calls are counted


class _TickCount:
    """A sink counting the ticks it is handed (beside the publisher)."""

    accepts_gaze = True

    def __init__(self) -> None:
        self.ticks = 0
        #: the thread's CPU clock at each tick's hand-off
        self.handed: list[int] = []

    def publish(self, release) -> None:
        if release.ledger.get("channel") == "gaze":
            self.ticks += 1
            self.handed.append(time.thread_time_ns())

    def publish_status(self, status) -> None:
        pass

    def close(self) -> None:
        pass


def _time_the_channel(session: Session) -> list[int]:
    """Wrap the channel's entry points and the ticks' publishing: nanoseconds spent in them,
    accumulated in the returned one-element list."""
    spent = [0]
    gaze = session.gaze
    assert gaze is not None
    pc = time.thread_time_ns

    def timed(fn):
        def wrapper(*args):
            t0 = pc()
            try:
                return fn(*args)
            finally:
                spent[0] += pc() - t0

        return wrapper

    for name in ("update", "advance", "due"):
        setattr(gaze, name, timed(getattr(gaze, name)))
    session._publish_gaze = timed(session._publish_gaze)  # type: ignore[method-assign]
    return spent


def _pct(a: np.ndarray) -> dict[str, float]:
    p50, p99 = np.percentile(a, [50, 99])
    return {"p50": float(p50), "p99": float(p99), "max": float(a.max())}


def test_per_tick_processing_on_capture_bursts(benchmark):
    bursts = capture_bursts(TICK_SECONDS, rate=200.0, seed=3)
    publishers = [ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True) for _ in (0, 1)]
    count = _TickCount()
    on = Session(GAZE, sinks=[publishers[0], count], pacing=FeedPacing())
    off = Session(CONFIG, sinks=[publishers[1]], pacing=FeedPacing())
    inside = _time_the_channel(on)
    pc = time.thread_time_ns

    latency: list[tuple[float, int]] = []  # per tick: its call's burst time, ns from the call's start to its hand-off

    def run() -> np.ndarray:
        rows = []
        for at, burst in bursts:
            ticks, chan = count.ticks, inside[0]
            t0 = pc()
            on.receive_frames(burst)
            t1 = pc()
            off.receive_frames(burst)
            t2 = pc()
            rows.append((at, t1 - t0, t2 - t1, count.ticks - ticks, inside[0] - chan))
            latency.extend((at, handed - t0) for handed in count.handed[ticks:])
        return np.array(rows)

    try:
        rows = benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        for p in publishers:
            p.close()
    steady = rows[:, 0] >= rows[0, 0] + WARM
    releasing = steady & (rows[:, 3] > 0)
    ticks = rows[releasing, 3]
    per_tick = _pct(rows[releasing, 1] / ticks / 1e6)
    marginal = _pct((rows[releasing, 1] - rows[releasing, 2]) / ticks / 1e6)
    channel = _pct(rows[releasing, 4] / ticks / 1e6)
    off_call, on_call = _pct(rows[releasing, 2] / 1e6), _pct(rows[releasing, 1] / 1e6)
    span = rows[steady, 0][-1] - rows[steady, 0][0]
    lat = np.array(latency)
    handoff = _pct(lat[lat[:, 0] >= rows[0, 0] + WARM, 1] / 1e6)
    fmt = "p50 {p50:.3f}, p99 {p99:.3f}, max {max:.3f}".format
    benchmark.extra_info.update(
        calls=int(releasing.sum()),
        ticks=int(ticks.sum()),
        ticks_per_call_mean=float(ticks.mean()),
        **{f"tick_handoff_{k}_ms": v for k, v in handoff.items()},
        **{f"per_tick_{k}_ms": v for k, v in per_tick.items()},
        **{f"over_no_channel_per_tick_{k}_ms": v for k, v in marginal.items()},
        **{f"in_channel_per_tick_{k}_ms": v for k, v in channel.items()},
        **{f"call_without_channel_{k}_ms": v for k, v in off_call.items()},
        **{f"call_with_channel_{k}_ms": v for k, v in on_call.items()},
        target=f"(per tick, from the start of the receive_frames call that releases it to its hand-off to the "
        f"sinks, {int(ticks.sum())} ticks in {int(releasing.sum())} calls: {fmt(**handoff)} ms; target p99 <= 1 ms. "
        f"The whole call over its ticks: {fmt(**per_tick)} ms. Over the same call without "
        f"the channel (its stages paced): {fmt(**marginal)} ms; inside the channel: {fmt(**channel)} ms. Calls: "
        f"without the channel {fmt(**off_call)} ms, with it {fmt(**on_call)} ms)",
    )
    # every tick of the steady stretch went out, one per 1/60 s of gaze (± the stretch's ends)
    assert abs(ticks.sum() - span * GAZE.gaze_rate) <= 3


# -- relay CPU with and without the channel, measured side by side

CPU_WARM_SECONDS, CPU_SECONDS = 10.0, 20.0
CPU_RATE = 200.0


def wait_for_gaze(relay: Relay, warm: float) -> float:
    """Until ``warm`` seconds of gaze (the source's clock) have reached ``relay``; the monotonic
    time the wait began."""

    def newest() -> float:
        t = relay.session.newest_gaze
        return -np.inf if t is None else t

    wall = time.monotonic()
    while newest() == -np.inf and time.monotonic() - wall < 120:
        time.sleep(0.05)
    start = newest()
    while newest() < start + warm and time.monotonic() - wall < warm + 120:
        time.sleep(0.25)
    return wall


def steady_cpu(relay: Relay, warm: float, seconds: float, expected: int, on_steady=lambda: None) -> dict:
    """The relay's process CPU over ``seconds`` of steady state, after ``warm`` seconds of gaze
    (``on_steady`` is called as the stretch starts); then waits for all ``expected`` messages and
    stops the relay. Called in the relay's own process, whose main thread sleeps meanwhile."""
    wall = wait_for_gaze(relay, warm)
    on_steady()
    received = relay.counters.received
    cpu0, wall0 = time.process_time(), time.monotonic()
    time.sleep(seconds)  # the main thread asleep: the process's CPU is the relay's
    cpu, seconds = time.process_time() - cpu0, time.monotonic() - wall0
    received = relay.counters.received - received
    while relay.counters.received < expected and time.monotonic() - wall < warm + seconds + 120:
        time.sleep(0.1)
    relay.stop()
    c = relay.counters
    return {"cpu_s": cpu, "seconds": seconds, "received_in_stretch": received, "received": c.received,
            "expected": expected, "late": c.late, "shed": c.shed, "refused": c.refused}  # fmt: skip


def _relay_child(remote: str, role: str, expected: int, warm: float, seconds: float, ready_q, out_q) -> None:
    """Child process: the relay as ``streamdp relay`` runs it (its session without the channel:
    ``baseline``, with it: ``candidate``; the CLI's publisher); its process CPU over
    ``seconds`` of steady state after ``warm`` seconds of gaze."""
    config = GAZE if role == "candidate" else CONFIG
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    relay = Relay(Session(config, sinks=[sink]), remote=remote)
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    relay.connected.wait(30)
    ready_q.put(sink.endpoint)
    figures = steady_cpu(relay, warm, seconds, expected)
    thread.join(10)
    sink.close()
    out_q.put({"role": role, **figures})


def _read_all(endpoints: list[str], stop: threading.Event, counts: dict[str, int]) -> None:
    """The apps: read everything each relay publishes (chunks and ticks)."""
    ctx = zmq.Context.instance()
    poller, socks = zmq.Poller(), []
    for endpoint in endpoints:
        sub = ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.connect(endpoint)
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        poller.register(sub, zmq.POLLIN)
        socks.append(sub)
    while not stop.is_set():
        for sub, _ in poller.poll(200):
            topic = sub.recv_multipart()[0].decode()
            counts[topic.rsplit(".", 1)[0]] = counts.get(topic.rsplit(".", 1)[0], 0) + 1
    for sub in socks:
        sub.close(linger=0)


def _cpu_percent(run: dict) -> float:
    """A relay's process CPU over its measured stretch, in % of one core."""
    return 100.0 * run["cpu_s"] / run["seconds"]


@pytest.fixture(scope="module")
def cpu_side_by_side() -> dict[str, dict]:
    return side_by_side(CPU_WARM_SECONDS, CPU_SECONDS)


def side_by_side(warm: float, seconds: float) -> dict[str, dict]:
    """Both relays on one stand-in Capture at real time, over the same stretch; per role its
    figures, and what the apps received from both (``streamdp.features`` / ``streamdp.gaze``)."""
    total = warm + seconds + 3.0
    capture = Capture(SendPlan(seconds=total, rate=CPU_RATE, speed=1.0))
    expected = int(burst_stats(capture_bursts(total, rate=CPU_RATE))["messages"])
    ready_q, out_q = SPAWN.Queue(), SPAWN.Queue()
    children = [
        SPAWN.Process(target=_relay_child, args=(capture.remote, role, expected, warm, seconds, ready_q, out_q))
        for role in ("baseline", "candidate")
    ]
    stop, counts = threading.Event(), {}
    try:
        for child in children:
            child.start()
        endpoints = [ready_q.get(timeout=120) for _ in children]
        reader = threading.Thread(target=_read_all, args=(endpoints, stop, counts), daemon=True)
        reader.start()
        time.sleep(1.0)  # the apps' subscriptions reach the relays
        capture.go()
        results = [out_q.get(timeout=total + 240) for _ in children]
        for child in children:
            child.join(30)
    finally:
        stop.set()
        capture.stop()
        for child in children:
            if child.is_alive():
                child.kill()
    return {r["role"]: {**r, "apps_received": dict(counts)} for r in results}


@pytest.mark.parametrize("role", ["baseline", "candidate"])
def test_relay_cpu_with_and_without_the_gaze_channel(benchmark, role, cpu_side_by_side):
    benchmark.group = f"relay CPU at {CPU_RATE:g} Hz real time: without / with the gaze channel"
    benchmark.extra_info["role"] = role
    mine = benchmark.pedantic(lambda: cpu_side_by_side[role], rounds=1, iterations=1)
    share = _cpu_percent(mine)
    benchmark.extra_info.update(cpu_s=mine["cpu_s"], seconds=mine["seconds"], cpu_percent_of_a_core=share,
                                received_in_stretch=mine["received_in_stretch"])  # fmt: skip
    assert mine["received"] == mine["expected"] and mine["late"] == mine["shed"] == 0
    if role == "candidate":
        base = cpu_side_by_side["baseline"]
        base_share = _cpu_percent(base)
        apps = mine["apps_received"]
        benchmark.extra_info.update(
            difference_percent_of_a_core=share - base_share,
            ticks_received_by_the_app=apps.get("streamdp.gaze", 0),
            target=f"(relay CPU at {CPU_RATE:g} Hz over {mine['seconds']:.0f} s after a {CPU_WARM_SECONDS:g} s "
            f"warm-up, both relays on one Capture at once: without the channel {base_share:.2f} % of one core, "
            f"with it {share:.2f} %, difference {share - base_share:+.2f} % of a core (target: at most twice the "
            "floor of this run, test_the_floor_of_waking_at_the_tick_rate); the app "
            f"received {apps.get('streamdp.gaze', 0)} ticks and {apps.get('streamdp.features', 0)} chunks)",
        )
        # the channel ran: 60 ticks a second reached the app through the whole stream
        assert apps.get("streamdp.gaze", 0) >= GAZE.gaze_rate * (CPU_WARM_SECONDS + CPU_SECONDS)


# -- the floor: what waking at the tick rate costs any publisher on this machine

FLOOR_SECONDS = 10.0


def _waking_publisher(rate: float, ready_q, out_q) -> None:
    """Child process: nothing but a loop that sleeps in a ZeroMQ poll until the next tick of a
    ``rate`` Hz grid and publishes 200 bytes to an app; its process CPU over ``FLOOR_SECONDS``."""
    ctx = zmq.Context()
    pub = ctx.socket(zmq.PUB)
    pub.linger = 0
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    idle = ctx.socket(zmq.SUB)  # polled for its timeout only, as the relay polls its input
    idle.linger = 0
    idle.connect("tcp://127.0.0.1:9")
    ready_q.put(port)
    time.sleep(1.0)  # the app's subscription arrives
    payload = b"x" * 200
    cpu0 = time.process_time()
    start = next_at = time.monotonic()
    while time.monotonic() - start < FLOOR_SECONDS:
        next_at += 1.0 / rate
        idle.poll(max(0, int((next_at - time.monotonic()) * 1000)))
        pub.send_multipart([b"floor", payload])
    out_q.put((rate, time.process_time() - cpu0, time.monotonic() - start))
    pub.close(linger=0)
    idle.close(linger=0)
    ctx.term()


def test_the_floor_of_waking_at_the_tick_rate(benchmark, cpu_side_by_side):
    """The relay without the channel wakes about 4 times a second (its read interval); with it, at
    least once a tick. A process that only wakes and sends 200 bytes at 60 Hz, against one at 4 Hz,
    shows what that alone costs on this machine: the part of the channel's difference no code of
    streamdp's can remove while each tick goes out within its input frame. The channel's target
    (issue #38) is at most twice this floor, in the same run: the relays' difference
    (``cpu_side_by_side``, measured once a run; on its own this test measures it first) over it."""
    benchmark.group = "the floor: a publisher that only wakes and sends, 4 Hz and 60 Hz"
    ready_q, out_q = SPAWN.Queue(), SPAWN.Queue()
    rates = (4.0, GAZE.gaze_rate)
    children = [SPAWN.Process(target=_waking_publisher, args=(r, ready_q, out_q)) for r in rates]
    app = zmq.Context.instance().socket(zmq.SUB)
    app.linger = 0
    app.setsockopt(zmq.SUBSCRIBE, b"")
    try:
        for child in children:
            child.start()
        for _ in children:
            app.connect(f"tcp://127.0.0.1:{ready_q.get(timeout=60)}")
        received, results = 0, {}
        deadline = time.monotonic() + FLOOR_SECONDS + 60
        while len(results) < len(rates) and time.monotonic() < deadline:
            while app.poll(100):
                app.recv_multipart()
                received += 1
            while not out_q.empty():
                rate, cpu, seconds = out_q.get()
                results[rate] = 100.0 * cpu / seconds
        for child in children:
            child.join(30)
    finally:
        app.close(linger=0)
        for child in children:
            if child.is_alive():
                child.kill()
    shares = benchmark.pedantic(lambda: results, rounds=1, iterations=1)
    assert set(shares) == set(rates) and received >= 0.9 * FLOOR_SECONDS * sum(rates)
    floor = shares[GAZE.gaze_rate] - shares[4.0]
    with_channel, without = (_cpu_percent(cpu_side_by_side[r]) for r in ("candidate", "baseline"))
    ratio = (with_channel - without) / floor if floor > 0 else float("inf")  # a floor lost in the noise
    benchmark.extra_info.update(
        cpu_percent_at_4_hz=shares[4.0], cpu_percent_at_tick_rate=shares[GAZE.gaze_rate], floor_percent=floor,
        channel_difference_percent=with_channel - without, channel_over_floor=ratio,
        target=f"(a process that only wakes in a ZeroMQ poll and sends 200 bytes: {shares[4.0]:.2f} % of a core at "
        f"4 Hz, {shares[GAZE.gaze_rate]:.2f} % at {GAZE.gaze_rate:g} Hz: {floor:+.2f} % of a core for waking at "
        "the tick rate alone; the relay's difference with the gaze channel in this run "
        f"{with_channel - without:+.2f} % of a core, {ratio:.1f}x this floor (target <= 2x))",
    )  # fmt: skip
