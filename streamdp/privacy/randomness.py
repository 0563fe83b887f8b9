"""Random bits for the noise: the operating system's CSPRNG for releases, a seeded generator for
tests and research.

Why not a NumPy ``Generator``: NumPy's bit generators (PCG64, MT19937, Philox…) are fast but not
cryptographic: their output reveals their state, so after enough releases an observer could
predict the next noise and subtract it. :class:`SystemRandomSource` reads its bits from
``os.urandom`` (the kernel's CSPRNG, ``getrandom(2)`` on Linux), in bulk: one system call fills a
pool from which whole arrays of 64-bit words are cut with ``np.frombuffer``. It needs nothing
beyond the standard library and NumPy. :class:`SeededRandomSource` draws the same kind of words
from NumPy's PCG64 under a seed: reproducible, and therefore not private; its releases say so.

A source offers the few NumPy ``Generator`` methods the mechanisms call (``integers``, ``random``,
``gumbel``, with NumPy's semantics) built on its own words; the exact noise samplers
(:mod:`streamdp.privacy.exact_samplers`) use the words directly and no floating point.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

#: what a release's ledger says under ``"generator"`` about where its noise came from
CRYPTOGRAPHIC = "cryptographic"
REPRODUCIBLE = "reproducible, not private"

_U64 = NDArray[np.uint64]
_TWO63 = np.uint64(1 << 63)
_AHEAD_INIT = threading.Lock()


class RandomSource(ABC):
    """Uniform random 64-bit words, and NumPy-style draws built on them.

    Subclasses implement :meth:`words`; ``ledger_label`` says in every release whether the noise
    can be predicted (``"reproducible, not private"``) or not (``"cryptographic"``).
    """

    #: the ledger value under ``"generator"``
    ledger_label: ClassVar[str]
    #: whether :meth:`take_ahead` keeps draws for later calls (not for a wrapper built per call)
    keeps_draws_ahead: ClassVar[bool] = True

    @property
    def cryptographic(self) -> bool:
        """Whether an observer of earlier outputs cannot predict the next ones."""
        return self.ledger_label == CRYPTOGRAPHIC

    @abstractmethod
    def words(self, count: int) -> _U64:
        """``count`` independent uniform 64-bit words (a fresh, possibly read-only, array)."""

    def take_ahead(
        self, key: str, count: int, draw: Callable[[int], tuple[NDArray[np.generic], ...]], batch: int
    ) -> tuple[NDArray[np.generic], ...]:
        """``count`` rows of ``draw``'s i.i.d. rows, cut from rows drawn ``batch`` at a time.

        A sampler whose draws do not depend on its arguments (the discrete Laplace's ``(U, V)``
        pairs do not depend on the scale) draws them in large batches, where NumPy's per-call
        cost is spread over many values, and keeps the rest here for the next call. Rows are
        handed out once, in order, under a lock; a forked child drops what it inherited (else
        parent and child would add the same noise). ``draw(n)`` returns arrays of ``n`` rows.
        """
        if count > batch or not self.keeps_draws_ahead:
            return draw(count)
        with _AHEAD_INIT:
            state = self.__dict__.setdefault("_ahead", {"lock": threading.Lock(), "pid": os.getpid(), "rows": {}})
        with state["lock"]:
            if state["pid"] != os.getpid():
                state["pid"], state["rows"] = os.getpid(), {}
            arrays, start = state["rows"].get(key, ((), 0))
            if not arrays or arrays[0].shape[0] - start < count:
                fresh = draw(batch)
                if arrays:  # the rows left over come first: every row is used once
                    fresh = tuple(np.concatenate((a[start:], f)) for a, f in zip(arrays, fresh, strict=True))
                arrays, start = fresh, 0
            state["rows"][key] = (arrays, start + count)
        return tuple(a[start : start + count] for a in arrays)

    def __getstate__(self) -> dict[str, object]:
        # a copy continues exactly where the original is (a seeded source's state is copied too;
        # the OS source refuses to be copied at all): the draws kept ahead go with it, not its lock
        state = dict(self.__dict__)
        if "_ahead" in state:
            ahead = state["_ahead"]
            assert isinstance(ahead, dict)
            state["_ahead"] = {**ahead, "lock": None, "rows": dict(ahead["rows"])}
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        ahead = state.get("_ahead")
        if isinstance(ahead, dict):
            state["_ahead"] = {**ahead, "lock": threading.Lock()}
        self.__dict__.update(state)

    def words32(self, count: int) -> NDArray[np.uint32]:
        """``count`` independent uniform 32-bit words."""
        return self.words((count + 1) // 2).view(np.uint32)[:count]

    def words16(self, count: int) -> NDArray[np.uint16]:
        """``count`` independent uniform 16-bit words."""
        return self.words((count + 3) // 4).view(np.uint16)[:count]

    def below(self, bound: int | _U64, count: int) -> _U64:
        """``count`` integers uniform on ``[0, bound)``, exactly: a 63-bit word ``w`` below the
        largest multiple ``q·bound`` of ``bound`` gives ``w // q``; words above it (a fraction
        below ``bound / 2⁶³``) are drawn again. ``bound`` is a scalar or one per draw, ≤ 2⁶³."""
        b = np.broadcast_to(np.asarray(bound, dtype=np.uint64), (count,))
        if np.any(b == 0):
            raise ValueError("bound must be ≥ 1")
        q = _TWO63 // b
        limit = q * b
        w = self.words(count) >> np.uint64(1)
        bad = np.flatnonzero(w >= limit)
        while bad.size:
            w[bad] = self.words(bad.size) >> np.uint64(1)
            bad = bad[w[bad] >= limit[bad]]
        return np.asarray(w // q, dtype=np.uint64)

    def integers(
        self,
        low: int | NDArray[np.integer],
        high: int | NDArray[np.integer] | None = None,
        size: int | tuple[int, ...] | None = None,
    ) -> NDArray[np.int64] | int:
        """Integers uniform on ``[low, high)`` (``[0, low)`` when ``high`` is None), as
        ``numpy.random.Generator.integers`` with its default ``endpoint=False``.

        Raises
        ------
        ValueError
            ``high ≤ low`` somewhere.

        Examples
        --------
        >>> int(SeededRandomSource(3).integers(5, 6))
        5
        """
        lo, hi = (0, low) if high is None else (low, high)
        lo_a, hi_a = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
        shape = np.broadcast_shapes(lo_a.shape, hi_a.shape) if size is None else _shape(size)
        lo_b, hi_b = np.broadcast_to(lo_a, shape), np.broadcast_to(hi_a, shape)
        if np.any(hi_b <= lo_b):
            raise ValueError(f"high must be > low, got low={low!r}, high={high!r}")
        span = (hi_b - lo_b).astype(np.uint64).ravel()
        draws = self.below(span, span.size).astype(np.int64).reshape(shape) + lo_b
        return int(draws) if size is None and draws.ndim == 0 else draws

    def random(self, size: int | tuple[int, ...] | None = None) -> NDArray[np.float64] | float:
        """Floats uniform on ``[0, 1)`` on the grid ``2⁻⁵³ℤ``, as ``Generator.random``."""
        shape = () if size is None else _shape(size)
        u = (self.words(int(np.prod(shape))) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        return float(u[0]) if size is None else u.reshape(shape)

    def gumbel(
        self, loc: float = 0.0, scale: float = 1.0, size: int | tuple[int, ...] | None = None
    ) -> NDArray[np.float64] | float:
        """Gumbel variables ``loc - scale·log(-log U)``, ``U`` on the open grid ``(k + ½)·2⁻⁵³``,
        as ``Generator.gumbel`` (floating point: for the exponential mechanism's selection)."""
        shape = () if size is None else _shape(size)
        k = (self.words(int(np.prod(shape))) >> np.uint64(11)).astype(np.float64)
        g = loc - scale * np.log(-np.log((k + 0.5) * 2.0**-53))
        return float(g[0]) if size is None else g.reshape(shape)


def _shape(size: int | tuple[int, ...]) -> tuple[int, ...]:
    return (int(size),) if isinstance(size, (int, np.integer)) else tuple(int(s) for s in size)


class SystemRandomSource(RandomSource):
    """Bits from the operating system's CSPRNG (``os.urandom``): unpredictable, for releases.

    Words are cut from a pool refilled by one ``os.urandom`` call of at least ``pool_bytes``; a
    lock keeps two threads from ever receiving the same words, and a forked child drops the pool
    it inherited (else parent and child would add the same noise).

    Examples
    --------
    >>> src = SystemRandomSource()
    >>> src.ledger_label, src.words(3).dtype, bool(src.integers(0, 10, 1000).max() <= 9)
    ('cryptographic', dtype('uint64'), True)
    """

    ledger_label: ClassVar[str] = CRYPTOGRAPHIC

    def __init__(self, pool_bytes: int = 8192) -> None:
        self._pool_bytes = int(pool_bytes)
        self._lock = threading.Lock()
        self._pool = b""
        self._offset = 0
        self._pid = os.getpid()

    def words(self, count: int) -> _U64:
        need = 8 * count
        with self._lock:
            if os.getpid() != self._pid:
                self._pool, self._offset, self._pid = b"", 0, os.getpid()
            left = len(self._pool) - self._offset
            if left < need:
                # the bytes left are kept (they were paid for): the kernel's cost is per byte
                rest = self._pool[self._offset :] if left else b""
                self._pool, self._offset = rest + os.urandom(max(need - left, self._pool_bytes)), 0
            start = self._offset
            self._offset += need
            pool = self._pool
        # a copy: the caller may write into it, and the pool's bytes must not be handed out twice
        return np.frombuffer(pool, dtype=np.uint64, count=count, offset=start).copy()

    def __repr__(self) -> str:
        return "SystemRandomSource()"


class SeededRandomSource(RandomSource):
    """Words from NumPy's PCG64 under ``seed``: reproducible, hence **not private** (its output
    reveals its state); for tests, simulations and research only. Releases made with it say
    ``"reproducible, not private"`` and network sinks refuse them.

    Raises
    ------
    TypeError
        ``seed`` is not an int.

    Examples
    --------
    >>> a, b = SeededRandomSource(7), SeededRandomSource(7)
    >>> bool((a.words(4) == b.words(4)).all()), a.ledger_label
    (True, 'reproducible, not private')
    """

    ledger_label: ClassVar[str] = REPRODUCIBLE

    def __init__(self, seed: int) -> None:
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
            raise TypeError(f"seed must be an int, got {seed!r}")
        self._seed = int(seed)
        self._bits = np.random.PCG64(self._seed)

    def words(self, count: int) -> _U64:
        return np.asarray(self._bits.random_raw(count), dtype=np.uint64)

    def __repr__(self) -> str:
        return f"SeededRandomSource({self._seed})"


class GeneratorRandomSource(RandomSource):
    """Words from a NumPy ``Generator``'s bit generator: whatever it is, its seed may be known,
    so releases say ``"reproducible, not private"``. Lets simulations pass
    ``np.random.default_rng(seed)`` where a source is expected."""

    ledger_label: ClassVar[str] = REPRODUCIBLE
    keeps_draws_ahead: ClassVar[bool] = False

    def __init__(self, generator: np.random.Generator) -> None:
        if not isinstance(generator, np.random.Generator):
            raise TypeError(f"generator must be a numpy Generator, got {generator!r}")
        self.generator = generator

    def words(self, count: int) -> _U64:
        return np.asarray(self.generator.bit_generator.random_raw(count), dtype=np.uint64)

    def __repr__(self) -> str:
        return f"GeneratorRandomSource({self.generator!r})"


def as_random_source(rng: object, name: str = "rng") -> RandomSource:
    """``rng`` as a :class:`RandomSource`: a source as it is, a NumPy ``Generator`` wrapped
    (reproducible, not private).

    Raises
    ------
    TypeError
        Anything else (a seed, a ``RandomState``, a bit generator), with the hint to build one.

    Examples
    --------
    >>> as_random_source(np.random.default_rng(0)).ledger_label
    'reproducible, not private'
    >>> as_random_source(42)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: rng must be a random source (streamdp.privacy.secure_generator(), ...) or a numpy Generator, got 42
    """
    if isinstance(rng, RandomSource):
        return rng
    if isinstance(rng, np.random.Generator):
        return GeneratorRandomSource(rng)
    raise TypeError(
        f"{name} must be a random source (streamdp.privacy.secure_generator(), or secure_generator(seed) for "
        f"reproducible, not private noise) or a numpy Generator, got {rng!r}"
    )
