"""The live path assembled on loopback for tests: simulated Capture → relay → subscriber."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import zmq

from streamdp.config import SessionConfig
from streamdp.gaze import Recording
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.session import Session


@contextmanager
def live(
    recording: Recording, config: SessionConfig, *, seed: int | None = None, **sim_kwargs
) -> Iterator[tuple[CaptureSimulator, Relay, zmq.Socket]]:
    """Simulator, a relay (its session publishing on a loopback socket) in a thread, and a raw
    subscriber on everything the relay publishes."""
    sink = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=100_000)
    sub = connect_subscriber(sink.endpoint, ("",))
    assert sink.wait_for_subscribers(1, timeout=5.0)
    sim = CaptureSimulator(recording, speed=sim_kwargs.pop("speed", 0.0), **sim_kwargs)
    sim.start()
    session = Session(config, sinks=[sink], seed=seed, source=f"Capture at {sim.remote_address}")
    relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.3)
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        yield sim, relay, sub
    finally:
        relay.stop()
        th.join(5)
        sim.stop()
        sub.close(linger=0)
        sink.close()
