"""``streamdp subscribe``: print the sanitized chunks a relay publishes, or its status.

Given the relay's sanitized address it prints chunks; given the device owner's status address
(``streamdp relay --status-bind``, loopback only) it prints the status: the relay never puts its
status on the sanitized socket. Both go to stdout as sentences, or with ``--json`` as one JSON
object per line, each the message as published (a chunk has ``topic`` and ``ledger``; a status
has ``event``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .format import format_chunk, format_status, json_line
from .parsing import POSITIVE, number


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("subscribe", help="print the sanitized chunks a relay publishes, or its local status")
    p.add_argument(
        "endpoint",
        help="the relay's address, e.g. tcp://127.0.0.1:5570, or on the device its status address, "
        "e.g. tcp://127.0.0.1:5571",
    )
    p.add_argument("--topic", default="streamdp.features.", help="topic prefix")
    p.add_argument(
        "--count",
        type=number(int, low=0),
        default=0,
        help="stop after this many messages, chunks or status (default: 0, never)",
    )
    p.add_argument("--timeout", type=POSITIVE, default=3600.0, help="stop after this many seconds without a message")
    p.add_argument("--curve-server-key", help="the relay's public certificate (default: none, no CURVE)")
    p.add_argument("--curve-client-cert", help="this client's secret certificate (default: none, no CURVE)")
    p.add_argument("--json", action="store_true", help="one JSON object per message, as published")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError, StreamdpError
    from ..network.sink import STATUS_TOPIC
    from ..network.subscriber import connect_subscriber, messages
    from ..status import SessionStatus

    if bool(args.curve_server_key) != bool(args.curve_client_cert):
        raise StreamdpError("CURVE needs both --curve-server-key and --curve-client-cert")
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
                    status = SessionStatus.from_message(msg)
                except InputError as exc:
                    print(f"skipped an unreadable status message: {exc}", file=sys.stderr)
                    continue
                print(json_line(msg) if args.json else format_status(status), flush=True)
                count += 1
                if args.count and count >= args.count:
                    break
                continue
            try:
                line = format_chunk(msg)  # also checks that it is a chunk message
                if args.json:
                    line = json_line(msg)
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                print(f"skipped an unreadable message on {topic}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            print(line, flush=True)
            count += 1
            if args.count and count >= args.count:
                break
    finally:
        sock.close(linger=0)
    return 0
