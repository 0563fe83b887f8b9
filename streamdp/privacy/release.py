"""The only object a sink accepts: a chunk released by the privatizer, sealed, with its ledger.

A :class:`PrivateRelease` has no public constructor, no setter and no ``replace``; its arrays are
read-only views of immutable bytes, and its ledger a read-only mapping of plain values. Only the
privatizer (:class:`streamdp.stages.privatizer.Privatizer`) can make one: it holds this process's
only :class:`ReleaseMint`, which it claims once when it is imported. The mint seals every release
with a keyed BLAKE2b digest of its contents under a random key made when this module is imported
and kept in this process. Every sink calls :func:`check_sealed`, so a release built by hand
(``object.__new__``), changed after it was made, or sealed in another process is refused.

The seal keeps honest code from publishing unsanitized data by mistake or by a shortcut; it is no
sandbox against hostile code running in the same process, which can read any of its memory.

Examples
--------
>>> import numpy as np
>>> from streamdp.privacy import dcfpa, default_profile, secure_generator
>>> from streamdp.stages.chunker import Chunk
>>> from streamdp.stages.privatizer import Privatizer
>>> priv = Privatizer(dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=4), rng=secure_generator(0))
>>> (rel,) = priv.update([Chunk(np.arange(4) * 0.5, np.zeros((4, 52)))])
>>> rel.values.shape, rel.ledger["mechanism"], rel.topic, is_sealed(rel)
((4, 52), 'dcfpa', 'streamdp.features.dcfpa', True)
>>> rel.values.flags.writeable
False
>>> PrivateRelease(rel.t, rel.values, rel.names, {}, 0.0)
Traceback (most recent call last):
...
TypeError: a PrivateRelease is made only by the privatizer (streamdp.stages.privatizer.Privatizer)
"""

from __future__ import annotations

import hmac
import math
import secrets
import sys
import weakref
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..frame_columns import pandas_module
from ..schema import FEATURE_NAMES, SCHEMA_VERSION
from .frozen import digest, freeze, frozen_copy, is_frozen, plain

if TYPE_CHECKING:
    import pandas as pd

#: made once per process, never stored or sent anywhere: a release sealed elsewhere does not verify
_KEY = secrets.token_bytes(32)
#: the modules that make releases, each claiming its handle of the mint once when imported: the
#: chunks' privatizer and the real-time gaze channel's
_PRIVATIZER_MODULES = frozenset({"streamdp.stages.privatizer", "streamdp.stages.gaze_privatizer"})
_mints_claimed: set[str] = set()
# each release the mint made, with the very objects it sealed: every sink checks every release, and
# the same immutable objects need no second digest (9 us a tick on the live channel, per sink)
_MINTED: weakref.WeakKeyDictionary[PrivateRelease, tuple[object, ...]] = weakref.WeakKeyDictionary()

#: ledger entries that stay on the device: raw functions of the gaze (how many inputs were
#: clipped differs between neighbouring chunks with probability 1). :attr:`PrivateRelease.ledger`
#: holds them for logs and the local status; :meth:`PrivateRelease.to_message` never does.
LOCAL_LEDGER_KEYS = frozenset({"clipped_fraction"})


class PrivateRelease:
    """A sanitized chunk: step times ``t`` (n,), ``values`` (n, F), feature ``names``, ``ledger``.

    Made only by the privatizer; read-only. ``clipped_fraction`` is the fraction of inputs clipped
    to the public bounds: a raw function of the gaze, kept on the device (logs, the local status)
    and never part of :meth:`to_message`.

    Raises
    ------
    TypeError
        On any attempt to construct, subclass, pickle or ``dataclasses.replace`` a release.
    AttributeError
        On any attempt to set or delete an attribute.
    """

    __slots__ = ("__weakref__", "_clipped_fraction", "_ledger", "_names", "_seal", "_t", "_values")

    _t: NDArray[np.float64]
    _values: NDArray[np.float64]
    _names: tuple[str, ...]
    _ledger: MappingProxyType[str, Any]
    _clipped_fraction: float
    _seal: bytes

    def __new__(cls, *args: Any, **kwargs: Any) -> PrivateRelease:
        raise TypeError("a PrivateRelease is made only by the privatizer (streamdp.stages.privatizer.Privatizer)")

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("PrivateRelease cannot be subclassed: sinks accept exactly the privatizer's releases")

    def __setattr__(self, name: str, value: Any) -> NoReturn:
        raise AttributeError(f"a PrivateRelease is read-only: cannot set {name!r}")

    def __delattr__(self, name: str) -> NoReturn:
        raise AttributeError(f"a PrivateRelease is read-only: cannot delete {name!r}")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError(
            "a PrivateRelease cannot be pickled: its seal holds only in the process that made it; "
            "send release.to_message() instead"
        )

    def __copy__(self) -> PrivateRelease:
        return self  # immutable: a copy is the release itself

    def __deepcopy__(self, memo: dict[int, Any]) -> PrivateRelease:
        return self

    @property
    def t(self) -> NDArray[np.float64]:
        """Step times (n,), read-only."""
        return self._t

    @property
    def values(self) -> NDArray[np.float64]:
        """Sanitized values (n, F), read-only."""
        return self._values

    @property
    def names(self) -> tuple[str, ...]:
        """Feature names, one per column of :attr:`values`."""
        return self._names

    @property
    def ledger(self) -> Mapping[str, Any]:
        """The ledger entry: mechanism, ε per chunk, ε spent so far, unit, bounds digest, … (read-only)."""
        return self._ledger

    @property
    def clipped_fraction(self) -> float:
        """Fraction of this chunk's inputs clipped to the public bounds. Local only: it is not
        noised, so it is never published (not in :meth:`to_message`)."""
        return self._clipped_fraction

    @property
    def topic(self) -> str:
        """``streamdp.features.<mechanism>`` (a chunk) or ``streamdp.gaze.<mechanism>`` (a tick of
        the real-time gaze channel, whose ledger says ``channel: gaze``): where it is published."""
        return f"streamdp.{self._ledger.get('channel', 'features')}.{self._ledger['mechanism']}"

    def to_message(self) -> dict[str, Any]:
        """The msgpack-ready payload published on :attr:`topic`: plain Python types only
        (msgpack cannot pack numpy scalars). Only public or noised fields: the schema, the step
        times, the noised values and the ledger without its local entries
        (:data:`LOCAL_LEDGER_KEYS`); :attr:`clipped_fraction` stays on the device."""
        return {
            "topic": self.topic,
            "schema_version": SCHEMA_VERSION,
            "names": list(self._names),
            "t": self._t.tolist(),
            "values": self._values.tolist(),
            "ledger": {k: plain(v) for k, v in self._ledger.items() if k not in LOCAL_LEDGER_KEYS},
        }

    def to_pandas(self) -> pd.DataFrame:
        """This release as a pandas DataFrame: ``chunk_index``, ``t`` and the features, a row per
        step (needs the ``pandas`` extra; :func:`releases_frame` joins many)."""
        return releases_frame([self])

    def __repr__(self) -> str:
        led = self._ledger
        return (
            f"PrivateRelease(mechanism={led.get('mechanism')!r}, chunk_index={led.get('chunk_index')!r}, "
            f"steps={len(self._t)}, features={len(self._names)}, epsilon_spent={led.get('epsilon_spent')!r})"
        )


class ReleaseMint:
    """The capability to seal releases. One exists per process; the privatizer claims it.

    Raises
    ------
    TypeError
        On any attempt to construct, subclass, copy or pickle a mint.
    """

    __slots__ = ("_key",)
    _key: bytes

    def __new__(cls, *args: Any, **kwargs: Any) -> ReleaseMint:
        raise TypeError("a ReleaseMint is not constructed: the privatizer holds this process's only one")

    def __init_subclass__(cls, **kwargs: Any) -> NoReturn:
        raise TypeError("ReleaseMint cannot be subclassed")

    def __reduce_ex__(self, protocol: Any) -> NoReturn:
        raise TypeError("a ReleaseMint cannot be copied or pickled")

    def seal(
        self,
        *,
        t: NDArray[np.float64],
        values: NDArray[np.float64],
        names: tuple[str, ...],
        ledger: Mapping[str, Any],
        clipped_fraction: float,
    ) -> PrivateRelease:
        """A release holding read-only copies of ``t`` (n,) and ``values`` (n, F), ``names``
        (F strings), a deep-frozen copy of ``ledger`` (plain values: numbers, strings, None,
        lists, mappings with string keys) and ``clipped_fraction`` in [0, 1].

        Raises
        ------
        TypeError
            A field has the wrong type, or the ledger holds something other than plain values.
        ValueError
            Shapes disagree, a value is not finite, or ``clipped_fraction`` is outside [0, 1].
        """
        key = self._key  # a mint made with object.__new__ has no key: AttributeError
        tt = frozen_copy(t, "t")
        vv = frozen_copy(values, "values")
        if not (isinstance(names, tuple) and all(type(n) is str for n in names)):
            raise TypeError(f"names must be a tuple of str, got {names!r}")
        if tt.ndim != 1 or vv.shape != (len(tt), len(names)):
            raise ValueError(f"t must be (n,) and values (n, {len(names)}), got {tt.shape} and {vv.shape}")
        if not _all_finite(tt, vv):
            raise ValueError("a release's times and values must all be finite")
        if isinstance(clipped_fraction, bool) or not isinstance(clipped_fraction, (int, float)):
            raise TypeError(f"clipped_fraction must be a number, got {clipped_fraction!r}")
        if not 0.0 <= clipped_fraction <= 1.0:
            raise ValueError(f"clipped_fraction must be in [0, 1], got {clipped_fraction!r}")
        if not isinstance(ledger, Mapping):
            raise TypeError(f"ledger must be a mapping, got {type(ledger).__name__}")
        if type(ledger.get("mechanism")) is not str:
            raise ValueError(f"ledger must name the mechanism, got {ledger.get('mechanism')!r}")
        frozen = freeze(ledger, "ledger")
        clipped = float(clipped_fraction)
        rel = object.__new__(PrivateRelease)
        for slot, value in (("_t", tt), ("_values", vv), ("_names", names), ("_ledger", frozen)):
            object.__setattr__(rel, slot, value)
        object.__setattr__(rel, "_clipped_fraction", clipped)
        seal = digest(key, tt, vv, names, frozen, clipped)
        object.__setattr__(rel, "_seal", seal)
        _MINTED[rel] = (tt, vv, names, frozen, clipped, seal)
        return rel


#: up to this many values, finiteness is checked in Python (a gaze tick: 5), where NumPy's
#: per-call cost is the work ten times over
_FEW_VALUES = 16


def _all_finite(t: NDArray[np.float64], values: NDArray[np.float64]) -> bool:
    if t.size + values.size <= _FEW_VALUES:
        return all(map(math.isfinite, t.tolist())) and all(map(math.isfinite, values.ravel().tolist()))
    return bool(np.isfinite(t).all() and np.isfinite(values).all())


def claim_mint() -> ReleaseMint:
    """Hand this process's only :class:`ReleaseMint` to a privatizer module, once each.

    Raises
    ------
    RuntimeError
        Called from anywhere but ``streamdp.stages.privatizer`` or
        ``streamdp.stages.gaze_privatizer``, or a second time from one of them.
    """
    caller = sys._getframe(1).f_globals.get("__name__")
    if caller not in _PRIVATIZER_MODULES or caller in _mints_claimed:
        raise RuntimeError(
            "the release mint belongs to streamdp.stages.privatizer and streamdp.stages.gaze_privatizer, "
            "which claimed it when imported"
        )
    _mints_claimed.add(caller)
    mint = object.__new__(ReleaseMint)
    object.__setattr__(mint, "_key", _KEY)
    return mint


def is_sealed(release: object) -> bool:
    """Whether ``release`` is a genuine, unmodified :class:`PrivateRelease` of this process.

    Examples
    --------
    >>> is_sealed({"values": [[0.0]]}), is_sealed(object.__new__(PrivateRelease))
    (False, False)
    """
    if not isinstance(release, PrivateRelease) or type(release) is not PrivateRelease:
        return False
    try:
        t, values, names = release._t, release._values, release._names
        ledger, clipped, seal = release._ledger, release._clipped_fraction, release._seal
        minted = _MINTED.get(release)
        now = (t, values, names, ledger, clipped, seal)
        if minted is not None and all(a is b for a, b in zip(minted, now, strict=True)):
            return True  # the very objects the mint sealed, all immutable: the digest would be the same
        if not (is_frozen(t) and is_frozen(values) and type(names) is tuple and type(clipped) is float):
            return False
        if type(ledger) is not MappingProxyType or type(seal) is not bytes:
            return False
        expected = digest(_KEY, t, values, names, ledger, clipped)
    except (AttributeError, TypeError, ValueError, OverflowError):
        return False
    return hmac.compare_digest(expected, seal)


def check_sealed(release: object) -> PrivateRelease:
    """Return ``release`` if it is a genuine, unmodified release; what every sink calls first.

    Raises
    ------
    TypeError
        ``release`` is not a :class:`PrivateRelease`, or its seal does not verify (built by hand,
        changed after it was made, or made in another process).

    Examples
    --------
    >>> check_sealed([[0.5, 0.5]])
    Traceback (most recent call last):
    ...
    TypeError: only a PrivateRelease can be published, got list
    """
    if not isinstance(release, PrivateRelease) or type(release) is not PrivateRelease:
        raise TypeError(f"only a PrivateRelease can be published, got {type(release).__name__}")
    if not is_sealed(release):
        raise TypeError(
            "this PrivateRelease's seal does not verify: it was not made by the privatizer of this "
            "process, or was changed after it was made"
        )
    return release


def releases_frame(releases: Iterable[PrivateRelease]) -> pd.DataFrame:
    """Sanitized releases as one DataFrame: ``chunk_index``, ``t`` and the features, a row per step.

    Raises
    ------
    TypeError
        An item is not a :class:`PrivateRelease`.
    InputError
        The releases name different features.
    ImportError
        pandas is not installed.
    """
    pd = pandas_module()
    items = list(releases)
    for i, rel in enumerate(items):
        if not isinstance(rel, PrivateRelease):
            raise TypeError(f"releases[{i}] must be a PrivateRelease, got {type(rel).__name__}")
        if rel.names != items[0].names:
            raise InputError(f"releases[{i}] names other features than releases[0]: they do not fit one DataFrame")
    names = items[0].names if items else FEATURE_NAMES
    values = np.concatenate([r.values for r in items]) if items else np.empty((0, len(names)))
    df = pd.DataFrame(values, columns=list(names))
    df.insert(0, "t", np.concatenate([r.t for r in items]) if items else np.empty(0))
    index = [np.full(len(r.t), int(r.ledger["chunk_index"]), dtype=np.int64) for r in items]
    df.insert(0, "chunk_index", np.concatenate(index) if items else np.empty(0, dtype=np.int64))
    return df
