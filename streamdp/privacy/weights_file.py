"""Weights files: an allocation of a chunk's ε over the features, kept in a versioned JSON file.

A weights file is what ``streamdp fit-weights`` writes (:mod:`streamdp.offline.fit_weights`) and
what a configuration may name instead of a shipped allocation. It is public: it holds the weight
of each feature and how the weights were made, never the data they were fitted on::

    {"format": "streamdp-weights", "version": 1, "name": "reading-vs-search",
     "weights": {"fixation_rate": 0.031, ...}, "fitted": {...}}

Only ``format``, ``version`` and ``weights`` are read; ``name`` (optional, default the file's stem)
names the allocation in ledgers. A feature the file does not list gets weight 0 (dropped: released
as its public constant); a feature the schema does not know is refused, so a misspelt name cannot
drop a feature unnoticed.

A configuration names a weights file by its path (``SessionConfig(weights="pilot.json")``,
``--weights pilot.json``); its ``weights`` then holds a :class:`WeightsTable`, the path as given
with the allocation read from it, so that a copy of the configuration sent to a worker process or a
dask worker carries the weights and never reads the file again. Every release's ledger names the
allocation (``weights``) and, unless the split is equal, its :func:`weights_digest`
(``weights_digest``), which anyone can recompute from the file.

This module needs only the standard library: a configuration of the relay may load a
weights file without loading the fitting code.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..schema import FEATURE_NAMES

__all__ = [
    "WEIGHTS_FORMAT", "WEIGHTS_VERSION", "WeightsTable", "load_weights_file", "weights_digest", "weights_document",
]

#: the ``format`` of every weights file, and the one ``version`` this streamdp reads
WEIGHTS_FORMAT = "streamdp-weights"
WEIGHTS_VERSION = 1


def _checked_weights(where: str, weights: object) -> dict[str, float]:
    """Every schema feature → its weight (0 where not listed), refused as :func:`load_weights_file`
    says."""
    if not isinstance(weights, Mapping):
        raise InputError(f"{where}: weights must be a table of feature → weight, got {type(weights).__name__}")
    unknown = sorted(str(k) for k in weights if k not in FEATURE_NAMES)
    if unknown:
        shown = ", ".join(map(repr, unknown[:5])) + (" …" if len(unknown) > 5 else "")
        raise InputError(f"{where}: unknown feature(s) {shown}: not in the schema of {len(FEATURE_NAMES)} features")
    out: dict[str, float] = {}
    for name in FEATURE_NAMES:
        value = weights.get(name, 0.0)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputError(f"{where}: weight of {name} is {value!r}, not a number")
        w = float(value)
        if not math.isfinite(w):
            raise InputError(f"{where}: weight of {name} is {w!r}, not a finite number")
        if w < 0:
            raise InputError(f"{where}: weight of {name} is {w!r}: weights must be ≥ 0")
        out[name] = w
    if not any(w > 0 for w in out.values()):
        raise InputError(f"{where}: every weight is 0: no feature would be released")
    return out


def load_weights_file(path: str | os.PathLike[str]) -> tuple[str, dict[str, float]]:
    """The allocation in the weights file at ``path``: its name and every schema feature's weight
    (in schema order, 0 for a feature the file does not list), ready for
    :meth:`BoundsProfile.with_weights <streamdp.privacy.bounds.BoundsProfile.with_weights>`.

    Parameters
    ----------
    path : str or os.PathLike
        A JSON file with ``"format": "streamdp-weights"`` and ``"version": 1`` (see the module
        docstring).

    Returns
    -------
    name : str
        The file's ``name``, or its stem when it has none.
    weights : dict of str to float
        Feature → weight, every feature of the schema, each finite and ≥ 0, at least one > 0.

    Raises
    ------
    TypeError
        ``path`` is not a str or path.
    InputError
        The file cannot be read, is not JSON, is not a weights file (``format``), has a version
        this streamdp does not read, an unknown feature, a weight that is not a finite number ≥ 0,
        or every weight 0; each named with the file.

    Examples
    --------
    >>> import json, tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> doc = weights_document({"fixation_rate": 2.0, "saccade_rate": 1.0}, name="two")
    >>> _ = (folder / "w.json").write_text(json.dumps(doc))
    >>> name, weights = load_weights_file(folder / "w.json")
    >>> name, weights["fixation_rate"], weights["blink_rate"], len(weights)
    ('two', 2.0, 0.0, 52)
    >>> _ = (folder / "bad.json").write_text(json.dumps({**doc, "version": 2}))
    >>> load_weights_file(folder / "bad.json")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: .../bad.json: version 2 of streamdp-weights: this streamdp reads version 1 only
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or path, got {type(path).__name__}")
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such weights file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot read weights file ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        doc: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{p}: not a weights file: expected a JSON object, got {type(doc).__name__}")
    if doc.get("format") != WEIGHTS_FORMAT:
        raise InputError(f"{p}: not a weights file: format is {doc.get('format')!r}, expected {WEIGHTS_FORMAT!r}")
    version = doc.get("version")
    if version != WEIGHTS_VERSION or isinstance(version, bool):
        raise InputError(
            f"{p}: version {version!r} of {WEIGHTS_FORMAT}: this streamdp reads version {WEIGHTS_VERSION} only"
        )
    if "weights" not in doc:
        raise InputError(f"{p}: has no weights")
    name = doc.get("name", p.stem)
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{p}: name must be a non-empty string, got {name!r}")
    return name, _checked_weights(str(p), doc["weights"])


def fitted_epsilon(path: str | os.PathLike[str]) -> float | None:
    """The total ε per chunk the weights file at ``path`` was fitted for (``fitted.epsilon``), None
    when it was fitted for any ε or states none. The file is read as :func:`load_weights_file` reads
    it (call that first: a file it refuses gives None here)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    fitted = doc.get("fitted") if isinstance(doc, dict) else None
    value = fitted.get("epsilon") if isinstance(fitted, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def weights_document(
    weights: Mapping[str, float], *, name: str, fitted: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The JSON document of a weights file (what :func:`load_weights_file` reads back).

    Parameters
    ----------
    weights : mapping of str to float
        Feature → weight (features not listed get 0).
    name : str
        Names the allocation in ledgers; non-empty.
    fitted : mapping, optional
        How the weights were made (public facts only: written as given).

    Raises
    ------
    TypeError
        ``name`` is not a str.
    ValueError
        ``name`` is empty.
    InputError
        The weights are refused as :func:`load_weights_file` refuses them.

    Examples
    --------
    >>> weights_document({"blink_rate": 1.0}, name="blinks")["weights"]["fixation_rate"]
    0.0
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not name.strip():
        raise ValueError(f"name must not be empty, got {name!r}")
    doc: dict[str, Any] = {
        "format": WEIGHTS_FORMAT,
        "version": WEIGHTS_VERSION,
        "name": name,
        "weights": _checked_weights(f"weights {name!r}", weights),
    }
    if fitted is not None:
        doc["fitted"] = dict(fitted)
    return doc


def weights_digest(weights: Mapping[str, float]) -> str:
    """The first 16 hex digits of the SHA-256 of the split ``weights`` make: of
    ``json.dumps({feature: w/Σw for each feature with w > 0}, sort_keys=True)``, UTF-8. A weights
    file (whether it lists its features of weight 0 or not) and the ledger of every release made
    with it give the same digest; weights scaled by a constant split ε alike and digest alike.

    Raises
    ------
    TypeError
        ``weights`` is not a mapping.
    ValueError
        A weight that is not finite, negative, or all of them 0.

    Examples
    --------
    >>> weights_digest({"a": 2.0, "b": 1.0}) == weights_digest({"a": 4.0, "b": 2.0, "c": 0.0})
    True
    >>> len(weights_digest({"a": 1.0}))
    16
    """
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a mapping of feature → weight, got {type(weights).__name__}")
    values = {str(k): float(v) for k, v in weights.items()}
    total = sum(values.values())
    if not all(math.isfinite(v) and v >= 0 for v in values.values()) or not total > 0:
        raise ValueError(f"weights must be finite, ≥ 0 and not all 0, got {values}")
    payload = json.dumps({k: v / total for k, v in values.items() if v > 0}, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


class WeightsTable(str):
    """The ``weights`` of a configuration that is no shipped allocation: this str is where the
    weights came from (a weights file's path, as configured), and the allocation travels with it.

    Two tables are equal when their text and their weights are (a file changed between two
    configurations makes two configurations); a table equals a plain str of the same text, and
    hashes as it. A copy (pickle, ``copy``) keeps the weights and reads no file.

    Parameters
    ----------
    source : str
        Where the weights came from: a file's path as configured, or a description.
    allocation : str
        The allocation's name in ledgers (a weights file's ``name``).
    weights : mapping of str to float, or sequence of float
        Feature → weight (unlisted features 0), or a weight per schema feature in schema order;
        refused as :func:`load_weights_file` refuses a file's.

    Attributes
    ----------
    allocation : str
    weights : tuple of float
        A weight per schema feature, in schema order.
    digest : str
        :func:`weights_digest` of the weights.

    Raises
    ------
    TypeError
        ``source`` or ``allocation`` is not a str.
    ValueError
        ``allocation`` is empty, or ``weights`` is a sequence of the wrong length.
    InputError
        The weights are refused (named with ``source``).

    Examples
    --------
    >>> table = WeightsTable("fold.json", "fold", {"blink_rate": 1.0, "fixation_rate": 3.0})
    >>> table, table.allocation, table.mapping()["fixation_rate"], table == "fold.json"
    ('fold.json', 'fold', 3.0, True)
    >>> import pickle
    >>> pickle.loads(pickle.dumps(table)).digest == table.digest
    True
    """

    allocation: str
    weights: tuple[float, ...]
    digest: str

    #: the total ε per chunk the weights were fitted for (a file's ``fitted.epsilon``), None: any
    epsilon: float | None

    def __new__(cls, source: str, allocation: str, weights: Mapping[str, float] | Sequence[float],
                epsilon: float | None = None) -> WeightsTable:  # fmt: skip
        for name, value in (("source", source), ("allocation", allocation)):
            if not isinstance(value, str):
                raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        if not allocation.strip():
            raise ValueError(f"allocation must not be empty, got {allocation!r}")
        if not isinstance(weights, Mapping):
            values = list(weights)
            if len(values) != len(FEATURE_NAMES):
                raise ValueError(f"weights must be {len(FEATURE_NAMES)} values in schema order, got {len(values)}")
            weights = dict(zip(FEATURE_NAMES, values, strict=True))
        checked = _checked_weights(source, weights)
        self = super().__new__(cls, source)
        self.allocation, self.weights, self.digest = allocation, tuple(checked.values()), weights_digest(checked)
        self.epsilon = epsilon
        return self

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> WeightsTable:
        """The weights file at ``path`` (``~`` expanded; a relative path is relative to the
        working directory), the table's text ``path`` as given.

        Raises
        ------
        TypeError, InputError
            As :func:`load_weights_file`.
        """
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or path, got {type(path).__name__}")
        name, weights = load_weights_file(Path(path).expanduser())
        return cls(os.fspath(path), name, weights, fitted_epsilon(Path(path).expanduser()))

    def mapping(self) -> dict[str, float]:
        """Feature → weight, every schema feature in schema order."""
        return dict(zip(FEATURE_NAMES, self.weights, strict=True))

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (str(self), self.allocation, self.weights, self.epsilon)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, WeightsTable):
            return str.__eq__(self, other) and self.weights == other.weights
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = str.__hash__
