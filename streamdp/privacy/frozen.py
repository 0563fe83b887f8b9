"""Deep-frozen values and the keyed digest of a release's contents (what :mod:`streamdp.privacy.release` seals).

A release's arrays are views of immutable bytes (NumPy refuses to make them writeable again), its
ledger a tree of read-only mappings and tuples of plain values: once sealed, nothing in it can
change without replacing an object, which the seal's check sees.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray


def _as_dict(value: Any) -> Any:
    # msgpack packs a tuple as the list plain() would make of it; a read-only mapping it asks for
    if type(value) is MappingProxyType:
        return dict(value)
    raise TypeError(f"cannot digest {type(value).__name__}")


#: the bytes msgpack gives for plain(value), without walking value in Python first
_pack = msgpack.Packer(use_bin_type=True, default=_as_dict).pack


def frozen_copy(a: object, name: str) -> NDArray[np.float64]:
    if not isinstance(a, np.ndarray) or a.dtype != np.float64:
        raise TypeError(f"{name} must be a float64 array, got {type(a).__name__} {getattr(a, 'dtype', '')}")
    # a view of immutable bytes: numpy refuses to make it writeable again
    return np.frombuffer(a.tobytes(), dtype=np.float64).reshape(a.shape)


def is_frozen(a: object) -> bool:
    if type(a) is not np.ndarray or a.dtype != np.float64 or a.flags.writeable:
        return False
    base: object = a
    while isinstance(base, np.ndarray):
        base = base.base
    return type(base) is bytes


#: values frozen once and reused by every release that carries them (a privatizer's public ledger
#: fields): by id, with the object itself, so that an id reused by another object never matches
_CONSTANT: dict[int, Any] = {}


def freeze_constant(value: Any, where: str) -> Any:
    """``value`` deep-frozen once, recognised as such by :func:`freeze` in every
    release that carries it (no walk of it per release). It stays alive with the process."""
    frozen = freeze(value, where)
    if type(frozen) in (tuple, MappingProxyType):
        _CONSTANT[id(frozen)] = frozen
    return frozen


def freeze(value: Any, where: str) -> Any:
    if value is None or type(value) in (str, bool, int):
        return value
    if _CONSTANT.get(id(value)) is value:
        return value
    if type(value) is float:
        if not math.isfinite(value):
            raise ValueError(f"{where} is not finite: {value!r}")
        return value
    if isinstance(value, (np.generic, np.ndarray)):
        return freeze(value.tolist() if isinstance(value, np.ndarray) else value.item(), where)
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError(f"{where} keys must be str, got {k!r}")
            kind = type(v)
            # a ledger is mostly scalars: they are taken here, without a call and its label
            if v is None or kind is str or kind is bool or kind is int or (kind is float and math.isfinite(v)):
                out[k] = v
            elif _CONSTANT.get(id(v)) is v:  # frozen once (a tick's public fields): not walked again
                out[k] = v
            else:
                out[k] = freeze(v, f"{where}[{k!r}]")
        return MappingProxyType(out)
    raise TypeError(f"{where} must hold plain values (numbers, strings, None, lists, mappings), got {value!r}")


def plain(value: Any) -> Any:
    if type(value) is MappingProxyType:
        return {k: plain(v) if type(v) in _NESTED else v for k, v in value.items()}
    if type(value) is tuple:
        return [plain(v) if type(v) in _NESTED else v for v in value]
    return value


_NESTED = (MappingProxyType, tuple)


def digest(
    key: bytes,
    t: NDArray[np.float64],
    values: NDArray[np.float64],
    names: tuple[str, ...],
    ledger: MappingProxyType[str, Any],
    clipped: float,
) -> bytes:
    h = hashlib.blake2b(key=key, digest_size=32, person=b"streamdp.release")
    # the header fixes both shapes, so the raw array bytes after it cannot be re-cut
    h.update(_pack([list(t.shape), list(values.shape), list(names), ledger, clipped]))
    h.update(t.tobytes())
    h.update(values.tobytes())
    return h.digest()
