"""``streamdp demo``: the main job end to end on synthetic gaze, no headset.

Networked (default): a simulated Pupil Capture plays the gaze over its real Network API, a
relay's session sanitizes it and publishes on loopback, and a subscriber prints each chunk.
``--offline``: the same session runs in-process on the recording and prints each release.
"""

from __future__ import annotations

import argparse
import sys

from ..config import SessionConfig
from ..errors import StreamdpError
from ..gaze import Recording
from ..session import Session
from .format import PrintingSink, format_chunk, format_status
from .options import add_config_options, config_from


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "demo",
        help="simulated Capture → relay → subscriber on loopback: sanitized chunks and their ledger",
    )
    p.add_argument("--seconds", type=float, default=150.0, help="length of the synthetic gaze (default %(default)s)")
    p.add_argument("--speed", type=float, default=0.0, help="playback speed, 0 = as fast as possible (default)")
    p.add_argument("--offline", action="store_true", help="run the session in-process, without sockets")
    add_config_options(p, ["privacy", "features", "live"])
    p.set_defaults(handler=run)


def _synthetic(seconds: float) -> Recording:
    from ..synthetic import generate

    return generate(duration=seconds, rate=200.0, seed=0).recording


def run(args: argparse.Namespace) -> int:
    config = config_from(args).check()  # bad options fail here, before any socket exists
    return _offline(args, config) if args.offline else _networked(args, config)


def _offline(args: argparse.Namespace, config: SessionConfig) -> int:
    rec = _synthetic(args.seconds)
    session = Session.for_recording(config, rec, sinks=[PrintingSink(sys.stdout)])
    print(
        f"streamdp demo: {args.seconds:g} s of synthetic 200 Hz gaze → 52 features every {config.step:g} s → "
        f"{config.mechanism} chunks of {config.chunk_length} steps",
        file=sys.stderr,
    )
    releases = session.run(rec)
    if session.exhausted:
        print(f"budget: {session.pipeline.privatizer.exhausted_message}", file=sys.stderr)
    return 0 if releases else 1


def _networked(args: argparse.Namespace, config: SessionConfig) -> int:
    import threading

    from ..network.relay import Relay
    from ..network.simulator import CaptureSimulator
    from ..network.sink import ReleasePublisher
    from ..network.subscriber import connect_subscriber, messages
    from ..status import SessionStatus, StatusEvent

    rec = _synthetic(args.seconds)
    publisher = ReleasePublisher("tcp://127.0.0.1:0")
    sub = connect_subscriber(publisher.endpoint, ("streamdp.features.", "streamdp.status"))
    sim: CaptureSimulator | None = None
    relay: Relay | None = None
    thread: threading.Thread | None = None
    got = 0
    try:
        if not publisher.wait_for_subscribers(2, timeout=5.0):  # both topics, before anything is published
            raise StreamdpError(f"the demo's subscriber did not reach {publisher.endpoint} within 5 s")
        session = Session(config, sinks=[publisher], camera=rec.camera, source="simulated Pupil Capture")
        sim = CaptureSimulator(rec, speed=args.speed)
        sim.start()
        relay = Relay(session, remote=sim.remote_address)
        thread = threading.Thread(target=relay.run, daemon=True)
        thread.start()
        print(
            f"streamdp demo: simulated Pupil Capture at {sim.remote_address} → relay → subscriber at "
            f"{publisher.endpoint}; {args.seconds:g} s of synthetic 200 Hz gaze at speed {args.speed:g}",
            file=sys.stderr,
        )
        want = int((args.seconds - config.window) / config.step) // config.chunk_length
        wait = args.seconds / args.speed + 10 if args.speed else 10
        for topic, msg in messages(sub, timeout=wait):
            if topic == "streamdp.status":
                if SessionStatus.from_message(msg).budget_exhausted:
                    print(f"budget: {session.pipeline.privatizer.exhausted_message}", file=sys.stderr)
                    break
                continue
            print(format_chunk(msg))
            got += 1
            if got >= want:
                break
    finally:
        if relay is not None:
            relay.stop()
        if thread is not None:
            thread.join(5)
        # the publisher's socket is the relay thread's until it has ended
        summary = format_status(relay.status(StatusEvent.STOPPED)) if relay is not None else ""
        if sim is not None:
            sim.stop()
        sub.close(linger=0)
        publisher.close()
    print(f"received {got} sanitized chunks; relay {summary}", file=sys.stderr)
    return 0 if got else 1
