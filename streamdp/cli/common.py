"""What several commands share: loading a recording or synthetic gaze, optional extras, and
output files that are checked before any work and appear whole or not at all."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from ..errors import InputError, StreamdpError
from ..gaze import Recording
from ..offline.results import check_writable_place


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



def output_file(path: str | Path, suffixes: Sequence[str], *, option: str = "--out") -> Path:
    """``path`` checked as an output file before any work: a known extension, not a folder, not
    under a file, in a place where files can be created. Nothing is created.

    Raises
    ------
    InputError
        Any of these does not hold, named with ``option`` and the path.

    Examples
    --------
    >>> output_file("rows.txt", (".csv", ".npz"))
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: --out rows.txt: unknown extension '.txt': give a file ending in .csv or .npz
    """
    p = Path(path)
    what = f"{option} {p}"
    if p.is_dir():
        raise InputError(f"{what}: is a folder: give a file name ending in {' or '.join(suffixes)}")
    if p.suffix.lower() not in suffixes:
        ext = f"extension {p.suffix!r}" if p.suffix else "file without an extension"
        raise InputError(f"{what}: unknown {ext}: give a file ending in {' or '.join(suffixes)}")
    check_writable_place(p, what)
    return p


def write_atomically(path: Path, write: Callable[[Path], object], *, option: str = "--out") -> None:
    """Call ``write`` on ``path`` + ``.partial`` (creating the folders it needs), then rename it
    to ``path``: nothing half-written ever has the final name, and the partial file is removed
    when writing fails or is interrupted.

    Raises
    ------
    InputError
        The file cannot be written (named, with the reason).
    """
    tmp = path.with_name(path.name + ".partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(tmp)
        tmp.replace(path)
    except OSError as exc:
        raise InputError(f"{option} {path}: cannot be written ({exc.strerror or exc})") from None
    finally:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass  # its folder could not be made: there is nothing to remove
