"""``--config FILE``: a command's configuration from a file, which the options given on the
command line override.

The file is a TOML file of configuration fields (``field = value``, as
:meth:`~streamdp.config.SessionConfig.to_toml` writes one) or a JSON file that holds them (the
``config`` of a ``replay.json``). A key that is no field, or a field the command does not read
(its table ``READS``) set to a value that would change the configuration, is refused naming the
file, the key and the commands that read it: a setting in a file is honoured or refused, as an
option is (:mod:`streamdp.cli.contract`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection
from pathlib import Path
from typing import Any

from ..config import SessionConfig
from ..config.toml_files import UnreadKey
from ..errors import InputError

__all__ = ["CONFIG_FILE_DEST", "add_config_file_option", "load_config_file"]

#: where --config's path is parsed to
CONFIG_FILE_DEST = "config_file"


def add_config_file_option(parser: argparse.ArgumentParser) -> None:
    """``--config FILE``: the configuration from a TOML file (or a ``replay.json``), which the
    options given on the command line override."""
    parser.add_argument(
        "--config",
        dest=CONFIG_FILE_DEST,
        metavar="FILE",
        help="start from a TOML file of configuration fields (field = value, as SessionConfig.to_toml "
        "writes), or the replay.json of a replay; options given here override it (default: none)",
    )


def load_config_file(
    path: str | Path,
    config_type: type[SessionConfig] = SessionConfig,
    *,
    reads: Collection[str] | None = None,
    command: str | None = None,
) -> Any:
    """The configuration in ``path``: a TOML file of fields, or a JSON file that holds them (under
    ``"config"``, as ``replay.json`` does, or at its top level). With ``reads`` (the table of
    ``streamdp command``), a field outside it that the file would change is refused.

    Raises
    ------
    InputError
        The file cannot be read or parsed, has a key that is no field, or one outside ``reads``
        that would change the configuration (named, with the commands that read it).
    TypeError, ValueError
        A value of the wrong type or out of range, named with the file and the field.

    Examples
    --------
    >>> load_config_file("/no/such.toml")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: /no/such.toml: no such file
    """
    reader = f"streamdp {command}" if command else "this command"
    try:
        return _load(Path(path), config_type, reads, reader)
    except UnreadKey as exc:
        raise InputError(f"{exc}{_read_by(exc.key, command)}") from None


def _read_by(field: str, command: str | None) -> str:
    """`` (read by streamdp a, b)``: the commands whose table has ``field``, but ``command``."""
    from . import readers  # imported when needed: the package imports every command, and they this module

    others = [c for c, table in readers().items() if field in table and c != command]
    return f" (read by streamdp {', '.join(others)})" if others else ""


def _load(p: Path, config_type: type[SessionConfig], reads: Collection[str] | None, reader: str) -> Any:
    if p.suffix.lower() != ".json":
        return config_type.from_toml(p, reads=reads, reader=reader)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("config"), dict):
        data = data["config"]
    return config_type.from_mapping(data, source=str(p), reads=reads, reader=reader)
