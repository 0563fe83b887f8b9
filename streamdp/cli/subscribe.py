"""``streamdp subscribe``: print the sanitized chunks a relay publishes, its gaze channel's ticks,
or its status.

Given the relay's sanitized address it prints chunks and, when the relay runs the real-time gaze
channel (``--gaze-channel``), its ticks (``--features-only``, ``--gaze-only``: one of the two);
given the device owner's status address (``streamdp relay --status-bind``, loopback only) it
prints the status: the relay never puts its status on the sanitized socket. All go to stdout as
sentences — a chunk with its ledger in words, the ticks as one line per second of gaze (how many,
the last position, ε per tick) and the channel's guarantee once — or with ``--json`` as one JSON
object per line, each the message as published (a chunk or a tick has ``topic`` and ``ledger``, a
tick's ledger ``"channel": "gaze"``; a status has ``event``). The gaze channel's guarantee is one
line (its ε_w and window), in full with ``-v``.

Exit status 0 when messages arrived (and then ``--timeout`` s passed without one, or ``--count``
were printed); 1 when nothing arrived within ``--timeout`` s of subscribing (one line on stderr says
so: nothing is publishing there, or not on these topics); 2 for bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .format import format_chunk, format_status, json_line
from .parsing import POSITIVE, number, verbosity

#: the sanitized topics' prefixes
FEATURES_TOPIC = "streamdp.features."
GAZE_TOPIC = "streamdp.gaze."

#: it reads no configuration field
READS: tuple[str, ...] = ()


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "subscribe",
        help="print the sanitized chunks and gaze ticks a relay publishes, or its local status",
        epilog="exit status: 0 messages arrived; 1 nothing arrived within --timeout seconds; 2 bad input",
    )
    p.add_argument(
        "endpoint",
        help="the relay's address, e.g. tcp://127.0.0.1:5570, or on the device its status address, "
        "e.g. tcp://127.0.0.1:5571",
    )
    p.add_argument(
        "--topic",
        help=f"one topic prefix to subscribe to (default: {FEATURES_TOPIC} and {GAZE_TOPIC}, "
        "or as --features-only / --gaze-only say)",
    )
    only = p.add_mutually_exclusive_group()
    only.add_argument("--features-only", action="store_true", help=f"the chunks only ({FEATURES_TOPIC})")
    only.add_argument("--gaze-only", action="store_true", help=f"the gaze channel's ticks only ({GAZE_TOPIC})")
    p.add_argument(
        "--count",
        type=number(int, low=0),
        default=0,
        help="stop after this many messages: chunks, ticks (one each) or status (default: 0, never)",
    )
    p.add_argument(
        "--timeout",
        type=POSITIVE,
        default=3600.0,
        help="stop after this many seconds without a message (none at all: exit status 1)",
    )
    p.add_argument("--curve-server-key", help="the relay's public certificate (default: none, no CURVE)")
    p.add_argument("--curve-client-cert", help="this client's secret certificate (default: none, no CURVE)")
    p.add_argument("--json", action="store_true", help="one JSON object per message, as published")
    p.set_defaults(handler=run)


def _topics(args: argparse.Namespace) -> tuple[str, ...]:
    from ..errors import StreamdpError

    if args.topic is not None:
        if args.features_only or args.gaze_only:
            raise StreamdpError("--topic names the topic itself: give it without --features-only or --gaze-only")
        return (args.topic,)
    if args.features_only:
        return (FEATURES_TOPIC,)
    return (GAZE_TOPIC,) if args.gaze_only else (FEATURES_TOPIC, GAZE_TOPIC)


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError, StreamdpError
    from ..network.sink import STATUS_TOPIC
    from ..network.subscriber import connect_subscriber, messages
    from ..status import SessionStatus
    from .gaze_format import GazeSeconds, check_tick

    if bool(args.curve_server_key) != bool(args.curve_client_cert):
        raise StreamdpError("CURVE needs both --curve-server-key and --curve-client-cert")
    sock = connect_subscriber(
        args.endpoint,
        (*_topics(args), STATUS_TOPIC),
        server_public_key=Path(args.curve_server_key) if args.curve_server_key else None,
        client_certificate=Path(args.curve_client_cert) if args.curve_client_cert else None,
    )
    seconds = GazeSeconds(full_guarantee=verbosity(args) > 0)
    count = received = 0
    try:
        for topic, msg in messages(sock, timeout=args.timeout):
            received += 1
            lines: list[str] = []
            try:
                if topic == STATUS_TOPIC:
                    try:
                        status = SessionStatus.from_message(msg)
                    except InputError as exc:
                        print(f"skipped an unreadable status message: {exc}", file=sys.stderr)
                        continue
                    lines = [json_line(msg) if args.json else format_status(status)]
                elif topic.startswith(GAZE_TOPIC):
                    lines = [json_line(check_tick(msg))] if args.json else seconds.add(msg)
                else:
                    line = format_chunk(msg)  # also checks that it is a chunk message
                    lines = [json_line(msg) if args.json else line]
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                print(f"skipped an unreadable message on {topic}: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            for line in lines:
                print(line, flush=True)
            count += 1
            if args.count and count >= args.count:
                break
    finally:
        sock.close(linger=0)
    for line in seconds.flush():  # the second under way when the stream stopped
        print(line, flush=True)
    if not received:
        print(
            f"streamdp subscribe: error: {args.endpoint}: nothing arrived within {args.timeout:g} s (is a relay "
            f"publishing there, on {' and '.join(_topics(args))}?)",
            file=sys.stderr,
        )
        return 1
    return 0
