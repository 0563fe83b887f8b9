"""Command-line options generated from :class:`~streamdp.config.SessionConfig`.

Every field of the configuration carries what the command line needs in its metadata: ``help``,
``group`` (``privacy``, ``features`` or ``live``) and optionally ``choices``. A command asks for
the groups it uses; :func:`add_config_options` turns each field of those groups into an option
named after it (``chunk_length`` → ``--chunk-length``) and :func:`config_from` turns the parsed
options back into a :class:`SessionConfig`. A field added to the configuration therefore reaches
every command that uses its group, with no edit here.

Values are converted by the field's type: ``float``, ``int``, ``str`` (with its choices), ``bool``
(``--x``/``--no-x``), optional variants of these, and ``int | str`` (an integer, or one of the
field's ``keywords``, e.g. ``--k private``). The configuration validates the values themselves.
"""

from __future__ import annotations

import argparse
import types
import typing
from collections.abc import Sequence
from dataclasses import MISSING, Field, fields
from functools import lru_cache
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError

#: the option groups a configuration field may belong to, in the order help shows them
GROUPS = ("privacy", "features", "live")

#: words an ``int | str`` field accepts besides integers, for fields whose metadata does not list
#: them under ``keywords``
_KEYWORDS: dict[str, tuple[str, ...]] = {"k": ("private",)}

_GROUPS_DEST = "_config_groups"
_TYPE_DEST = "_config_type"


def option_name(field_name: str) -> str:
    """``chunk_length`` → ``--chunk-length``.

    Examples
    --------
    >>> option_name("max_dispersion")
    '--max-dispersion'
    """
    return "--" + field_name.replace("_", "-")


@lru_cache(maxsize=8)
def _hints(config_type: type) -> dict[str, Any]:
    return typing.get_type_hints(config_type)


def _kinds(annotation: Any) -> set[type]:
    """The types an annotation admits besides None (``int | str | None`` → ``{int, str}``)."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        args = typing.get_args(annotation)
    else:
        args = (annotation,)
    return {a for a in args if a is not type(None)}


def config_fields(group: str, config_type: type = SessionConfig) -> list[Field[Any]]:
    """The fields of ``config_type`` in option group ``group``, in declaration order.

    Raises
    ------
    ValueError
        ``group`` is not one of :data:`GROUPS`.
    """
    if group not in GROUPS:
        raise ValueError(f"group must be one of {', '.join(GROUPS)}, got {group!r}")
    return [f for f in fields(config_type) if f.metadata.get("group") == group]


def field_choices(name: str, config_type: type = SessionConfig) -> tuple[Any, ...]:
    """The ``choices`` a configuration field declares (for commands that offer several at once).

    Raises
    ------
    ValueError
        ``config_type`` has no field ``name``.

    Examples
    --------
    >>> field_choices("transform")
    ('dft', 'dct')
    """
    for f in fields(config_type):
        if f.name == name:
            return tuple(f.metadata.get("choices", ()))
    raise ValueError(f"{config_type.__name__} has no field {name!r}")


def _help(f: Field[Any]) -> str:
    text = str(f.metadata.get("help", "")).replace("%", "%%")
    if _default(f) is not None and "default" not in text:
        text += " (default: %(default)s)"
    return text


def add_config_options(
    parser: argparse.ArgumentParser, groups: Sequence[str], *, config_type: type = SessionConfig
) -> None:
    """Add an option for every field of ``config_type`` in ``groups``, one argument group each.

    Raises
    ------
    ValueError
        An unknown group.
    TypeError
        A field whose type has no command-line form (extend :func:`_argument` for it).
    """
    hints = _hints(config_type)
    for group in groups:
        arg_group = parser.add_argument_group(group)
        for f in config_fields(group, config_type):
            arg_group.add_argument(option_name(f.name), dest=f.name, help=_help(f), **_argument(f, hints[f.name]))
    parser.set_defaults(**{_GROUPS_DEST: tuple(groups), _TYPE_DEST: config_type})


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise TypeError(f"{f.name}: a configuration field needs a default to be an option")


def _argument(f: Field[Any], annotation: Any) -> dict[str, Any]:
    kinds = _kinds(annotation)
    out: dict[str, Any] = {"default": _default(f)}
    if "choices" in f.metadata:
        out["choices"] = tuple(f.metadata["choices"])
    if kinds == {bool}:
        out["action"] = argparse.BooleanOptionalAction
    elif kinds == {int, str}:
        out["metavar"] = "|".join(("N", *_keywords(f)))  # converted in config_from, where errors name the option
    elif len(kinds) == 1 and next(iter(kinds)) in (int, float, str):
        out["type"] = next(iter(kinds))
    else:
        raise TypeError(f"{f.name}: no command-line form for a field of type {annotation!r}")
    return out


def _keywords(f: Field[Any]) -> tuple[str, ...]:
    return tuple(f.metadata.get("keywords", _KEYWORDS.get(f.name, ())))


def _int_or_keyword(f: Field[Any], value: Any) -> Any:
    words = _keywords(f)
    if not isinstance(value, str) or value in words:
        return value
    try:
        return int(value)
    except ValueError:
        alternatives = "".join(f" or {w!r}" for w in words)
        raise StreamdpError(f"{option_name(f.name)} must be an integer{alternatives}, got {value!r}") from None


def config_from(args: argparse.Namespace) -> SessionConfig:
    """The configuration the parsed options of a command describe; fields of groups the command
    does not offer keep their defaults.

    Raises
    ------
    StreamdpError
        An ``int | str`` option is neither an integer nor one of its words.
    TypeError, ValueError
        From :class:`SessionConfig`: a value of the wrong type or out of range.

    Examples
    --------
    >>> parser = argparse.ArgumentParser()
    >>> add_config_options(parser, ["privacy", "features"])
    >>> cfg = config_from(parser.parse_args(["--k", "private", "--max-dispersion", "2", "--chunk-length", "32"]))
    >>> cfg.k, cfg.max_dispersion, cfg.chunk_length, cfg.window
    ('private', 2.0, 32, 30.0)
    """
    groups = getattr(args, _GROUPS_DEST, ())
    config_type = getattr(args, _TYPE_DEST, SessionConfig)
    hints = _hints(config_type)
    values: dict[str, Any] = {}
    for group in groups:
        for f in config_fields(group, config_type):
            value = getattr(args, f.name)
            if _kinds(hints[f.name]) == {int, str}:
                value = _int_or_keyword(f, value)
            values[f.name] = value
    return config_type(**values)
