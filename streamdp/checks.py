"""Checks of parameters shared by the stages and the shells (diffprivlib's convention: a wrong
type raises ``TypeError``, a value out of range ``ValueError``, each naming the parameter and the
value)."""

from __future__ import annotations

import math

__all__ = ["check_seconds"]


def check_seconds(name: str, value: object, *, zero_ok: bool = False) -> float:
    """``value`` as a finite number of seconds > 0 (≥ 0 with ``zero_ok``).

    Raises
    ------
    TypeError
        ``value`` is not an int or a float (a bool is not a number of seconds).
    ValueError
        ``value`` is negative, zero (unless ``zero_ok``), infinite or NaN.

    Examples
    --------
    >>> check_seconds("heartbeat", 1)
    1.0
    >>> check_seconds("offset", -0.1, zero_ok=True)
    Traceback (most recent call last):
    ...
    ValueError: offset must be a finite number of seconds ≥ 0, got -0.1
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number of seconds, got {value!r}")
    if not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
        raise ValueError(f"{name} must be a finite number of seconds {'≥' if zero_ok else '>'} 0, got {value!r}")
    return float(value)
