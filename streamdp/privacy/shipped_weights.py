"""The shipped allocations of ε over features (``streamdp/data/weights_<name>.json``) and the one
that concentrates as ε falls.

``"task"`` funds the features that carry what a person is doing (``weights``), in the order of
their usefulness after noise (``order``), and how many of them depends on the ε a chunk spends
(``k_by_epsilon``): with little ε one feature released well carries more than twenty released
badly. At an ε where fewer than all are funded the allocation is named ``task@k=K`` (the first
``K`` of the order, weight 1 each), so that a ledger names the split it used and the split can be
rebuilt from the name alone; where all are funded it is ``task`` itself, bit for bit. Each file's
``why`` and ``k_why`` say how it was chosen (public synthetic data only,
``benchmarks/choose_weights.py``).
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..schema import FEATURE_NAMES

__all__ = ["WEIGHTS_PROFILES", "funded_count", "is_shipped", "resolve_weights", "weights_profile"]

#: the named allocations of ε over features shipped in ``streamdp/data/weights_<name>.json``
WEIGHTS_PROFILES = ("equal", "task")

_AT_K = re.compile(r"^(?P<name>[a-z]+)@k=(?P<k>[1-9][0-9]*)$")


@lru_cache(maxsize=4)
def _document(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((Path(__file__).parent.parent / "data" / f"weights_{name}.json").read_text())
    return data


def _full(name: str) -> dict[str, float]:
    if name == "equal":
        return dict.fromkeys(FEATURE_NAMES, 1.0)
    return {str(k): float(v) for k, v in _document(name)["weights"].items()}


def _order(name: str) -> list[str] | None:
    return None if name == "equal" else list(_document(name).get("order") or []) or None


def _parse(name: str) -> tuple[str, int | None] | None:
    """``(allocation, k)`` for a shipped name (``k`` None: every funded feature), else None."""
    if name in WEIGHTS_PROFILES:
        return name, None
    m = _AT_K.match(name)
    if m is None or m["name"] not in WEIGHTS_PROFILES:
        return None
    order = _order(m["name"])
    k = int(m["k"])
    return (m["name"], k) if order is not None and k < len(order) else None


def is_shipped(name: object) -> bool:
    """Whether ``name`` names a shipped allocation, at every ε (``"task"``) or at one count
    (``"task@k=2"``).

    Examples
    --------
    >>> is_shipped("task"), is_shipped("task@k=2"), is_shipped("task@k=0"), is_shipped("pilot")
    (True, True, False, False)
    """
    return isinstance(name, str) and _parse(name) is not None


def weights_profile(name: str) -> dict[str, float]:
    """The shipped weights ``name``, feature → weight: an allocation of :data:`WEIGHTS_PROFILES`
    (every feature it funds), or ``"task@k=K"`` (the first ``K`` of its order, weight 1 each).

    Raises
    ------
    ValueError
        ``name`` is not a shipped allocation.

    Examples
    --------
    >>> w = weights_profile("task")
    >>> sorted(w)[:1], all(v >= 0 for v in w.values())
    (['blink_duration_mean'], True)
    >>> sum(weights_profile("task@k=2").values())
    2.0
    """
    parsed = _parse(name) if isinstance(name, str) else None
    if parsed is None:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS_PROFILES)}, got {name!r}")
    allocation, k = parsed
    full = _full(allocation)
    if k is None:
        return full
    first = set((_order(allocation) or [])[:k])
    return {n: (1.0 if n in first else 0.0) for n in full}


def funded_count(name: str, epsilon: float) -> int | None:
    """How many of the shipped allocation ``name``'s features it funds at a total ε per chunk of
    ``epsilon`` (None: every one, or an allocation whose count does not depend on ε).

    Raises
    ------
    TypeError
        ``epsilon`` is not a number.
    ValueError
        ``name`` is not in :data:`WEIGHTS_PROFILES`; ``epsilon`` not > 0.

    Examples
    --------
    >>> funded_count("task", 200.0) is None, funded_count("task", 10.0) < 26, funded_count("equal", 1.0)
    (True, True, None)
    """
    if name not in WEIGHTS_PROFILES:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS_PROFILES)}, got {name!r}")
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
        raise TypeError(f"epsilon must be a number, got {epsilon!r}")
    if not 0 < epsilon <= math.inf:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    order = _order(name)
    if order is None:
        return None
    table = _document(name).get("k_by_epsilon") or []
    k = next((int(row["k"]) for row in reversed(table) if float(row["from"]) <= epsilon), len(order))
    return None if k >= len(order) else k


def resolve_weights(name: str, epsilon: float | None) -> tuple[str, dict[str, float]]:
    """The shipped allocation ``name`` at a total ε per chunk of ``epsilon`` (None: every funded
    feature, e.g. when ε is stated per feature), as ``(its name at that ε, its weights)``.

    Raises
    ------
    TypeError
        ``epsilon`` is neither a number nor None.
    ValueError
        ``name`` is not in :data:`WEIGHTS_PROFILES`; ``epsilon`` not > 0.

    Examples
    --------
    >>> resolve_weights("task", 200.0)[0], resolve_weights("task", 10.0)[0].startswith("task@k=")
    ('task', True)
    """
    if name not in WEIGHTS_PROFILES:
        raise ValueError(f"weights must be one of {', '.join(WEIGHTS_PROFILES)}, got {name!r}")
    k = None if epsilon is None else funded_count(name, epsilon)
    resolved = name if k is None else f"{name}@k={k}"
    return resolved, weights_profile(resolved)
