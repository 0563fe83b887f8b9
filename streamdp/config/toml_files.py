"""Configurations as plain values and TOML files: :class:`ConfigFiles` reads a configuration from
a mapping (a dict, ``describe()``'s output, the ``config`` of a ``replay.json``) or a TOML file and
writes one back; :func:`read_toml` reads a TOML file with one-line errors.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
from collections.abc import Collection, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from ..errors import InputError
from .fields import ConfigFields

_C = TypeVar("_C", bound="ConfigFiles")


class UnreadKey(InputError):
    """A configuration file sets a field its reader does not read: the value would be dropped.

    ``source`` is the file, ``key`` the field.
    """

    def __init__(self, message: str, *, source: str, key: str) -> None:
        super().__init__(message)
        self.source, self.key = source, key


class ConfigFiles(ConfigFields):
    """The fields of a configuration, read from and written to plain values and TOML."""

    @classmethod
    def from_mapping(
        cls: type[_C],
        values: Mapping[str, Any],
        *,
        source: str = "configuration",
        reads: Collection[str] | None = None,
        reader: str = "this command",
    ) -> _C:
        """A configuration from plain values keyed by field name: a dict, a TOML file's
        contents, :meth:`describe`'s output, the ``config`` of a ``replay.json``. Fields not given
        keep their defaults.

        Parameters
        ----------
        values : mapping of str to plain values
            Field names to values; None where the field's default is None.
        source : str
            Named first in error messages (a file's path).
        reads : collection of str, optional
            The fields the configuration's ``reader`` reads (a command's table): a key outside
            it that would change the configuration is refused, never dropped. A key that holds
            the value its field has anyway is let through, so that a whole configuration
            (:meth:`to_toml`, a ``replay.json``) serves every reader it applies to.
        reader : str
            Who reads it, for the message (``"streamdp heatmap"``).

        Raises
        ------
        TypeError
            ``values`` is not a mapping, ``reads`` not a collection of names; a value of the wrong
            type (named).
        InputError
            A key that is no field of the configuration (named, with the nearest field).
        UnreadKey
            A key outside ``reads`` that would change the configuration (named, with ``source``).
        ValueError
            A value out of range (named).

        Examples
        --------
        >>> from streamdp.config import SessionConfig
        >>> SessionConfig.from_mapping({"epsilon": 0.5, "chunk_length": 32}).epsilon
        0.5
        >>> SessionConfig.from_mapping({"epsilom": 0.5})
        Traceback (most recent call last):
        ...
        streamdp.errors.InputError: configuration: unknown key 'epsilom' (did you mean 'epsilon'?)
        >>> SessionConfig.from_mapping({"window": 20.0, "gaze_w": 60}, reads=("window",), reader="x").gaze_w
        60
        >>> SessionConfig.from_mapping({"epsilon": 0.5}, source="s.toml", reads=("window",), reader="streamdp x")
        Traceback (most recent call last):
        ...
        streamdp.config.toml_files.UnreadKey: s.toml: epsilon = 0.5: streamdp x does not read epsilon
        """
        if not isinstance(values, Mapping):
            raise TypeError(f"{source}: a configuration must be a mapping of field names to values, got {values!r}")
        if reads is not None and (isinstance(reads, str) or not all(isinstance(r, str) for r in reads)):
            raise TypeError(f"reads must be a collection of field names (str), got {reads!r}")
        names = [f.name for f in fields(cls)]
        unknown = [k for k in values if k not in names]
        if unknown:
            said = []
            for key in unknown:
                near = difflib.get_close_matches(str(key), names, n=1)
                said.append(f"{key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
            raise InputError(f"{source}: unknown key{'s' if len(said) > 1 else ''} {', '.join(said)}")
        config = cls._named(values, source)
        unread = [k for k in values if reads is not None and k not in reads]
        if unread:
            try:  # what the fields would be without those keys (a signal sets others' defaults)
                without = cls._named({k: v for k, v in values.items() if k not in unread}, source)
            except (TypeError, ValueError):
                without = None
            for key in unread:
                value = getattr(config, key)
                if without is None or getattr(without, key) != value:
                    raise UnreadKey(
                        f"{source}: {key} = {toml_value(value) if value is not None else 'None'}: "
                        f"{reader} does not read {key}",
                        source=source,
                        key=key,
                    )
        return config

    @classmethod
    def _named(cls: type[_C], values: Mapping[str, Any], source: str) -> _C:
        """``cls(**values)``, its errors naming ``source``."""
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:
            if type(exc) in (TypeError, ValueError):
                raise type(exc)(f"{source}: {exc}") from None
            raise

    @classmethod
    def from_toml(
        cls: type[_C],
        path: str | os.PathLike[str],
        *,
        reads: Collection[str] | None = None,
        reader: str = "this command",
    ) -> _C:
        """A configuration from a TOML file of ``field = value`` lines (:meth:`to_toml` writes one).
        A relative ``bounds`` path is relative to the file's folder; a relative ``weights`` file,
        as everywhere, to the working directory (it is kept as given, so that :meth:`to_toml` and
        this give back an equal configuration). ``reads`` and ``reader``: as in
        :meth:`from_mapping`.

        Raises
        ------
        TypeError
            ``path`` is not a str or path.
        InputError
            The file cannot be read, is not TOML, or has a key that is no field (named).
        UnreadKey
            A key outside ``reads`` that would change the configuration (named, with the file).
        TypeError, ValueError
            A value of the wrong type or out of range, named with the file and the field.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be the path of a TOML file (str or Path), got {path!r}")
        values = read_toml(path)
        bounds = values.get("bounds")
        if isinstance(bounds, str) and not Path(bounds).is_absolute():
            values["bounds"] = str(Path(path).parent / bounds)
        return cls.from_mapping(values, source=str(path), reads=reads, reader=reader)

    def to_toml(self) -> str:
        """This configuration as TOML, a commented line per field (unset fields commented out);
        :meth:`from_toml` reads it back to an equal configuration.

        Examples
        --------
        >>> from streamdp.config import SessionConfig
        >>> for line in SessionConfig(epsilon=0.5).to_toml().splitlines():
        ...     if line.startswith(("epsilon =", "# transform")):
        ...         print(line)
        epsilon = 0.5  # ε of one chunk, all features together, split by the weights (default 10)
        # transform: unset (dcfpa/cfpa: transform (default dft))
        """
        lines = ["# streamdp session configuration (SessionConfig.from_toml reads it)"]
        group = None
        for f in fields(self):
            if f.metadata.get("group") != group:
                group = f.metadata.get("group")
                lines += ["", f"# {group}"]
            value, help_text = getattr(self, f.name), f.metadata.get("help", "")
            if value is None:
                lines.append(f"# {f.name}: unset ({help_text})")
            else:
                lines.append(f"{f.name} = {toml_value(value)}  # {help_text}")
        return "\n".join(lines) + "\n"


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The contents of a TOML file (``tomllib``; ``tomli`` before Python 3.11).

    Raises
    ------
    InputError
        The file does not exist, is a folder, cannot be read, or is not valid TOML (the parser's
        message, with line and column).
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a folder, not a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot be read ({exc})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML: {exc}") from None


def toml_value(value: object) -> str:
    """A plain value (bool, int, float or string) as TOML.

    Examples
    --------
    >>> toml_value(0.5), toml_value(True), toml_value("a\\b")
    ('0.5', 'true', '"a\\\\b"')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    # a JSON string is a TOML basic string: the same quotes and escapes
    return json.dumps(str(value), ensure_ascii=False)
