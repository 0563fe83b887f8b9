"""The ``streamdp`` command line: one module per command, options from one configuration.

Every command that builds a pipeline takes its options from
:class:`~streamdp.config.SessionConfig` (:mod:`streamdp.cli.options`), so an option added there
reaches every such command; chunks and status are printed by one formatter
(:mod:`streamdp.cli.format`). Errors in input end with a message and exit status 2, never a
traceback; a command that needs an optional extra says which one to install.

Examples
--------
>>> main(["demo", "--offline", "--epsilon", "0"])
2
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ..errors import StreamdpError
from . import audit, demo, evaluate, features, heatmap, relay, replay, simulate, subscribe
from .common import MissingExtra

#: the commands, in the order ``streamdp --help`` lists them
COMMANDS = (features, demo, simulate, relay, subscribe, replay, evaluate, audit, heatmap)


def build_parser() -> argparse.ArgumentParser:
    """The ``streamdp`` parser with every command's subparser."""
    parser = argparse.ArgumentParser(
        prog="streamdp",
        description="Differentially private eye-movement features for Pupil Labs headsets.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``streamdp`` command; returns its exit status.

    0 success, 1 the command ran but found a problem (e.g. nothing released), 2 bad input or a
    missing optional extra (a message, no traceback), 130 interrupted.
    """
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        return int(args.handler(args))
    except MissingExtra as exc:
        print(exc, file=sys.stderr)
        return 2
    except (StreamdpError, ValueError, TypeError) as exc:
        # invalid option values reach the validated configuration; its messages name them
        print(f"streamdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (e.g. `streamdp demo | head`): not an error of ours
        sys.stderr.close()
        return 0
