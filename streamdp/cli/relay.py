"""``streamdp relay``: live gaze in (Pupil Capture, or a Neon/Invisible), sanitized chunks out on
a ZeroMQ topic."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..errors import StreamdpError
from .format import format_status
from .options import add_config_options, config_from


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("relay", help="Pupil Capture's gaze in, sanitized chunks out on a ZeroMQ topic")
    p.add_argument("--remote", default="tcp://127.0.0.1:50020", help="Pupil Remote (default: %(default)s)")
    p.add_argument("--bind", default="tcp://127.0.0.1:5570", help="where subscribers connect (default: %(default)s)")
    p.add_argument("--to-backbone", action="store_true", help="also publish onto Capture's backbone")
    p.add_argument("--curve-secret", help="relay's CURVE secret certificate (zmq.auth format)")
    p.add_argument("--curve-clients", help="folder of allowed clients' public certificates")
    p.add_argument("--insecure", action="store_true", help="allow a non-loopback bind without CURVE")
    p.add_argument(
        "--status-interval", type=float, default=10.0, help="seconds between status messages (default: %(default)s)"
    )
    p.add_argument(
        "--neon",
        nargs="?",
        const="",
        default=None,
        metavar="HOST[:PORT]",
        help="take gaze from a Neon or Invisible (realtime API) instead of Pupil Capture; "
        "without an address the device is discovered",
    )
    p.add_argument("--invisible", action="store_true", help="the device is a Pupil Invisible (scene 1088×1080)")
    add_config_options(p, ["privacy", "features", "live"])
    p.set_defaults(handler=run)


def _curve(args: argparse.Namespace) -> Any:
    from ..network.sink import CurveServer

    if not (args.curve_secret or args.curve_clients):
        return None
    if not (args.curve_secret and args.curve_clients):
        raise StreamdpError("CURVE needs both --curve-secret and --curve-clients")
    return CurveServer(Path(args.curve_secret), Path(args.curve_clients))


def run(args: argparse.Namespace) -> int:
    import signal

    from ..network.sink import ReleasePublisher
    from ..session import Session
    from ..status import StatusEvent

    config = config_from(args).check()  # bad options fail before any socket exists
    curve = _curve(args)
    publisher = ReleasePublisher(args.bind, curve=curve, insecure=args.insecure)
    shell: Any
    try:
        if args.neon is not None:
            from ..network.neon import NeonRelay, connect_device

            device = connect_device(args.neon or None)
            source = f"{'Invisible' if args.invisible else 'Neon'} at {args.neon or 'a discovered device'}"
            camera = "invisible" if args.invisible else "neon"
            session = Session(config, sinks=[publisher], camera=camera, source=source)
            shell = NeonRelay(session, device, invisible=args.invisible)
        else:
            from ..network.relay import Relay

            source = f"Pupil Capture at {args.remote}"
            session = Session(config, sinks=[publisher], source=source)
            shell = Relay(
                session, remote=args.remote, to_backbone=args.to_backbone, status_interval=args.status_interval
            )
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: shell.stop())
        print(
            f"streamdp relay: {source} → {publisher.endpoint} ({config.mechanism}, "
            f"ε {config.epsilon:g}/feature/chunk, unit {config.unit}, scene camera {session.camera})",
            file=sys.stderr,
            flush=True,
        )
        shell.run()
        subscribers = publisher.poll_subscriptions()
    finally:
        publisher.close()
    print(f"streamdp relay stopped: {format_status(session.status(StatusEvent.STOPPED, subscribers))}", file=sys.stderr)
    return 0
