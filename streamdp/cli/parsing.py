"""The parser's conventions: one-line errors, every default in the help, values checked where
they are parsed.

:class:`Parser` prints a refused option as one line (``streamdp relay: error: argument --port:
…``, no usage block) and exits with status 2. :class:`HelpFormatter` adds ``(default: …)`` to
every option that has a default and whose help does not already say it. :func:`number` makes
the ``type=`` of a numeric option that refuses what is out of range when it is parsed, naming the
option and the value.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any, NoReturn


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr, exit status 2, and that takes no
    abbreviated option (``--w`` is not ``--weights``: an option is given whole or refused)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.HelpFormatter):
    """Help that shows each option's default unless its text already speaks of it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if not action.option_strings or "default" in text.lower() or "%(default)" in text:
            return text
        if action.default is None or action.default == argparse.SUPPRESS or isinstance(action.default, bool):
            return text  # (0 == False: the default 0 is shown)
        return f"{text} (default: %(default)s)"


def _bounds_text(kind: type, low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    noun = "a whole number" if kind is int else "a number"
    if low is not None and high is not None:
        if low_open and high_open:
            return f"{noun} strictly between {low:g} and {high:g}"
        return f"{noun} from {low:g} to {high:g}"
    if low is not None:
        return f"{noun} {'>' if low_open else '≥'} {low:g}"
    if high is not None:
        return f"{noun} {'<' if high_open else '≤'} {high:g}"
    return noun


def number(
    kind: type = int,
    *,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> Callable[[str], Any]:
    """A ``type=`` for argparse: ``kind`` (int or float, finite) within ``[low, high]`` (an end
    excluded when its ``*_open`` is set).

    Raises
    ------
    argparse.ArgumentTypeError
        From the returned function: the text is not such a number; argparse names the option.

    Examples
    --------
    >>> number(int, low=1)("3")
    3
    >>> number(float, low=0, high=1, low_open=True, high_open=True)("2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a number strictly between 0 and 1, got '2'
    """
    what = _bounds_text(kind, low, high, low_open, high_open)

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}") from None
        too_low = low is not None and (value < low or (low_open and value == low))
        too_high = high is not None and (value > high or (high_open and value == high))
        if too_low or too_high or (kind is float and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


#: the numeric option types the commands share
COUNT = number(int, low=1)
PORT = number(int, low=0, high=65535)
POSITIVE = number(float, low=0, low_open=True)
NON_NEGATIVE = number(float, low=0)
FRACTION = number(float, low=0, high=1, low_open=True, high_open=True)
SEED = number(int, low=0)


def add_verbosity(parser: argparse.ArgumentParser, *, after_command: bool) -> None:
    """``-v/--verbose`` and ``-q/--quiet``, counted. Before the command they count into
    ``verbose``/``quiet``; after it into separate names that :func:`verbosity` adds up (a
    subcommand's defaults would otherwise overwrite what was given before it)."""
    suffix = "_after" if after_command else ""
    default: Any = argparse.SUPPRESS if after_command else 0
    parser.add_argument(
        "-v", "--verbose", action="count", dest="verbose" + suffix, default=default,
        help="more log output on stderr (-vv: debug, with tracebacks)",
    )  # fmt: skip
    parser.add_argument(
        "-q", "--quiet", action="count", dest="quiet" + suffix, default=default,
        help="errors only on stderr, no progress bar",
    )  # fmt: skip


def verbosity(args: argparse.Namespace) -> int:
    """-v minus -q, wherever they were given; sets ``args.quiet`` to whether -q was.

    Examples
    --------
    >>> args = argparse.Namespace(verbose=1, quiet=0, verbose_after=1)
    >>> verbosity(args), args.quiet
    (2, False)
    """
    more = getattr(args, "verbose", 0) + getattr(args, "verbose_after", 0)
    less = getattr(args, "quiet", 0) + getattr(args, "quiet_after", 0)
    args.quiet = less > 0
    return int(more - less)
