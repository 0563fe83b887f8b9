"""``streamdp demo``: the main job end to end on synthetic gaze, no headset.

Networked (default): a simulated Pupil Capture plays the gaze over its real Network API, a
relay's session sanitizes it and publishes on loopback, and a subscriber prints each chunk.
``--offline``: the same session runs in-process on the recording and prints each release.
Chunks go to stdout (``--json``: one JSON object per chunk, the message as published), each
followed by what only this device knows about it (its clip rate, from the session itself: never
in a message); what runs, the budget and the relay's summary go to stderr. The session's status
stays local too: the networked demo reads it from the session (a sink of its own), not from the
sanitized socket, which carries chunks only. With ``--gaze-channel`` the session also releases the
real-time gaze channel's ticks (60 a second by default); the subscriber (or, ``--offline``, a sink
of the session) counts them and, after the chunks, one line says in words what was received and
what it protects (on stderr with ``--json``, where stdout holds the chunks only). A ``--seconds``
(or ``--step``) whose work would not fit in memory is refused before the gaze is made; work over a
minute is announced, then its progress shown (:mod:`streamdp.cli.progress`).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError
from ..gaze import Recording
from ..privacy.release import PrivateRelease, check_sealed
from ..session import Session
from ..status import SessionStatus, StatusEvent, check_status
from .console import say
from .contract import Excludes
from .cost import demo_cost
from .format import PrintingSink, counted, format_chunk, format_local, format_status, json_line
from .gaze_format import GAZE_TOPIC, GazeTally
from .gaze_options import gaze_options_checked
from .options import add_config_file_option, add_config_options, reads
from .parsing import NON_NEGATIVE, POSITIVE
from .progress import Progress, preview, progress_after

#: the synthetic gaze's sampling rate (Hz)
RATE = 200.0

#: the configuration fields it reads: all of them (the live group in the networked demo only)
READS = reads("privacy", "features", "gaze", "live")
#: options that contradict each other
CONFLICTS = (
    Excludes("--offline", "--speed", "the offline demo runs in-process, as fast as it can"),
    Excludes("--offline", "--reorder-window", "the offline session reads the gaze in time order: nothing is held back"),
    Excludes("--offline", "--deadline-slack", "the offline session releases each chunk as it is computed"),
)


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
    add_config_options(p, READS)
    p.set_defaults(handler=run)


def chunks_in(rec: Recording, config: SessionConfig) -> int:
    """How many chunks a session on ``rec`` releases: the slots of the public schedule from the
    first with full windows after the first sample to the last that ends by the last sample.

    Examples
    --------
    >>> chunks_in(_synthetic(100.0), SessionConfig()), chunks_in(_synthetic(150.0), SessionConfig())
    (1, 2)
    """
    schedule = config.window_config().schedule()
    assert schedule is not None  # the configuration always sets a chunk length
    return len(schedule.chunks_between(float(rec.gaze.t[0]), float(rec.gaze.t[-1])))


def check_long_enough(seconds: float, rec: Recording, config: SessionConfig) -> None:
    """Refuse a demo too short for one chunk, saying how long it must be.

    Raises
    ------
    StreamdpError
        ``seconds`` of gaze give no whole chunk (named, with the minimum).

    Examples
    --------
    >>> check_long_enough(60.0, _synthetic(60.0), SessionConfig())
    Traceback (most recent call last):
    ...
    streamdp.errors.StreamdpError: --seconds 60 gives no whole chunk: the public schedule's first chunk of 64 steps × 0.5 s ends 87.5 s after the gaze starts: give --seconds 88 or more, or a shorter --chunk-length
    """  # noqa: E501
    if chunks_in(rec, config):
        return
    schedule = config.window_config().schedule()
    assert schedule is not None
    start = float(rec.gaze.t[0])
    end = schedule.step_time(schedule.last_step(schedule.first_chunk(start))) - start
    raise StreamdpError(
        f"--seconds {seconds:g} gives no whole chunk: the public schedule's first chunk of {config.chunk_length} "
        f"steps × {config.step:g} s ends {end:g} s after the gaze starts: give --seconds {math.ceil(end + 1 / RATE)} "
        "or more, or a shorter --chunk-length"
    )


def _synthetic(seconds: float) -> Recording:
    from ..synthetic import generate

    return generate(duration=seconds, rate=RATE, seed=0).recording


def run(args: argparse.Namespace) -> int:
    config = gaze_options_checked(args)  # bad options fail here, before any socket exists
    cost = demo_cost(
        seconds=args.seconds, rate=RATE, step=config.step, window=config.window, networked=not args.offline
    )
    long = preview(cost, "demo")  # before the gaze is made: its size is --seconds alone
    show, delay = not args.quiet, progress_after(long)
    with Progress("demo", estimate=cost.seconds, show=show, delay=delay):
        rec = _synthetic(args.seconds)
        check_long_enough(args.seconds, rec, config)
        if args.offline:
            return _offline(args, config, rec)
    total = chunks_in(rec, config)
    with Progress("demo", estimate=cost.seconds, total=total, unit="chunk", show=show, delay=delay) as progress:
        return _networked(args, config, rec, progress)


def _gaze_summary(args: argparse.Namespace, tally: GazeTally | None) -> None:
    """After the chunks: the gaze channel received, in words (stdout; with ``--json``, stderr)."""
    if tally is None:
        return
    if args.json:
        say(f"streamdp demo: {tally.summary()}")
    else:
        print(tally.summary(), flush=True)


def _offline(args: argparse.Namespace, config: SessionConfig, rec: Recording) -> int:
    tally = GazeTally() if config.gaze_channel else None
    printer = PrintingSink(sys.stdout, as_json=args.json)
    session = Session.for_recording(config, rec, sinks=[printer] if tally is None else [printer, tally])
    say(
        f"streamdp demo: {args.seconds:g} s of synthetic {RATE:g} Hz gaze → 52 features every {config.step:g} s → "
        f"{config.mechanism} chunks of {config.chunk_length} steps",
    )
    releases = session.run(rec)  # an exhausted budget is logged once, by the session
    _gaze_summary(args, tally)
    say(f"streamdp demo: {counted(len(releases), 'sanitized chunk')} released")
    return 0 if releases else 1


class LocalTap:
    """A sink that keeps, on this device, what the demo shows beside the published chunks: each
    release's clip rate (by chunk index) and the session's last status. It is the session's
    first sink, so a chunk's clip rate is known before its message leaves."""

    def __init__(self) -> None:
        self.clipped: dict[int, float] = {}
        self.status: SessionStatus | None = None

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        self.clipped[int(release.ledger["chunk_index"])] = release.clipped_fraction

    def publish_status(self, status: SessionStatus) -> None:
        self.status = check_status(status)

    def close(self) -> None:
        """Nothing to release."""

    def released_before_exhaustion(self) -> int | None:
        """How many chunks the session released before its budget ran out (None: not out)."""
        s = self.status
        return s.released if s is not None and s.budget_exhausted else None


def _networked(args: argparse.Namespace, config: SessionConfig, rec: Recording, progress: Progress) -> int:
    import threading
    import time

    import msgpack

    from ..network.relay import Relay
    from ..network.simulator import CaptureSimulator
    from ..network.sink import ReleasePublisher
    from ..network.subscriber import connect_subscriber

    # a demo on loopback, to its own subscriber: a --seed makes it reproducible, as asked; with the
    # gaze channel, no queue limit: played as fast as possible, thousands of ticks come at once
    # and a chunk among them must not be dropped
    tally = GazeTally() if config.gaze_channel else None
    publisher = ReleasePublisher(
        "tcp://127.0.0.1:0",
        publish_reproducible_noise_not_private=config.seed is not None,
        sndhwm=1000 if tally is None else 0,
    )
    # one subscriber, one subscription: with the gaze channel, the prefix both topics share (the
    # publisher counts subscriptions, one per prefix: two prefixes would read as two subscribers)
    topics = ("streamdp.features.",) if tally is None else ("streamdp.",)
    sub = connect_subscriber(publisher.endpoint, topics, rcvhwm=None if tally is None else 0)
    tap = LocalTap()
    sim: CaptureSimulator | None = None
    relay: Relay | None = None
    thread: threading.Thread | None = None
    got = 0
    try:
        if not publisher.wait_for_subscribers(len(topics), timeout=5.0):  # before anything is published
            raise StreamdpError(f"the demo's subscriber did not reach {publisher.endpoint} within 5 s")
        session = Session(config, sinks=[tap, publisher], camera=rec.camera, source="simulated Pupil Capture")
        sim = CaptureSimulator(rec, speed=args.speed, wait_for_subscriber=True, hwm=0)
        sim.start()
        relay = Relay(session, remote=sim.remote_address)
        thread = threading.Thread(target=relay.run, daemon=True)
        thread.start()
        pace = f"at {args.speed:g}× real time" if args.speed else "as fast as possible"
        say(
            f"streamdp demo: simulated Pupil Capture at {sim.remote_address} → relay → subscriber at "
            f"{publisher.endpoint}; {args.seconds:g} s of synthetic {RATE:g} Hz gaze, played {pace}",
        )
        want = chunks_in(rec, config)
        # s without a chunk and without gaze reaching the relay before giving up: a fail-safe only (the
        # demo ends on its last chunk); a loaded machine slows the relay, and its reading keeps it alive
        quiet = args.seconds / args.speed + 30 if args.speed else 30
        last, read = time.monotonic(), -1
        while got < want and time.monotonic() - last < quiet:
            out = tap.released_before_exhaustion()
            if out is not None and got >= out:
                break  # the session said it, once: nothing more comes
            if not sub.poll(100):
                if relay.counters.received != read:
                    read, last = relay.counters.received, time.monotonic()
                continue
            topic, payload = sub.recv_multipart()[:2]
            msg = msgpack.unpackb(payload, raw=False, strict_map_key=False)
            last = time.monotonic()
            if tally is not None and topic.startswith(GAZE_TOPIC.encode()):
                tally.add(msg)
                continue
            if args.json:
                print(json_line(msg), flush=True)
            else:
                local = format_local(tap.clipped[int(msg["ledger"]["chunk_index"])])
                print(format_chunk(msg) + "\n" + local, flush=True)
            got += 1
            progress.advance()
    finally:
        if relay is not None:
            relay.stop()
        if thread is not None:
            thread.join(5)
        # the publisher's socket is the relay thread's until it has ended
        summary = format_status(relay.status(StatusEvent.STOPPED), step=config.step) if relay is not None else ""
        if sim is not None:
            sim.stop()
        if tally is not None and got:
            _drain_ticks(sub, tally)
        sub.close(linger=0)
        publisher.close()
    _gaze_summary(args, tally)
    say(f"streamdp demo: {counted(got, 'sanitized chunk')} received; relay {summary}")
    return 0 if got else 1


def _drain_ticks(sub: Any, tally: GazeTally) -> None:
    """The ticks published before the relay stopped, still on their way: read until 0.1 s passes
    without one."""
    import msgpack

    while sub.poll(100):
        topic, payload = sub.recv_multipart()[:2]
        if topic.startswith(GAZE_TOPIC.encode()):
            tally.add(msgpack.unpackb(payload, raw=False, strict_map_key=False))
