"""``streamdp subscribe``: print the sanitized chunks and status a relay publishes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .format import format_chunk, format_status


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("subscribe", help="print the sanitized chunks a relay publishes")
    p.add_argument("endpoint", help="the relay's address, e.g. tcp://127.0.0.1:5570")
    p.add_argument("--topic", default="streamdp.features.", help="topic prefix (default: %(default)s)")
    p.add_argument("--count", type=int, default=0, help="stop after this many chunks (0: never)")
    p.add_argument(
        "--timeout", type=float, default=3600.0, help="stop after this many seconds without a message (default 3600)"
    )
    p.add_argument("--curve-server-key", help="the relay's public certificate")
    p.add_argument("--curve-client-cert", help="this client's secret certificate")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..network.sink import STATUS_TOPIC
    from ..network.subscriber import connect_subscriber, messages
    from ..status import SessionStatus

    sock = connect_subscriber(
        args.endpoint,
        (args.topic, STATUS_TOPIC),
        server_public_key=Path(args.curve_server_key) if args.curve_server_key else None,
        client_certificate=Path(args.curve_client_cert) if args.curve_client_cert else None,
    )
    count = 0
    try:
        for topic, msg in messages(sock, timeout=args.timeout):
            if topic == STATUS_TOPIC:
                try:
                    print(format_status(SessionStatus.from_message(msg)), flush=True)
                except InputError as exc:
                    print(f"skipped an unreadable status message: {exc}", file=sys.stderr)
                continue
            try:
                print(format_chunk(msg), flush=True)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                print(f"skipped an unreadable message on {topic}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            count += 1
            if args.count and count >= args.count:
                break
    finally:
        sock.close(linger=0)
    return 0
