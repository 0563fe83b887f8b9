"""Each mechanism parameter declared once, as a :class:`Parameter`, and what is made from it.

A mechanism class lists its keyword-only parameters in ``parameter_table``; from that one table
come its signature (``inspect.signature``, ``help()``, IPython's completion), the check of every
argument at construction, ``parameters`` (the names a configuration or a command line asks) and
the "Parameters" section of its docstring. A factory such as ``dcfpa(...)`` takes the table of
its class (:func:`takes_parameters_of`), so it can never drift from the class.

The parameters that more than one family takes (the bounds, the chunk length, the transform) are
declared here; each family declares its own beside its classes.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..transforms import TRANSFORMS
from .validation import check_bounds, check_choice, check_chunk_length

#: the default of a parameter that has none
REQUIRED: Any = inspect.Parameter.empty

#: a check: takes the parameter's name and the value given, returns the value to use
Check = Callable[[str, Any], Any]

_F = TypeVar("_F", bound=Callable[..., Any])

# numpydoc sections a generated section must precede, in their documented order
_AFTER_PARAMETERS = ("Attributes", "Returns", "Raises", "Warns", "See Also", "Notes", "References", "Examples")
_AFTER_RAISES = ("Warns", "See Also", "Notes", "References", "Examples")

#: what every mechanism raises for a bad argument (the checks name the parameter and the value)
RAISES = """TypeError
    A parameter of the wrong type, one the mechanism does not take, or a required one missing.
ValueError
    A parameter out of range, named with its value."""


@dataclass(frozen=True)
class Parameter:
    """One keyword-only parameter of a mechanism.

    Parameters
    ----------
    name : str
        The keyword.
    annotation : str
        Its type as the signature shows it.
    doc : str
        What it means and which values it takes, for the docstring.
    default : object, optional
        Its default; :data:`REQUIRED` (the default) when it has none.
    check : callable, optional
        ``check(name, value)`` returns the value to use or raises ``TypeError``/``ValueError``
        naming the parameter and the value. Checks that need other parameters (k against the
        chunk length, say) are the class's, in its ``_construct``.
    doc_type : str, optional
        Its type as the docstring shows it, when not the annotation.

    Examples
    --------
    >>> p = Parameter("window", "int", "w, the subsampling window.", default=8)
    >>> p.signature_parameter()
    <Parameter "window: 'int' = 8">
    >>> print(p.numpydoc())
    window : int, default 8
        w, the subsampling window.
    """

    name: str
    annotation: str
    doc: str
    default: Any = REQUIRED
    check: Check | None = None
    doc_type: str = ""

    def checked(self, value: Any) -> Any:
        """``value`` after the check (as given when there is none)."""
        return value if self.check is None else self.check(self.name, value)

    def signature_parameter(self) -> inspect.Parameter:
        keyword_only = inspect.Parameter.KEYWORD_ONLY
        return inspect.Parameter(self.name, keyword_only, default=self.default, annotation=self.annotation)

    def numpydoc(self) -> str:
        """The entry of a numpydoc "Parameters" section."""
        kind = self.doc_type or self.annotation
        if self.default is not REQUIRED and not self.doc_type:
            kind += f", default {self.default!r}"
        body = textwrap.fill(self.doc, width=96, initial_indent="    ", subsequent_indent="    ")
        return f"{self.name} : {kind}\n{body}"


def optional(check: Check) -> Check:
    """``check``, with ``None`` (use the mechanism's default) let through unchecked."""

    def check_unless_none(name: str, value: Any) -> Any:
        return None if value is None else check(name, value)

    return check_unless_none


def signature_of(table: Iterable[Parameter], return_annotation: Any = inspect.Signature.empty) -> inspect.Signature:
    """The keyword-only signature the table declares."""
    return inspect.Signature([p.signature_parameter() for p in table], return_annotation=return_annotation)


def checked_arguments(owner: str, table: tuple[Parameter, ...], given: Mapping[str, Any]) -> dict[str, Any]:
    """Every parameter of the table, checked, in its order, defaults filled in.

    Raises
    ------
    TypeError
        An argument the table does not declare, or a required one missing (both named); or a
        parameter's check refuses its value.
    ValueError
        A parameter's check refuses its value.
    """
    names = {p.name for p in table}
    for key in given:
        if key not in names:
            raise TypeError(f"{owner}() got an unexpected keyword argument {key!r}")
    out: dict[str, Any] = {}
    for p in table:
        if p.name not in given and p.default is REQUIRED:
            raise TypeError(f"{owner}() missing required keyword argument {p.name!r}")
        out[p.name] = p.checked(given.get(p.name, p.default))
    return out


def _insert_section(doc: str, title: str, body: str, before: tuple[str, ...]) -> str:
    """``doc`` with the numpydoc section ``title`` put before the first of the sections ``before``."""
    lines = doc.splitlines()
    section = [title, "-" * len(title), *body.splitlines(), ""]
    for i in range(len(lines) - 1):
        if lines[i].strip() in before and set(lines[i + 1].strip()) == {"-"}:
            return "\n".join([*lines[:i], *section, *lines[i:]])
    return "\n".join([*lines, "", *section]).rstrip() + "\n"


def document(doc: str, table: tuple[Parameter, ...]) -> str:
    """``doc`` (a docstring) with the "Parameters" section made from the table and, unless it
    has its own, the "Raises" section every mechanism shares."""
    text = inspect.cleandoc(doc)
    if table:
        text = _insert_section(text, "Parameters", "\n".join(p.numpydoc() for p in table), _AFTER_PARAMETERS)
    if "\nRaises\n------" not in text:
        text = _insert_section(text, "Raises", RAISES, _AFTER_RAISES)
    return text


def takes_parameters_of(cls: type) -> Callable[[_F], _F]:
    """Decorate a factory that takes exactly ``cls``'s parameters: it gets ``cls``'s signature and
    its docstring the "Parameters" section, both from ``cls.parameter_table``."""
    table: tuple[Parameter, ...] = cls.parameter_table  # type: ignore[attr-defined]

    def decorate(factory: _F) -> _F:
        factory.__signature__ = signature_of(table, return_annotation=cls.__name__)  # type: ignore[attr-defined]
        factory.__doc__ = document(factory.__doc__ or "", table)
        return factory

    return decorate


#: the public bounds every chunk mechanism and FPA take
BOUNDS = Parameter(
    "bounds",
    "BoundsProfile",
    "The public bounds (and the features' weights); the input is mapped into them before any noise.",
    check=lambda name, value: check_bounds(value),
)

CHUNK_LENGTH = Parameter(
    "chunk_length", "int", "n, a power of two ≥ 2.", check=lambda name, value: check_chunk_length(value)
)

TRANSFORM = Parameter(
    "transform",
    "str",
    'The transform, "dft" (default) or "dct".',
    default="dft",
    check=lambda name, value: check_choice(name, value, tuple(TRANSFORMS)),
    doc_type='{"dft", "dct"}',
)
