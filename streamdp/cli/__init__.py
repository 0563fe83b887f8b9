"""The ``streamdp`` command line: one module per command, options from one configuration.

Every command that builds a pipeline takes its options from
:class:`~streamdp.config.SessionConfig` (:mod:`streamdp.cli.options`): the fields it reads, as its
table ``READS`` declares, and no other. An option a command does not read, or two that contradict
each other (its table ``CONFLICTS``), is refused naming both (:mod:`streamdp.cli.contract`);
chunks and status are printed by one formatter
(:mod:`streamdp.cli.format`). Results go to stdout, logs and errors to stderr
(:mod:`streamdp.cli.console`). Bad input and faults of the machine (a port in use, a path that
cannot be written, a device that does not answer) end with one line ``streamdp <command>:
error: <thing>: <problem>`` and a non-zero exit status, never a traceback; a command that needs
an optional extra says which one to install.

Examples
--------
>>> main(["demo", "--offline", "--epsilon", "0"])
2
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from typing import Any

from .. import __version__
from ..errors import StreamdpError
from . import (
    audit,
    budget,
    demo,
    doctor,
    evaluate,
    features,
    fit_weights,
    heatmap,
    install_plugin,
    relay,
    replay,
    simulate,
    subscribe,
)
from .common import MissingExtra
from .console import (
    EXIT_SIGINT,
    EXIT_SIGTERM,
    Terminated,
    configure_logging,
    error_text,
    is_environment_fault,
    termination_as_exception,
)
from .contract import CONFLICTS_DEST, DEFAULTS_DEST, UsageError, refuse_conflicts, unknown_option
from .parsing import HelpFormatter, Parser, add_verbosity, verbosity

log = logging.getLogger(__name__)

#: the commands, in the order ``streamdp --help`` lists them
COMMANDS = (
    features,
    demo,
    simulate,
    relay,
    doctor,
    subscribe,
    replay,
    evaluate,
    fit_weights,
    audit,
    budget,
    heatmap,
    install_plugin,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``streamdp`` parser with every command's subparser; ``-v``/``-q`` are accepted before
    and after the command."""
    parser = Parser(
        prog="streamdp",
        description="Differentially private eye-movement features for Pupil Labs headsets.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"streamdp {__version__}")
    add_verbosity(parser, after_command=False)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(commands)
    for name, sub in commands.choices.items():
        sub.formatter_class = HelpFormatter
        add_verbosity(sub, after_command=True)
        defaults = {a.dest: a.default for a in sub._actions if a.dest != argparse.SUPPRESS}
        sub.set_defaults(**{DEFAULTS_DEST: defaults, CONFLICTS_DEST: getattr(_module(name), "CONFLICTS", ())})
    return parser


def _module(command: str) -> Any:
    return next(c for c in COMMANDS if c.__name__.rsplit(".", 1)[1] == command.replace("-", "_"))


def readers() -> dict[str, tuple[str, ...]]:
    """Each command and the configuration fields it reads (its table ``READS``)."""
    return {c.__name__.rsplit(".", 1)[1].replace("_", "-"): tuple(getattr(c, "READS", ())) for c in COMMANDS}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``streamdp`` command; returns its exit status.

    0 success; 1 the command ran but produced nothing valid (no rows, every recording skipped,
    nothing released); 2 bad input, a fault of the machine or a missing optional extra (one
    line on stderr, no traceback); 130 interrupted (SIGINT), 143 terminated (SIGTERM), after
    cleaning up (workers stopped, nothing partial left).
    """
    args, extras = build_parser().parse_known_args(argv)
    command = f"streamdp {args.command}"
    if extras:
        print(f"{command}: error: {unknown_option(args.command, extras, readers())} (see {command} --help)",
              file=sys.stderr)  # fmt: skip
        return 2
    configure_logging(verbosity(args))
    try:
        with termination_as_exception():
            refuse_conflicts(args)
            return int(args.handler(args))
    except UsageError as exc:
        print(f"{command}: error: {exc} (see {command} --help)", file=sys.stderr)
        return 2
    except MissingExtra as exc:
        print(exc, file=sys.stderr)
        return 2
    except BrokenPipeError:
        return _reader_gone()
    except (StreamdpError, ValueError, TypeError, OSError) as exc:
        # invalid option values reach the validated configuration; its messages name them
        log.debug("%s failed", command, exc_info=True)
        print(f"{command}: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:
        if not is_environment_fault(exc):
            raise  # a bug of ours: its traceback is what a report needs
        log.debug("%s failed", command, exc_info=True)
        print(f"{command}: error: {error_text(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{command}: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except Terminated:
        print(f"{command}: terminated", file=sys.stderr)
        return EXIT_SIGTERM


def _reader_gone() -> int:
    """The reader of stdout went away (``streamdp demo | head``): not an error of ours. What is
    still buffered goes to /dev/null, so that flushing it at exit raises nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0
