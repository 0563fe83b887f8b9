"""Gaze positions on a public tick grid: one position per tick for interactive apps (issue #20).

:class:`GazeTicks` turns ordered gaze into one position in degrees per tick ``t_k = k / rate`` (``k`` an
integer) of the source clock. Like the step grid of the features (:mod:`streamdp.stages.schedule`), the grid
is public: gaps, blinks and restarts never move it, and the number and times of the ticks between two times
never depend on the gaze. The ticks are raw: a privacy mechanism noises ``deg`` before anything leaves the
device, and ``has_gaze`` (a raw function of the gaze) never leaves it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..errors import TimestampOrderError
from ..gaze import GazeBatch, GazeColumns
from ..kernels.geometry import norm_to_degrees
from ..plausibility import plausible_position
from .base import Stage
from .event_config import EventConfig
from .tick_batches import Ticks, TickSamples, read_only

_F64 = NDArray[np.float64]
__all__ = ["DEFAULT_TICK_RATE", "GazeTicks", "TickSamples", "Ticks"]

#: the public tick rate of the real-time channel, Hz
DEFAULT_TICK_RATE = 60.0
_EVENTS = EventConfig()


#: a tick without gaze (the public centre), and whether a tick had gaze: read-only, shared
_CENTRE = read_only(np.zeros((1, 2)))
_NO_GAZE, _GAZE = read_only(np.zeros(1, dtype=bool)), read_only(np.ones(1, dtype=bool))
#: the first (only) segment of a tick's samples, for reduceat
_FIRST = np.zeros(1, dtype=np.intp)


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
    in ``(b_{k-1}, b_k]``, ``b_k = (k + ½) / rate``: the interval centred on the tick (so the
    intervals tile the clock and every sample lies in exactly one tick, and a source sampling at
    the tick rate with timestamps on the grid itself, up to float rounding, puts one sample in
    each tick rather than two in one and none in the next). Its position is the mean, in degrees
    (:func:`~streamdp.kernels.geometry.norm_to_degrees` with ``fov_deg``), of its usable samples
    (``valid`` and ``confidence >= min_confidence``): their sum, taken over that tick's samples
    alone, divided by their count. So every bit of a tick is a function of its own samples, and
    one raw sample changes exactly one tick. A tick without a usable sample gets the public
    centre (0.0, 0.0) and ``has_gaze`` False.

    **First tick.** The tick whose interval holds the stream's first sample (valid or not): the
    smallest ``k`` with ``b_k >= t_first``. From there every tick of the grid is emitted, through
    gaps, until the stream ends.

    **Closing.** The clock is the newest sample time, or a later time given to :meth:`advance`.
    A tick is closed, and emitted once, when the clock is strictly past its interval's end
    (``b_k < clock``): a tick ending exactly at the newest sample stays open, since another
    sample with that very timestamp may follow (timestamps only never decrease), until a later
    sample or :meth:`advance` moves the clock past it. :meth:`flush` closes every tick up to the
    one holding the last sample. A sample that falls in a tick already closed by :meth:`advance`
    broke the caller's promise: it is dropped and counted in ``late`` (local; :meth:`flush` keeps
    it, :meth:`reset` clears it).

    **Clock jumps (live, ``jump`` given).** A step of the clock (the next sample, or a time given
    to :meth:`advance`) more than ``jump`` s past it is a jump (``T`` from an app, Time Sync), not
    a gap in the gaze: the ticks up to the one holding the clock are emitted and the grid starts
    anew at the tick of the new clock, without covering the skipped interval. A new stream (after
    :meth:`flush` or :meth:`restart`) starts after the last tick emitted if its first tick is at
    most ``jump`` s before it (no tick repeats); further back, it is a new segment on the new clock.

    Parameters
    ----------
    rate : float
        Ticks per second (default 60), finite and > 0.
    fov_deg : (float, float)
        The scene camera's horizontal and vertical field of view in degrees (public), each in
        (0, 180); default that of :class:`~streamdp.stages.event_config.EventConfig`.
    min_confidence : float
        Samples below it take no part, in [0, 1]; default ``EventConfig().min_confidence``.
    jump : float, optional
        Live: seconds of clock step beyond which the clock jumped (None: every gap is covered).

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
    >>> ticks.update(gaze).t.tolist()  # tick 0 (0 ± 0.025 s) closes: a sample came after it
    [0.0]
    >>> out = ticks.advance(0.2)
    >>> out.t.tolist(), out.has_gaze.tolist()
    ([0.05, 0.1, 0.15], [True, False, False])
    >>> ticks.flush().t.tolist()  # the last sample's tick was closed by advance already
    []
    """

    def __init__(
        self,
        *,
        rate: float = DEFAULT_TICK_RATE,
        fov_deg: tuple[float, float] = _EVENTS.fov_deg,
        min_confidence: float = _EVENTS.min_confidence,
        jump: float | None = None,
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
        if jump is not None and not (math.isfinite(j := _number("jump", jump)) and j > 0):
            raise ValueError(f"GazeTicks jump must be finite and > 0 s, got {jump!r}")
        self.jump = None if jump is None else float(jump)
        self.reset()

    def reset(self) -> None:
        """Forget the stream and the ``late`` count, as a freshly built stage."""
        self.late = 0
        #: live: the tick after the last one emitted, where a new stream near it continues
        self._floor: int | None = None
        self._clear()

    def restart(self) -> None:
        """A new stream on the same topic: forget the samples, keep where the ticks stopped."""
        self._clear()

    @property
    def next_tick(self) -> int | None:
        """The first tick not yet emitted (None before the stream's first sample)."""
        return self._next

    def _clear(self) -> None:
        self._next: int | None = None  # the first tick not yet emitted; None before the first sample
        self._last_t = -math.inf  # newest sample time
        self._clock = -math.inf  # newest sample time or advance() time
        self._k: list[NDArray[np.int64]] = []  # held usable samples: their tick, position in degrees
        self._x: list[_F64] = []
        self._y: list[_F64] = []

    def tick_of(self, t: _F64) -> NDArray[np.int64]:
        """The tick holding each time: the smallest ``k`` with ``b_k = (2k + 1) / (2·rate) >= t``
        (exact on the float grid: every comparison is with that one expression).

        Examples
        --------
        >>> GazeTicks(rate=10.0).tick_of(np.array([0.15, 0.15000001, 0.1, 0.0999999, -0.05])).tolist()
        [1, 2, 1, 1, -1]
        """
        r2 = 2.0 * self.rate
        t = np.asarray(t, dtype=np.float64)
        k = np.ceil(t * self.rate - 0.5)
        k += (2.0 * k + 1.0) / r2 < t
        k -= (2.0 * k - 1.0) / r2 >= t
        return k.astype(np.int64)

    def tick_at(self, t: float) -> int:
        """:meth:`tick_of` of one time, in Python floats (the same IEEE arithmetic: the same tick).

        Examples
        --------
        >>> ticks = GazeTicks(rate=10.0)
        >>> [ticks.tick_at(t) for t in (0.15, 0.15000001, 0.1, 0.0999999, -0.05)]
        [1, 2, 1, 1, -1]
        """
        r2 = 2.0 * self.rate
        k = float(math.ceil(t * self.rate - 0.5))
        k += (2.0 * k + 1.0) / r2 < t
        k -= (2.0 * k - 1.0) / r2 >= t
        return int(k)

    def update(self, batch: GazeBatch | TickSamples, /) -> Ticks:
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
        prev = self._clock if self._next is not None else float(batch.t[0])
        # in order: no step can exceed the jump where the whole batch does not
        if self.jump is not None and float(batch.t[-1]) - prev > self.jump:
            steps = np.diff(batch.t, prepend=prev)
            if (jumps := np.flatnonzero(steps > self.jump)).size:
                i = int(jumps[0])
                before = self._take(batch.slice(0, i)) if i else Ticks.empty()
                return Ticks.concat([before, self._jumped(float(batch.t[i])), self.update(batch.slice(i, len(batch)))])
        return self._take(batch)

    def _jumped(self, clock: float) -> Ticks:
        """The clock jumped to ``clock``: close the old grid's open tick, start anew at the jump."""
        out = self._emit_until(self.tick_at(self._clock) + 1)
        self._next = self.tick_at(clock)
        self._clock = clock
        return out

    def convert(self, cols: GazeColumns, source: str) -> TickSamples:
        """Decoded gaze (any order) as the ticks read it: each row's tick, whether it is usable (valid,
        a :func:`~streamdp.plausibility.plausible_position`, ``confidence >= min_confidence``) and its
        position in degrees, elementwise: converting a burst once gives the bits converting any part would.

        Raises
        ------
        TimestampOrderError
            A time is not finite.
        """
        t, x, y = cols.t, np.ascontiguousarray(cols.x), np.ascontiguousarray(cols.y)
        if not np.isfinite(t).all():
            raise TimestampOrderError(f"{source}: the gaze channel's samples are not finite times")
        use = cols.valid & plausible_position(x, y) & (cols.confidence >= self.min_confidence)
        return TickSamples(t, self.tick_of(t), use, *norm_to_degrees(x, y, self.fov_deg), source)

    def _take(self, batch: GazeBatch | TickSamples) -> Ticks:
        k = batch.k if isinstance(batch, TickSamples) else self.tick_of(batch.t)
        if self._next is None:
            self._next = int(k[0])
            floor, jump = self._floor, self.jump
            if floor is not None and jump is not None and 0 < floor - self._next <= jump * self.rate:
                self._next = floor  # near where the topic's ticks stopped: none repeats
        self._last_t = float(batch.t[-1])
        # in time order, so in tick order: all fresh when the first is
        fresh: NDArray[np.bool_] | bool = True
        if not (every := int(k[0]) >= self._next):
            fresh = k >= self._next
            self.late += int(np.count_nonzero(~fresh))
        if isinstance(batch, TickSamples):  # converted as it arrived: picked, not converted again
            use = batch.use if every else fresh & batch.use
            if use.all():
                self._hold_samples(k, batch.dx, batch.dy)
            elif use.any():
                self._hold_samples(k[use], batch.dx[use], batch.dy[use])
        elif (use := fresh & batch.valid & (batch.confidence >= self.min_confidence)).any():
            self._hold_samples(k[use], *norm_to_degrees(batch.x[use], batch.y[use], self.fov_deg))
        self._clock = max(self._clock, self._last_t)
        return self._emit_until(self.tick_at(self._clock))

    def _hold_samples(self, k: NDArray[np.int64], dx: _F64, dy: _F64) -> None:
        self._k.append(k)
        self._x.append(dx)
        self._y.append(dy)

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
        jumped = self._jumped(c) if self.jump is not None and c - self._clock > self.jump else Ticks.empty()
        self._clock = c
        return Ticks.concat([jumped, self._emit_until(self.tick_at(c))])

    def flush(self) -> Ticks:
        """End of stream: emit every tick up to the one holding the last sample; the next
        sample starts a new stream."""
        out = Ticks.empty()
        if self._next is not None:
            out = self._emit_until(self.tick_at(self._last_t) + 1)
        self._clear()
        return out

    def _emit_until(self, end: int) -> Ticks:
        """Emit ticks ``_next .. end − 1`` from the held samples."""
        start = self._next
        if start is None or end <= start:
            return Ticks.empty()
        m = end - start
        deg, has = (_CENTRE, _NO_GAZE) if m == 1 else (np.zeros((m, 2)), np.zeros(m, dtype=bool))
        if self._k:
            kk, xs, ys = (
                (self._k[0], self._x[0], self._y[0])
                if len(self._k) == 1
                else (np.concatenate(self._k), np.concatenate(self._x), np.concatenate(self._y))
            )
            cut = int(np.searchsorted(kk, end, side="left"))
            # each tick's own samples, summed apart (reduceat over the tick segments) and
            # divided by their count: no running sum across ticks
            if cut and m == 1:  # a live wake's tick: the same reduceat, divided in Python (the same bits)
                sx, sy = float(np.add.reduceat(xs[:cut], _FIRST)[0]), float(np.add.reduceat(ys[:cut], _FIRST)[0])
                deg, has = np.array([[sx / cut, sy / cut]]), _GAZE
            elif cut:
                if kk[0] == kk[cut - 1]:  # one tick's: one segment
                    first, count, rows = _FIRST, np.array([cut]), kk[:1] - start
                else:
                    first = np.flatnonzero(np.concatenate(([True], kk[1:cut] != kk[: cut - 1])))
                    count = np.diff(np.append(first, cut))
                    rows = kk[first] - start
                deg[rows, 0] = np.add.reduceat(xs[:cut], first) / count
                deg[rows, 1] = np.add.reduceat(ys[:cut], first) / count
                has[rows] = True
            rest = cut < len(kk)
            self._k, self._x, self._y = ([kk[cut:]], [xs[cut:]], [ys[cut:]]) if rest else ([], [], [])
        self._next = end
        if self.jump is not None:
            self._floor = end
        t = np.array([start / self.rate]) if m == 1 else np.arange(start, end, dtype=np.float64) / self.rate
        return Ticks(t, deg, has)
