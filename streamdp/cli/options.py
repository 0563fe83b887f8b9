"""Command-line options generated from :class:`~streamdp.config.SessionConfig`.

Every field of the configuration carries what the command line needs in its metadata: ``help``,
``group`` (``privacy``, ``features``, ``gaze`` or ``live``) and optionally ``choices``. Each command
declares, in one table beside it (its ``READS``, made with :func:`reads`), the fields it reads;
:func:`add_config_options` turns each of them, and no other, into an option named after it
(``chunk_length`` → ``--chunk-length``) and :func:`config_from` turns the parsed options back into
a :class:`SessionConfig`. An option of a field the command does not read is no option of it: the
command line refuses it, naming it and the command (:mod:`streamdp.cli.contract`). A field added to
the configuration reaches every command whose table takes its whole group, with no edit here.

Values are converted by the field's type: ``float``, ``int``, ``str`` (with its choices), ``bool``
(``--x``/``--no-x``), optional variants of these, and ``int | str`` (an integer, or one of the
field's ``keywords``, e.g. ``--k private``); a field whose metadata says ``or_file`` takes one of its
choices or a file's path (``--weights task``, ``--weights pilot.json``). The configuration
validates the values themselves;
:func:`config_from` also refuses options that do not apply (``--budget`` under the chunk unit) and
:func:`checked` a mechanism whose noise cannot be drawn (an ε so small its scale overflows).

``--config FILE`` (:mod:`streamdp.cli.config_file`) starts from a TOML file of configuration
fields, or the ``config`` of a ``replay.json``; the options given on the command line override it
(each option records that it was given, so an option set to its default still overrides). A key of
the file that the command does not read, and that would change the configuration, is refused as
its option would be.
"""

from __future__ import annotations

import argparse
import types
import typing
import warnings
from collections.abc import Sequence
from dataclasses import MISSING, Field, fields, replace
from functools import lru_cache
from typing import Any

import numpy as np

from ..config import SessionConfig
from ..errors import StreamdpError
from .config_file import CONFIG_FILE_DEST, load_config_file
from .config_file import add_config_file_option as add_config_file_option

#: the option groups a configuration field may belong to, in the order help shows them
GROUPS = ("privacy", "features", "gaze", "live")

#: words an ``int | str`` field accepts besides integers, for fields whose metadata does not list
#: them under ``keywords``
_KEYWORDS: dict[str, tuple[str, ...]] = {"k": ("private",)}

#: float fields whose None is not their default: the word that sets None on the command line
_NONE_WORD = {"epsilon_ceiling": "none"}


def _float_or_none(text: str) -> float | None:
    return None if text.strip().lower() == "none" else float(text)


_float_or_none.__name__ = "number (or 'none')"  # argparse names the type in its error


#: what a field whose default is None means when unset, where its own help does not say
_UNSET = {"budget": "required by the w-event and session units", "w": "required by the w-event unit"}

_FIELDS_DEST = "_config_fields"
_TYPE_DEST = "_config_type"
_GIVEN_DEST = "_config_given"


def _mark_given(namespace: argparse.Namespace, dest: str) -> None:
    setattr(namespace, _GIVEN_DEST, {*getattr(namespace, _GIVEN_DEST, ()), dest})


class GivenValue(argparse.Action):
    """Stores the value and records that the option was given (it overrides ``--config``)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        setattr(namespace, self.dest, values)
        _mark_given(namespace, self.dest)


class _GivenFlag(argparse.BooleanOptionalAction):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        super().__call__(parser, namespace, values, option_string)
        _mark_given(namespace, self.dest)


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
    return [f for f in fields(config_type) if group in (f.metadata.get("group"), *f.metadata.get("also", ()))]


def reads(*groups: str, but: Sequence[str] = (), plus: Sequence[str] = ()) -> tuple[str, ...]:
    """A command's table of the configuration fields it reads: every field of ``groups``, but
    ``but``, and ``plus``, in the configuration's order.

    Raises
    ------
    ValueError
        An unknown group, or a name in ``but`` or ``plus`` that is no field of the configuration.

    Examples
    --------
    >>> reads("gaze", but=("gaze_channel",))
    ('gaze_mechanism', 'gaze_epsilon', 'gaze_w', 'gaze_rate', 'gaze_smoothing')
    >>> reads(plus=("seed", "budget"))
    ('budget', 'seed')
    """
    names = {f.name for f in fields(SessionConfig)}
    unknown = [n for n in (*but, *plus) if n not in names]
    if unknown:
        raise ValueError(f"no field of SessionConfig: {', '.join(unknown)}")
    chosen = {f.name for g in groups for f in config_fields(g)} - set(but) | set(plus)
    return tuple(f.name for f in fields(SessionConfig) if f.name in chosen)


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
    if "default" in text:
        return text
    if _default(f) is None:
        return f"{text} (default: unset; {_UNSET[f.name]})" if f.name in _UNSET else f"{text} (default: unset)"
    if _kinds(_hints(SessionConfig).get(f.name, float)) == {bool}:
        return text  # BooleanOptionalAction adds the default itself
    return text + " (default: %(default)s)"


def add_config_options(
    parser: argparse.ArgumentParser, read: Sequence[str], *, config_type: type = SessionConfig
) -> None:
    """Add an option for every field of ``config_type`` the command reads, in an argument group
    per option group (help shows them in :data:`GROUPS` order). ``read`` names fields, or whole
    groups (every field of the group).

    Raises
    ------
    ValueError
        A name that is neither a field nor a group.
    TypeError
        A field whose type has no command-line form (extend :func:`_argument` for it).
    """
    hints = _hints(config_type)
    by_name = {f.name: f for f in fields(config_type)}
    wanted: set[str] = set()
    for name in read:
        if name in GROUPS:
            wanted.update(f.name for f in config_fields(name, config_type))
        elif name in by_name:
            wanted.add(name)
        else:
            raise ValueError(f"{name!r} is neither a field of {config_type.__name__} nor a group")
    chosen = [f for f in fields(config_type) if f.name in wanted]
    for group in GROUPS:
        members = [f for f in chosen if f.metadata.get("group") == group]
        if members:
            arg_group = parser.add_argument_group(group)
            for f in members:
                arg_group.add_argument(option_name(f.name), dest=f.name, help=_help(f), **_argument(f, hints[f.name]))
    parser.set_defaults(**{_FIELDS_DEST: tuple(f.name for f in chosen), _TYPE_DEST: config_type})


def config_fields_read(args: argparse.Namespace) -> tuple[str, ...]:
    """The configuration fields the parsed command offers as options (its table)."""
    return tuple(getattr(args, _FIELDS_DEST, ()))


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    raise TypeError(f"{f.name}: a configuration field needs a default to be an option")


def _argument(f: Field[Any], annotation: Any) -> dict[str, Any]:
    kinds = _kinds(annotation)
    out: dict[str, Any] = {"default": _default(f), "action": GivenValue}
    if "choices" in f.metadata and f.metadata.get("or_file"):
        # a name among the choices or a file's path: the configuration tells which, and checks it
        out["metavar"] = "{" + ",".join(map(str, f.metadata["choices"])) + "}|FILE"
    elif "choices" in f.metadata:
        out["choices"] = tuple(f.metadata["choices"])
    if kinds == {bool}:
        out["action"] = _GivenFlag
    elif kinds == {int, str}:
        out["metavar"] = "|".join(("N", *_keywords(f)))  # converted in config_from, where errors name the option
    elif f.name in _NONE_WORD:
        out["type"] = _float_or_none
        out["metavar"] = f"X|{_NONE_WORD[f.name]}"
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
    """The configuration the parsed options of a command describe: the ``--config`` file's, if
    one was given, with the options given on the command line over it; otherwise the options,
    fields the command does not read keeping their defaults.

    Raises
    ------
    StreamdpError
        An ``int | str`` option is neither an integer nor one of its words; ``--budget`` or
        ``--w`` where the unit does not use them.
    InputError
        The ``--config`` file cannot be read, has a key that is no field, or one the command does
        not read that would change the configuration.
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
    config_type = getattr(args, _TYPE_DEST, SessionConfig)
    hints = _hints(config_type)
    read = set(config_fields_read(args))
    values: dict[str, Any] = {}
    for f in fields(config_type):
        if f.name in read:
            value = getattr(args, f.name)
            if _kinds(hints[f.name]) == {int, str}:
                value = _int_or_keyword(f, value)
            values[f.name] = value
    path = getattr(args, CONFIG_FILE_DEST, None)
    if path:
        given: set[str] = getattr(args, _GIVEN_DEST, set())
        command = getattr(args, "command", None)
        base = load_config_file(path, config_type, reads=read, command=command)
        config = replace(base, **{name: v for name, v in values.items() if name in given})
    else:
        config = config_type(**values)
    return config


def checked(config: SessionConfig) -> SessionConfig:
    """``config`` once everything it builds was built and its mechanism has drawn the noise of
    one chunk (on a generator of its own: no release is affected), so that a bad option fails
    before any socket, file or worker exists.

    Raises
    ------
    StreamdpError
        The noise is not finite: ε so small that its scale overflows (named).
    TypeError, ValueError
        From :meth:`SessionConfig.check`.

    Examples
    --------
    >>> checked(SessionConfig(epsilon=2.0)).epsilon
    2.0
    >>> try:  # refused here, or already by the mechanism's own check
    ...     checked(SessionConfig(epsilon=1e-300))
    ... except (StreamdpError, ValueError) as exc:
    ...     print("refused:", "overflows" in str(exc))
    refused: True
    """
    from ..privacy.noise import secure_generator

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an overflow is reported below, as a sentence
        mech = config.check().mechanism_instance()
        probe = np.zeros((config.chunk_length, mech.n_features))
        try:
            finite = bool(np.isfinite(mech.privatize(probe, secure_generator(0)).values).all())
        except (ValueError, OverflowError, FloatingPointError):
            finite = False
    if not finite:
        raise StreamdpError(
            f"ε ({config.epsilon or config.epsilon_per_feature:g}) is so small that the noise scale "
            "overflows: choose a larger ε"
        )
    return config
