"""An app moves Capture's clock through streamdp's Pupil Remote (issue #38), as hmd-eyes does to
sync its own clock: ``T <now − 1000>``, then ``T <now + 12>``, then ``T soon``. The relay runs
the gaze channel with a durable ledger, on the simulated Capture at real time.

- Every tick published is charged: the ``<identity>#gaze`` ledger holds at least ε per tick ×
  the ticks the app received, at most two blocks more (ticks sealed, then dropped unpublished at
  the jump or the stop); before, the clock gone back published ~600 ticks for a charge of 20.
- No tick time repeats or goes back on a topic (``streamdp.gaze.*`` and the facade's
  ``gaze.3d.01.``) except once, at the jump back (a new segment); no tick covers the 12 s skipped.

The test waits on what arrives (ticks, the status line of each jump), never for a fixed time.
- Each jump is one status message (``clock_jumped``); ``T soon`` gets Capture's own answer.
"""

from __future__ import annotations

import math
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.network.pupil_remote import StreamdpPupilRemote
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.network.sink import ReleasePublisher, StatusPublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.privacy.ledger_store import LedgerStore
from streamdp.session import Session
from streamdp.synthetic import generate

from .live_harness import LOSSLESS, ask_remote

SECONDS = 14.0


#: told whenever a reader appends what it received: the test waits on what arrived, not on time
ARRIVED = threading.Condition()


def _drain(sub: zmq.Socket, stop: threading.Event, out: list[tuple[float, list[bytes]]]) -> None:
    while not stop.is_set():
        if sub.poll(100):
            frames = sub.recv_multipart()
            with ARRIVED:
                out.append((time.monotonic(), frames))
                ARRIVED.notify_all()


def _until(what: str, done, timeout: float = 60.0) -> None:
    with ARRIVED:
        assert ARRIVED.wait_for(done, timeout), f"waited {timeout:g} s for {what}"


def _jumps(got: dict) -> int:
    return sum(msgpack.unpackb(f[1][-1], raw=False).get("event") == "clock_jumped" for f in got["status"])


@pytest.fixture(scope="module")
def events(tmp_path_factory) -> dict:
    ledgers = tmp_path_factory.mktemp("ledgers")
    config = SessionConfig(
        chunk_length=16, gaze_channel=True, unit="session", budget=1e6, identity="alice@headset1",
        ledger_dir=str(ledgers),
    )
    recording = generate(duration=SECONDS, seed=5).recording
    sim = CaptureSimulator(recording, speed=1.0, **LOSSLESS)
    sim.start()
    sanitized = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=100_000, publish_reproducible_noise_not_private=True)
    status = StatusPublisher("tcp://127.0.0.1:0")
    facade = StreamdpPupilRemote(
        "tcp://127.0.0.1:0", capture_remote=sim.remote_address, publish_reproducible_noise_not_private=True
    )
    app = zmq.Context.instance().socket(zmq.SUB)
    app.linger, app.rcvhwm = 0, 0
    app.connect(f"tcp://127.0.0.1:{facade.sub_port}")
    app.setsockopt(zmq.SUBSCRIBE, b"gaze.")
    ticks = connect_subscriber(sanitized.endpoint, ("streamdp.gaze",))
    statuses = connect_subscriber(status.endpoint, ("",))
    assert sanitized.wait_for_subscribers(1, timeout=5.0)
    session = Session(config, sinks=[sanitized, facade, status], seed=0)
    facade.counters = session.counters
    relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.5)
    stop = threading.Event()
    got: dict[str, list] = {"app": [], "ticks": [], "status": []}
    readers = [
        threading.Thread(target=_drain, args=(s, stop, got[k]), daemon=True)
        for k, s in (("app", app), ("ticks", ticks), ("status", statuses))
    ]
    for r in readers:
        r.start()
    thread = threading.Thread(target=relay.run, daemon=True)
    thread.start()
    answers, skipped = [], []
    try:
        assert relay.connected.wait(10)
        for jumps, move in enumerate((-1000.0, 12.0, None)):
            mark = len(got["ticks"])  # two seconds of ticks on the clock as it stands, however slow the machine
            _until("ticks before the next move", lambda mark=mark: len(got["ticks"]) >= mark + 2 * config.gaze_rate)
            remote = facade.address
            if move is None:
                answers.append(ask_remote(remote, "T soon"))
                continue
            now = float(ask_remote(remote, "t"))
            answers.append(ask_remote(remote, f"T {now + move!r}"))
            skipped.append((now, now + move))
            _until("the jump's status line", lambda jumps=jumps: _jumps(got) > jumps)
        assert sim.finished.wait(SECONDS + 60)
    finally:
        relay.stop()
        thread.join(10)
        with ARRIVED:  # what the stopped relay published last reaches the readers: until none comes for 0.5 s
            for _ in range(20):
                if not ARRIVED.wait(0.5):
                    break
        stop.set()
        for r in readers:
            r.join(5)
        sim.stop()
        for s in (app, ticks, statuses):
            s.close(linger=0)
        facade.close()
        sanitized.close()
        status.close()
    state = LedgerStore("alice@headset1#gaze", folder=ledgers).read()
    mech = config.gaze_mechanism_instance()
    return {**got, "answers": answers, "skipped": skipped, "ledger": state, "mechanism": mech, "config": config}


def _times(frames: list, key: str) -> np.ndarray:
    return np.array([msgpack.unpackb(f[1][1], raw=False)[key] for f in frames], dtype=float).ravel()


def test_an_app_moving_the_clock_is_answered_as_capture_answers(events):
    assert events["answers"][:2] == ["Timesync successful."] * 2
    assert events["answers"][2] == "'soon' cannot be converted to float."


@pytest.mark.parametrize(("stream", "key"), [("ticks", "t"), ("app", "timestamp")])
def test_no_tick_time_repeats_or_goes_back_but_at_the_jump_back_and_no_burst(events, stream, key):
    t = _times(events[stream], key)
    steps = np.diff(t)
    assert len(t) > 4 * events["config"].gaze_rate  # ticks before, between and after the moves
    assert np.count_nonzero(steps <= 0) == 1 and steps.min() < -900  # the jump back, once; no repeat
    old, new = events["skipped"][1]  # the jump ahead: no tick covers the 12 s skipped (the old code
    # published 737-826 of them in a burst), beyond the old clock's last second before the jump was seen
    assert not np.any((t > old + 1.5) & (t < new - 0.5))


def test_every_tick_received_was_charged(events):
    mech, config = events["mechanism"], events["config"]
    n = len(events["ticks"])
    block = round(config.gaze_rate)
    bound = min(block * mech.epsilon_tick_max, math.ceil(block / mech.w) * mech.epsilon)
    spent = events["ledger"].epsilon_spent
    assert spent >= n * mech.epsilon_tick_max - 1e-9
    assert spent <= (math.ceil(n / block) + 2) * bound + 1e-9
    last = msgpack.unpackb(events["ticks"][-1][1][1], raw=False)["ledger"]["epsilon_charged_per_degree"]
    assert last <= spent + 1e-9 and last >= n * mech.epsilon_tick_max - 1e-9


def test_each_jump_is_one_status_line(events):
    assert _jumps(events) == 2
