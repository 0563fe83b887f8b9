"""The real-time gaze channel's options (``--gaze-channel``, ``--gaze-mechanism``, ``--gaze-epsilon``,
``--gaze-w``, ``--gaze-rate``) as the commands that offer them check them.

The options come from the configuration's ``gaze`` group (:mod:`streamdp.cli.options`); the
configuration refuses a bad value naming its field (``gaze_rate must be > 0``), the gaze mechanism
its own parameters (``epsilon=…``); the command line names the options the user typed instead
(``--gaze-rate must be > 0``), and refuses a gaze option given without ``--gaze-channel`` (it
would change nothing).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from ..config import SessionConfig
from ..errors import StreamdpError
from .options import _GIVEN_DEST, checked, config_fields, config_from, option_name

__all__ = ["gaze_option_names", "gaze_options_checked", "name_gaze_option"]


def name_gaze_option(message: str) -> str:
    """``message`` with a leading gaze field's name written as its option.

    Examples
    --------
    >>> name_gaze_option("gaze_rate must be > 0, got 0.0")
    '--gaze-rate must be > 0, got 0.0'
    >>> name_gaze_option("epsilon must be finite and > 0, got 0.0")
    'epsilon must be finite and > 0, got 0.0'
    """
    for f in config_fields("gaze"):
        if message.startswith(f"{f.name} "):
            return option_name(f.name) + message[len(f.name) :]
    return message


@contextmanager
def gaze_option_names() -> Iterator[None]:
    """A ``TypeError`` or ``ValueError`` raised inside, naming a gaze field first, is raised again
    naming its option (:func:`name_gaze_option`); any other passes unchanged."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        renamed = name_gaze_option(str(exc))
        if renamed == str(exc):
            raise
        raise type(exc)(renamed) from None


def gaze_options_checked(args: argparse.Namespace) -> SessionConfig:
    """:func:`~streamdp.cli.options.checked` of the configuration the options describe, a bad gaze
    option named as an option.

    Raises
    ------
    StreamdpError, InputError
        As :func:`~streamdp.cli.options.config_from` and :func:`~streamdp.cli.options.checked`;
        a gaze option given while the channel is off.
    TypeError, ValueError
        A value the configuration or the gaze mechanism refuses (named as options).
    """
    with gaze_option_names():
        config = config_from(args)
        mechanism_error = _gaze_mechanism_error(config)
        if mechanism_error is not None:
            raise mechanism_error
        config = checked(config)
    given = sorted(getattr(args, _GIVEN_DEST, set()) & {f.name for f in config_fields("gaze")} - {"gaze_channel"})
    if given and not config.gaze_channel:
        options = ", ".join(option_name(name) for name in given)
        raise StreamdpError(f"{options}: the gaze channel is off; give --gaze-channel too")
    return config


def _gaze_mechanism_error(config: SessionConfig) -> Exception | None:
    """The gaze mechanism's refusal of the configuration's parameters, prefixed with the options
    that set them (None: accepted, or the channel is off)."""
    if not config.gaze_channel:
        return None
    try:
        config.gaze_mechanism_instance()
    except (TypeError, ValueError) as exc:
        if name_gaze_option(str(exc)) != str(exc):
            return exc  # a field's own check, named by the caller
        options = (
            f"--gaze-mechanism {config.gaze_mechanism} --gaze-epsilon {config.gaze_epsilon:g} --gaze-w {config.gaze_w}"
        )
        return type(exc)(f"{options}: {exc}")
    return None
