"""What several commands share: loading a recording or synthetic gaze, and optional extras."""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import StreamdpError
from ..gaze import Recording


class MissingExtra(StreamdpError):
    """A command needs an optional extra that is not installed; the message says how to get it."""


def require_extra(module: str, extra: str, command: str) -> ModuleType:
    """Import ``module`` for ``command``, or explain which extra installs it.

    Raises
    ------
    MissingExtra
        ``module`` cannot be imported.

    Examples
    --------
    >>> require_extra("json", "core", "demo").__name__
    'json'
    >>> require_extra("no_such_module_here", "evaluate", "evaluate")
    Traceback (most recent call last):
    ...
    streamdp.cli.common.MissingExtra: streamdp evaluate needs the optional extra: pip install 'streamdp[evaluate]'
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(f"streamdp {command} needs the optional extra: pip install 'streamdp[{extra}]'") from None


def load_recording(path: str | None, synthetic: float | None, seed: int) -> Recording:
    """The recording at ``path`` (any format the readers know), or ``synthetic`` seconds of
    synthetic gaze (default 120) when no path is given.

    Raises
    ------
    InputError
        ``path`` cannot be read.
    """
    if path is None:
        from ..synthetic import generate

        return generate(duration=synthetic or 120.0, seed=seed).recording
    from ..readers import read_recording

    return read_recording(path)

