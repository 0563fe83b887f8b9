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
from streamdp.network.sink import ReleasePublisher, StatusPublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.session import Session
from streamdp.sinks import ReleaseSink

#: what a test comparing the relay with an offline run needs from the simulator: every datum
#: (unlimited high-water mark) from the first on (no slow-joiner loss); Capture gives neither
LOSSLESS = {"wait_for_subscriber": True, "hwm": 0}


def ask_remote(address: str, command: str, *, timeout_ms: int = 3000) -> str:
    """Pupil Remote's answer to one command, on a REQ socket of its own (linger 0, a poll with a timeout)."""
    req = zmq.Context.instance().socket(zmq.REQ)
    req.linger = 0
    req.connect(address)
    try:
        req.send_string(command)
        assert req.poll(timeout_ms), f"Pupil Remote did not answer {command!r}"
        return req.recv_string()
    finally:
        req.close()


@contextmanager
def live(
    recording: Recording, config: SessionConfig, *, seed: int | None = None, status: bool = False, **sim_kwargs
) -> Iterator[tuple[CaptureSimulator, Relay, zmq.Socket]]:
    """Simulator (lossless unless ``sim_kwargs`` say otherwise), a relay (its session publishing
    on a loopback socket) in a thread, and a raw subscriber on everything the relay publishes on
    its sanitized socket; with ``status``, also on the owner's status socket."""
    sink = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=100_000, publish_reproducible_noise_not_private=True)
    owner = StatusPublisher("tcp://127.0.0.1:0") if status else None
    sub = connect_subscriber(sink.endpoint, ("",))
    if owner is not None:
        sub.connect(owner.endpoint)
    assert sink.wait_for_subscribers(1, timeout=5.0)
    sim = CaptureSimulator(recording, **{"speed": 0.0, **LOSSLESS, **sim_kwargs})
    sim.start()
    sinks: list[ReleaseSink] = [sink] if owner is None else [sink, owner]
    session = Session(config, sinks=sinks, seed=seed, source=f"Capture at {sim.remote_address}")
    # flat out, far faster than a Capture: an input queue for the whole stream (lossless)
    relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.3, max_backlog=3600.0)
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
        if owner is not None:
            owner.close()
