"""Gaze positions on a public tick grid: one position per tick for interactive apps (issue #20).

:class:`GazeTicks` turns ordered gaze into one position in degrees per tick ``t_k = k / rate``
(``k`` an integer) of the source clock. Like the step grid of the features
(:mod:`streamdp.stages.schedule`), the grid is public: gaps, blinks and restarts never move it,
and the number and times of the ticks between two times never depend on the gaze. The ticks are
raw: a privacy mechanism noises ``deg`` before anything leaves the device, and ``has_gaze`` (a
raw function of the gaze) never leaves it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import TimestampOrderError
from ..gaze import GazeBatch
from ..kernels.geometry import norm_to_degrees
from .base import Stage
from .event_config import EventConfig

_F64 = NDArray[np.float64]

#: the public tick rate of the real-time channel, Hz
DEFAULT_TICK_RATE = 60.0
_EVENTS = EventConfig()


@dataclass(frozen=True, eq=False)
class Ticks:
    """Gaze positions at public ticks. Raw: never leaves the device unnoised.

    Attributes
    ----------
    t : array of float, shape (m,)
        Tick times ``k / rate`` on the source clock.
    deg : array of float, shape (m, 2)
        Mean gaze (azimuth, elevation) in degrees of the tick's usable samples; the public
        centre (0.0, 0.0) where it has none.
    has_gaze : array of bool, shape (m,)
        Whether the tick had a usable sample. A raw function of the gaze: keep it local.
    """

    t: _F64
    deg: _F64
    has_gaze: NDArray[np.bool_]

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @classmethod
    def empty(cls) -> Ticks:
        return cls(np.empty(0), np.empty((0, 2)), np.empty(0, dtype=bool))

    @staticmethod
    def concat(parts: Sequence[Ticks]) -> Ticks:
        """Join tick batches in order.

        Examples
        --------
        >>> a = Ticks(np.array([0.5]), np.zeros((1, 2)), np.array([False]))
        >>> len(Ticks.concat([a, Ticks.empty(), a]))
        2
        """
        parts = [p for p in parts if len(p)]
        if not parts:
            return Ticks.empty()
        if len(parts) == 1:
            return parts[0]
        return Ticks(
            np.concatenate([p.t for p in parts]),
            np.concatenate([p.deg for p in parts]),
            np.concatenate([p.has_gaze for p in parts]),
        )


def _number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"GazeTicks {name} must be a number, got {value!r}")
    return float(value)


def _check_fov(fov_deg: object) -> tuple[float, float]:
    if not isinstance(fov_deg, (tuple, list)) or len(fov_deg) != 2:
        raise TypeError(f"GazeTicks fov_deg must be a tuple of two numbers, got {fov_deg!r}")
    h, v = (_number("fov_deg", a) for a in fov_deg)
    if not all(math.isfinite(a) and 0.0 < a < 180.0 for a in (h, v)):
        raise ValueError(f"GazeTicks fov_deg must hold two angles in (0, 180) degrees, got {fov_deg!r}")
    return (h, v)


class GazeTicks(Stage[GazeBatch, Ticks]):
    """Ordered gaze in, one position per public tick out (a :class:`~streamdp.stages.base.Stage`).

    Tick ``k`` lies at ``t_k = k / rate`` on the source clock and covers the samples with ``t``
    in ``(t_{k-1}, t_k]`` (``t_k − 1/rate`` taken on the grid itself, so the intervals tile the
    clock and every sample lies in exactly one tick). Its position is the mean, in degrees
    (:func:`~streamdp.kernels.geometry.norm_to_degrees` with ``fov_deg``), of its usable samples
    (``valid`` and ``confidence >= min_confidence``): their sum, taken over that tick's samples
    alone, divided by their count. So every bit of a tick is a function of its own samples, and
    one raw sample changes exactly one tick. A tick without a usable sample gets the public
    centre (0.0, 0.0) and ``has_gaze`` False.

    **First tick.** The tick whose interval holds the stream's first sample (valid or not): the
    smallest ``k`` with ``t_k >= t_first``. From there every tick of the grid is emitted, through
    gaps, until the stream ends.

    **Closing.** The clock is the newest sample time, or a later time given to :meth:`advance`.
    A tick is closed, and emitted once, when the clock is strictly past it (``t_k < clock``): a
    tick exactly at the newest sample stays open, since another sample with that very timestamp
    may follow (timestamps only never decrease), until a later sample or :meth:`advance` moves the
    clock past it. :meth:`flush` closes every tick up to the one holding the last sample. A
    sample that falls in a tick already closed by :meth:`advance` broke the caller's promise: it
    is dropped and counted in ``late`` (local; :meth:`flush` keeps it, :meth:`reset` clears it).

    Parameters
    ----------
    rate : float
        Ticks per second (default 60), finite and > 0.
    fov_deg : (float, float)
        The scene camera's horizontal and vertical field of view in degrees (public), each in
        (0, 180); default that of :class:`~streamdp.stages.event_config.EventConfig`.
    min_confidence : float
        Samples below it take no part, in [0, 1]; default ``EventConfig().min_confidence``.

    Raises
    ------
    TypeError
        A parameter of the wrong type (named).
    ValueError
        A parameter out of range (named, with its value).

    Examples
    --------
    >>> gaze = GazeBatch.from_arrays(t=[0.01, 0.02, 0.06, 0.07], x=[0.5] * 4, y=[0.5] * 4)
    >>> ticks = GazeTicks(rate=20.0)
    >>> ticks.update(gaze).t.tolist()  # t_1 = 0.05 closes: a sample came after it
    [0.05]
    >>> out = ticks.advance(0.2)
    >>> out.t.tolist(), out.has_gaze.tolist()
    ([0.1, 0.15], [True, False])
    >>> ticks.flush().t.tolist()  # the last sample's tick was closed by advance already
    []
    """

    def __init__(
        self,
        *,
        rate: float = DEFAULT_TICK_RATE,
        fov_deg: tuple[float, float] = _EVENTS.fov_deg,
        min_confidence: float = _EVENTS.min_confidence,
    ) -> None:
        r = _number("rate", rate)
        if not (math.isfinite(r) and r > 0):
            raise ValueError(f"GazeTicks rate must be finite and > 0 Hz, got {rate!r}")
        c = _number("min_confidence", min_confidence)
        if not 0.0 <= c <= 1.0:
            raise ValueError(f"GazeTicks min_confidence must lie in [0, 1], got {min_confidence!r}")
        self.rate = r
        self.fov_deg = _check_fov(fov_deg)
        self.min_confidence = c
        self.reset()

    def reset(self) -> None:
        """Forget the stream and the ``late`` count, as a freshly built stage."""
        self.late = 0
        self._clear()

    def _clear(self) -> None:
        self._next: int | None = None  # the first tick not yet emitted; None before the first sample
        self._last_t = -math.inf  # newest sample time
        self._clock = -math.inf  # newest sample time or advance() time
        self._k: list[NDArray[np.int64]] = []  # held usable samples: their tick, position in degrees
        self._x: list[_F64] = []
        self._y: list[_F64] = []

    def tick_of(self, t: _F64) -> NDArray[np.int64]:
        """The tick holding each time: the smallest ``k`` with ``k / rate >= t`` (exact on the
        float grid).

        Examples
        --------
        >>> GazeTicks(rate=10.0).tick_of(np.array([0.1, 0.10000001, -0.05])).tolist()
        [1, 2, 0]
        """
        r = self.rate
        k = np.ceil(np.asarray(t, dtype=np.float64) * r)
        k += k / r < t
        k -= (k - 1.0) / r >= t
        return k.astype(np.int64)

    def update(self, batch: GazeBatch, /) -> Ticks:
        """Take the next ordered gaze batch; return the ticks the clock has passed.

        Raises
        ------
        TimestampOrderError
            The batch starts before the newest sample already taken. It is rejected whole and the
            stage is unchanged.
        """
        if not len(batch):
            return Ticks.empty()
        if float(batch.t[0]) < self._last_t:
            raise TimestampOrderError(
                f"{batch.source}: timestamps go backwards between batches: {self._last_t!r} then "
                f"{float(batch.t[0])!r}; the batch was rejected"
            )
        k = self.tick_of(batch.t)
        if self._next is None:
            self._next = int(k[0])
        self._last_t = float(batch.t[-1])
        fresh = k >= self._next
        self.late += int(np.count_nonzero(~fresh))
        use = fresh & batch.valid & (batch.confidence >= self.min_confidence)
        if use.any():
            dx, dy = norm_to_degrees(batch.x[use], batch.y[use], self.fov_deg)
            self._k.append(k[use])
            self._x.append(dx)
            self._y.append(dy)
        self._clock = max(self._clock, self._last_t)
        return self._emit_until(int(self.tick_of(np.array([self._clock]))[0]))

    def advance(self, clock: float) -> Ticks:
        """No sample at or before ``clock`` remains to come: emit every tick before it (those
        without gaze at the centre). Before the stream's first sample there is no grid yet:
        nothing is emitted.

        Raises
        ------
        TypeError
            ``clock`` is not a number.
        ValueError
            ``clock`` is not finite.
        """
        c = _number("advance clock", clock)
        if not math.isfinite(c):
            raise ValueError(f"GazeTicks advance clock must be finite, got {clock!r}")
        if self._next is None or c <= self._clock:
            return Ticks.empty()
        self._clock = c
        return self._emit_until(int(self.tick_of(np.array([c]))[0]))

    def flush(self) -> Ticks:
        """End of stream: emit every tick up to the one holding the last sample; the next
        sample starts a new stream."""
        out = Ticks.empty()
        if self._next is not None:
            out = self._emit_until(int(self.tick_of(np.array([self._last_t]))[0]) + 1)
        self._clear()
        return out

    def _emit_until(self, end: int) -> Ticks:
        """Emit ticks ``_next .. end − 1`` from the held samples."""
        start = self._next
        if start is None or end <= start:
            return Ticks.empty()
        m = end - start
        deg = np.zeros((m, 2))
        has = np.zeros(m, dtype=bool)
        if self._k:
            kk, xs, ys = np.concatenate(self._k), np.concatenate(self._x), np.concatenate(self._y)
            cut = int(np.searchsorted(kk, end, side="left"))
            if cut:
                # each tick's own samples, summed apart (reduceat over the tick segments) and
                # divided by their count: no running sum across ticks
                first = np.flatnonzero(np.concatenate(([True], kk[1:cut] != kk[: cut - 1])))
                count = np.diff(np.append(first, cut))
                rows = kk[first] - start
                deg[rows, 0] = np.add.reduceat(xs[:cut], first) / count
                deg[rows, 1] = np.add.reduceat(ys[:cut], first) / count
                has[rows] = True
            rest = cut < len(kk)
            self._k, self._x, self._y = ([kk[cut:]], [xs[cut:]], [ys[cut:]]) if rest else ([], [], [])
        self._next = end
        t = np.arange(start, end, dtype=np.float64) / self.rate
        return Ticks(t, deg, has)
