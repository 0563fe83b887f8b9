"""``streamdp demo``: the main job end to end on synthetic gaze, no headset.

Networked (default): a simulated Pupil Capture plays the gaze over its real Network API, a
relay's session sanitizes it and publishes on loopback, and a subscriber prints each chunk.
``--offline``: the same session runs in-process on the recording and prints each release.
Chunks go to stdout (``--json``: one JSON object per chunk, the message as published); what
runs, the budget and the relay's summary go to stderr.
"""

from __future__ import annotations

import argparse
import math
import sys

from ..config import SessionConfig
from ..errors import StreamdpError
from ..gaze import Recording
from ..session import Session
from .console import say
from .format import PrintingSink, counted, format_chunk, format_status, json_line
from .options import add_config_file_option, add_config_options, checked, config_from
from .parsing import NON_NEGATIVE, POSITIVE

#: the synthetic gaze's sampling rate (Hz)
RATE = 200.0


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "demo",
        help="simulated Capture → relay → subscriber on loopback: sanitized chunks and their ledger",
    )
    p.add_argument("--seconds", type=POSITIVE, default=150.0, help="length of the synthetic gaze in s")
    p.add_argument(
        "--speed", type=NON_NEGATIVE, default=0.0, help="playback speed: 1 real time (default: 0, as fast as possible)"
    )
    p.add_argument("--offline", action="store_true", help="run the session in-process, without sockets")
    p.add_argument("--json", action="store_true", help="print each chunk as one JSON object per line, as published")
    add_config_file_option(p)
    add_config_options(p, ["privacy", "features", "live"])
    p.set_defaults(handler=run)


def chunks_in(seconds: float, config: SessionConfig) -> int:
    """How many whole chunks ``seconds`` of synthetic gaze give: the first step is at one window,
    then one every step.

    Examples
    --------
    >>> chunks_in(100.0, SessionConfig()), chunks_in(60.0, SessionConfig())
    (2, 0)
    """
    duration = seconds - 1.0 / RATE  # the last sample is one period before the end
    if duration < config.window:
        return 0
    return (int((duration - config.window) / config.step + 1e-9) + 1) // config.chunk_length


def check_long_enough(seconds: float, config: SessionConfig) -> None:
    """Refuse a demo too short for one chunk, saying how long it must be.

    Raises
    ------
    StreamdpError
        ``seconds`` of gaze give no whole chunk (named, with the minimum).
    """
    if chunks_in(seconds, config):
        return
    need = math.ceil(config.window + config.chunk_length * config.step)
    raise StreamdpError(
        f"--seconds {seconds:g} is shorter than one window and one chunk ({config.window:g} s + "
        f"{config.chunk_length} steps × {config.step:g} s): give --seconds {need} or more, or a shorter --chunk-length"
    )


def _synthetic(seconds: float) -> Recording:
    from ..synthetic import generate

    return generate(duration=seconds, rate=RATE, seed=0).recording


def run(args: argparse.Namespace) -> int:
    config = checked(config_from(args))  # bad options fail here, before any socket exists
    check_long_enough(args.seconds, config)
    return _offline(args, config) if args.offline else _networked(args, config)


def _offline(args: argparse.Namespace, config: SessionConfig) -> int:
    rec = _synthetic(args.seconds)
    session = Session.for_recording(config, rec, sinks=[PrintingSink(sys.stdout, as_json=args.json)])
    say(
        f"streamdp demo: {args.seconds:g} s of synthetic {RATE:g} Hz gaze → 52 features every {config.step:g} s → "
        f"{config.mechanism} chunks of {config.chunk_length} steps",
    )
    releases = session.run(rec)  # an exhausted budget is logged once, by the session
    say(f"streamdp demo: {counted(len(releases), 'sanitized chunk')} released")
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
        pace = f"at {args.speed:g}× real time" if args.speed else "as fast as possible"
        say(
            f"streamdp demo: simulated Pupil Capture at {sim.remote_address} → relay → subscriber at "
            f"{publisher.endpoint}; {args.seconds:g} s of synthetic {RATE:g} Hz gaze, played {pace}",
        )
        want = chunks_in(args.seconds, config)
        wait = args.seconds / args.speed + 10 if args.speed else 10
        for topic, msg in messages(sub, timeout=wait):
            if topic == "streamdp.status":
                if SessionStatus.from_message(msg).budget_exhausted:
                    break  # the session has said so, once
                continue
            print(json_line(msg) if args.json else format_chunk(msg), flush=True)
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
    say(f"streamdp demo: {counted(got, 'sanitized chunk')} received; relay {summary}")
    return 0 if got else 1
