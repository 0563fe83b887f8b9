"""``streamdp simulate``: a stand-in Pupil Capture speaking the real Network API."""

from __future__ import annotations

import argparse
import sys

from .common import load_recording


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("simulate", help="a stand-in Pupil Capture speaking the Network API")
    p.add_argument("path", nargs="?", help="recording to play (default: synthetic gaze)")
    p.add_argument("--synthetic", type=float, metavar="SECONDS", help="length of synthetic gaze when no path")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic gaze (default: %(default)s)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: %(default)s)")
    p.add_argument("--port", type=int, default=50020, help="Pupil Remote port (default: %(default)s)")
    p.add_argument("--speed", type=float, default=1.0, help="1 = real time, 0 = as fast as possible (default: 1)")
    p.add_argument("--loop", action="store_true", help="play the recording over and over")
    p.add_argument("--stay", action="store_true", help="keep serving after the recording ends")
    p.add_argument("--no-wait", action="store_true", help="publish even before anyone subscribes to gaze")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import signal
    import threading

    from ..network.simulator import CaptureSimulator

    rec = load_recording(args.path, args.synthetic, args.seed)
    sim = CaptureSimulator(
        rec,
        host=args.host,
        remote_port=args.port,
        speed=args.speed,
        loop=args.loop,
        wait_for_subscriber=not args.no_wait,
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    sim.start()
    print(
        f"simulated Pupil Capture: Pupil Remote at {sim.remote_address} (SUB_PORT {sim.ports.sub}, "
        f"PUB_PORT {sim.ports.pub}), playing {rec.name} at speed {args.speed:g}",
        file=sys.stderr,
        flush=True,
    )
    try:
        while not done.is_set():
            if sim.finished.is_set() and not args.stay:
                break
            done.wait(0.1)
    finally:
        sim.stop()
    return 0
