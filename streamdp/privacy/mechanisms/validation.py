"""Validation of mechanism parameters, and arrays that can never be written.

Every check names the parameter and the value it refuses: a value of the wrong type raises
``TypeError``, a value of the right type out of range ``ValueError``. Booleans are refused where a
number is expected (``True`` is an ``int`` to Python, never a meaningful ε).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import DTypeLike, NDArray

from ..bounds import BoundsProfile

_REAL = (int, float, np.integer, np.floating)
_INT = (int, np.integer)


def check_real(name: str, value: object) -> float:
    """``value`` as a float; ``TypeError`` unless it is a real number (and not a bool)."""
    if isinstance(value, bool) or not isinstance(value, _REAL):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    return float(value)


def check_epsilon(name: str, value: object) -> float:
    """A finite real number ``> 0`` (ε, and anything else that must be strictly positive).

    Examples
    --------
    >>> check_epsilon("epsilon", 2)
    2.0
    >>> check_epsilon("epsilon", 0.0)
    Traceback (most recent call last):
    ...
    ValueError: epsilon must be finite and > 0, got 0.0
    """
    v = check_real(name, value)
    if math.isnan(v) or not (0.0 < v < math.inf):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def check_fraction(name: str, value: object) -> float:
    """A real number in the open interval (0, 1)."""
    v = check_real(name, value)
    if not 0.0 < v < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


def check_int(name: str, value: object) -> int:
    """``value`` as an int; ``TypeError`` unless it is an integer (and not a bool)."""
    if isinstance(value, bool) or not isinstance(value, _INT):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


def check_positive_int(name: str, value: object) -> int:
    """An integer ``≥ 1``."""
    v = check_int(name, value)
    if v < 1:
        raise ValueError(f"{name} must be ≥ 1, got {v}")
    return v


def check_chunk_length(value: object) -> int:
    """A chunk length: a power of two ``≥ 2``.

    Raises
    ------
    TypeError
        ``value`` is not an int.
    ValueError
        ``value`` is not a power of two ≥ 2.

    Examples
    --------
    >>> check_chunk_length(64)
    64
    >>> check_chunk_length(48)
    Traceback (most recent call last):
    ...
    ValueError: chunk_length must be a power of two ≥ 2, got 48
    """
    n = check_int("chunk_length", value)
    if n < 2 or n & (n - 1):
        raise ValueError(f"chunk_length must be a power of two ≥ 2, got {n}")
    return n


def check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    """One of the strings ``choices``: ``TypeError`` for a non-string, ``ValueError`` for another string.

    Examples
    --------
    >>> check_choice("transform", 5, ("dft", "dct"))
    Traceback (most recent call last):
    ...
    TypeError: transform must be a str, 'dft' or 'dct', got 5
    """
    listed = ", ".join(repr(c) for c in choices[:-1]) + f" or {choices[-1]!r}" if len(choices) > 1 else repr(choices[0])
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, {listed}, got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be {listed}, got {value!r}")
    return value


def check_bounds(value: object) -> BoundsProfile:
    """A :class:`~streamdp.privacy.bounds.BoundsProfile`."""
    if not isinstance(value, BoundsProfile):
        raise TypeError(f"bounds must be a BoundsProfile, got {type(value).__name__}")
    return value


def frozen_array(values: Any, dtype: DTypeLike | None = None) -> NDArray[Any]:
    """A copy of ``values`` that no one can write, not even after ``setflags(write=True)``.

    The array is a view of an immutable ``bytes`` object: NumPy refuses to make a view of a
    read-only buffer writeable, whereas ``setflags(write=False)`` on an array that owns its memory
    can be undone by anyone holding it.

    Examples
    --------
    >>> a = frozen_array([1.0, 2.0])
    >>> a.setflags(write=True)
    Traceback (most recent call last):
    ...
    ValueError: cannot set WRITEABLE flag to True of this array
    """
    arr = np.ascontiguousarray(values, dtype=dtype)
    return np.frombuffer(arr.tobytes(), dtype=arr.dtype).reshape(arr.shape)
