"""The command line's contract: every option a command offers is used, any other is refused.

A command's options come from two tables beside it: ``READS``, the configuration fields it reads
(:func:`~streamdp.cli.options.reads`; no other field is an option of it), and ``CONFLICTS``, the
options that contradict each other or do nothing without another (:class:`Excludes`,
:class:`Needs`). :func:`refuse_conflicts` refuses such a command line, naming both options, before
any work; :func:`unknown_option` words the refusal of an option the command does not have, naming
the command and, for a configuration field, the commands that read it. Either ends with exit
status 2.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

from ..config import SessionConfig
from ..errors import StreamdpError
from .options import _GIVEN_DEST, option_name

__all__ = ["CONFLICTS_DEST", "DEFAULTS_DEST", "Excludes", "Needs", "given", "refuse_conflicts", "unknown_option"]

#: where each subcommand's parser keeps its options' defaults (to tell what was given)
DEFAULTS_DEST = "_option_defaults"
#: where a command's table of conflicts is kept
CONFLICTS_DEST = "_option_conflicts"


class UsageError(StreamdpError):
    """Two options that contradict each other, or one that does nothing without another."""


def _dest(option: str) -> tuple[str, object]:
    """The parsed name of ``option`` and the value it must hold to count (``...``: any).

    ``--no-x`` stands for ``x`` given as False, ``--x=v`` for ``x`` given as ``v``, a name in
    capitals for a positional argument (``PATH`` → ``path``).
    """
    name, _, value = option.partition("=")
    if name.startswith("--no-"):
        return name[5:].replace("-", "_"), False
    dest = name[2:].replace("-", "_") if name.startswith("--") else name.lower()
    return dest, value if value else ...


def given(args: argparse.Namespace, option: str) -> bool:
    """Whether ``option`` was given on the command line (``--no-x``: ``--x`` turned off; ``--x=v``:
    with the value ``v``): recorded by its action, or a value other than its default.

    Examples
    --------
    >>> args = argparse.Namespace(neon=None, invisible=True, blinks="given", _option_defaults={"blinks": "confidence"})
    >>> given(args, "--invisible"), given(args, "--neon"), given(args, "--blinks=confidence")
    (True, False, False)
    """
    dest, value = _dest(option)
    defaults: Mapping[str, object] = getattr(args, DEFAULTS_DEST, {})
    current = getattr(args, dest, None)
    marked = dest in getattr(args, _GIVEN_DEST, ())
    if not marked and current == defaults.get(dest, None if current is not False else False):
        return False
    return value is ... or current == value or str(current) == value


@dataclass(frozen=True)
class Excludes:
    """``first`` and ``second`` contradict each other: either, not both."""

    first: str
    second: str
    why: str

    def problem(self, args: argparse.Namespace) -> str | None:
        if given(args, self.first) and given(args, self.second):
            return f"{_shown(self.first)} and {_shown(self.second)} contradict each other: {self.why}"
        return None


@dataclass(frozen=True)
class Needs:
    """``option`` does nothing without ``needed``."""

    option: str
    needed: str
    why: str

    def problem(self, args: argparse.Namespace) -> str | None:
        if given(args, self.option) and not given(args, self.needed):
            return f"{_shown(self.option)} needs {_shown(self.needed)}: {self.why}"
        return None


def _shown(option: str) -> str:
    return option.replace("=", " ")


def refuse_conflicts(args: argparse.Namespace, conflicts: Sequence[Excludes | Needs] | None = None) -> None:
    """Refuse the first conflict of the command's table (or ``conflicts``) the options hold.

    Raises
    ------
    UsageError
        Two options that contradict each other, or one given without what it needs (both named).

    Examples
    --------
    >>> args = argparse.Namespace(path="rec", synthetic=40.0)
    >>> refuse_conflicts(args, [Excludes("PATH", "--synthetic", "synthetic gaze is read when no path is given")])
    Traceback (most recent call last):
    ...
    streamdp.cli.contract.UsageError: PATH and --synthetic contradict each other: synthetic gaze is read when no path is given
    """  # noqa: E501
    for rule in conflicts if conflicts is not None else getattr(args, CONFLICTS_DEST, ()):
        problem = rule.problem(args)
        if problem:
            raise UsageError(problem)


def unknown_option(command: str, extras: Sequence[str], readers: Mapping[str, Sequence[str]]) -> str:
    """The refusal of the arguments ``command`` does not take: the first unknown option, and, for
    an option of a configuration field, the commands that read it (``readers``: command → its
    table).

    Examples
    --------
    >>> unknown_option("heatmap", ["--chunk-length", "32"], {"features": ("chunk_length",), "heatmap": ()})
    '--chunk-length: streamdp heatmap does not read chunk_length (read by streamdp features)'
    >>> unknown_option("subscribe", ["--frobnicate"], {})
    '--frobnicate: no option of streamdp subscribe'
    >>> unknown_option("budget", ["x"], {})
    'unrecognized arguments: x'
    """
    options = [a for a in extras if a.startswith("-") and len(a) > 1]
    if not options:
        return f"unrecognized arguments: {' '.join(extras)}"
    option = options[0].split("=", 1)[0]
    names = {option_name(f.name): f.name for f in fields(SessionConfig)}
    if option not in names:
        return f"{option}: no option of streamdp {command}"
    field = names[option]
    others = [c for c, table in readers.items() if field in table and c != command]
    where = f" (read by streamdp {', '.join(others)})" if others else ""
    return f"{option}: streamdp {command} does not read {field}{where}"
