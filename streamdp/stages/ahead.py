"""Live gaze far from the stream's clock, held until the next datum confirms the jump.

A live session runs on the source's clock, which its gaze moves: a single datum with a corrupt or
stray timestamp far in the future would move it at once, so that every tick and chunk up to that
time went out before its time; one far in the past would look like a clock that went back (a
source that restarted) and start a new segment, after which the gaze that follows (at the real
time) jumps ahead of it. :class:`AheadHold` keeps such a datum out of the stream until the next
datum says what it was: a datum near it confirms a jump (ahead: the stream goes on at the new
time, gaze after a pause or a source replayed faster than real time; back: the source restarted,
a new segment); any other refutes it, and the lone datum is dropped as invalid. The threshold is
public (:data:`CLOCK_JUMP`): the schedule still runs on the timestamps alone, and no single datum
moves it by more, nor restarts it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import check_seconds
from ..gaze import GazeColumns

__all__ = ["CLOCK_JUMP", "AheadHold", "leap_past"]

#: seconds beyond which the source's clock jumped: back, a restart (:class:`~.reorder.ReorderBuffer`);
#: either way, a jump to confirm (:class:`AheadHold`). Capture's gaze moves on by a world frame
#: (~33 ms) between bursts, by a few hundred ms when an eye camera drops frames.
CLOCK_JUMP = 1.0


class AheadHold:
    """Gaze (in arrival order) in, the gaze the stream's clock accepts out.

    The clock is the newest gaze accepted, or a later time given to :meth:`advance` (a live
    shell's timer). A datum is far from it, and held (at most one at a time), when it is

    - ahead: more than ``ahead`` s past the clock;
    - back: more than ``ahead + window`` s before the newest gaze accepted (not the timer: gaze
      read late is no jump), or below the ``floor`` given with the batch (the reorder buffer's:
      what it released, less ``ahead``);

    and the next datum decides:

    - as far in the same direction, and within ``ahead`` s of the held one: the jump is
      confirmed, both are accepted. Ahead, the clock moves on through both; back, the source
      restarted: :attr:`went_back` tells where the new segment starts in the output, whose
      clock the two start (the batch's floor is gone with the old segment);
    - anything else: the stream went on at the old time (late gaze included), the held datum is
      dropped (counted in ``dropped``) and this one is judged as any other: accepted, or held in
      its place if it is far too.

    A stream (or a segment after :meth:`restart`) has no clock until two data agree: the first
    datum waits for one within ``ahead`` s of it (of either of the last two that wait), so that a
    stray first timestamp neither starts the clock in the future nor, undone by the gaze after
    it, restarts the session; a stream of one datum is dropped. What is still held when the
    stream ends is dropped (:meth:`flush`); when the source restarts it waits on
    (:meth:`restart`): near the next datum, it is the new segment's first. A held datum is
    accepted only together with a second one as far: no single datum moves the clock by more
    than ``ahead``, nor restarts it.

    Parameters
    ----------
    ahead : float
        Seconds from the clock beyond which a datum waits for confirmation (> 0).
    window : float
        The reorder window (s, ≥ 0): gaze that late is no jump back, whatever ``ahead``.

    Examples
    --------
    >>> def cols(t):
    ...     n = len(t)
    ...     return GazeColumns.from_arrays(t=t, x=[0.5] * n, y=[0.5] * n, confidence=[1.0] * n,
    ...         diameter_mm=[3.0] * n, diameter_px=[30.0] * n, eye_id=[2] * n, valid=[True] * n)
    >>> hold = AheadHold(ahead=1.0)
    >>> hold.update(cols([10.0, 10.01, 110.0])).t.tolist()  # 110 s waits
    [10.0, 10.01]
    >>> hold.update(cols([10.02])).t.tolist(), hold.dropped  # the stream goes on at 10 s
    ([10.02], 1)
    >>> hold.update(cols([50.0])).t.tolist(), hold.update(cols([50.01])).t.tolist()  # a pause of 40 s
    ([], [50.0, 50.01])
    >>> hold.update(cols([3.0])).t.tolist()  # 47 s back: waits too
    []
    >>> hold.update(cols([50.02])).t.tolist(), hold.dropped  # refuted
    ([50.02], 2)
    >>> hold.update(cols([50.03, 0.0, 0.01])).t.tolist(), hold.went_back  # confirmed: a restart
    ([50.03, 0.0, 0.01], 1)
    """

    def __init__(self, ahead: float = CLOCK_JUMP, window: float = 0.0) -> None:
        self.ahead = check_seconds("ahead", ahead)
        self.behind = self.ahead + check_seconds("window", window, zero_ok=True)
        self.reset()

    def reset(self) -> None:
        """Forget the stream, what is held and the ``dropped`` count."""
        self.dropped = 0
        self._clear()

    def _clear(self) -> None:
        self.clock = self.newest = -math.inf  # newest: the newest gaze accepted (no timer)
        self._held = GazeColumns.empty()
        self._waiting = False  # data wait for two that agree to start the clock (:meth:`_start`)
        self._floor = -math.inf
        #: where, in the last :meth:`update`'s output, a confirmed jump back starts a new segment
        self.went_back: int | None = None

    @property
    def limit(self) -> float:
        """The latest time accepted without confirmation (-inf until two data or a shell's timer start the clock)."""
        return self.clock + self.ahead

    @property
    def settled(self) -> bool:
        """Whether the clock runs and no datum waits to be confirmed: gaze within ``ahead`` s past the
        clock and ``ahead + window`` s before the newest is accepted as it is."""
        return not self._waiting and not len(self._held) and self.clock > -math.inf

    def advance(self, clock: float) -> None:
        """The source's clock reached ``clock`` (a shell's timer, or a new segment's gaze)."""
        if clock > self.clock:
            self.clock = float(clock)

    def update(self, cols: GazeColumns, floor: float = -math.inf) -> GazeColumns:
        """The gaze of ``cols`` the clock accepts, with a held datum it confirms (arrival order);
        gaze below ``floor`` is back too. Sets :attr:`went_back`."""
        self.went_back, self._floor = None, float(floor)
        if not len(cols):
            return cols
        if self._waiting or self.clock == -math.inf:  # a shell's timer may move the clock meanwhile
            return self._start(cols)
        if len(self._held):
            both, h, i = GazeColumns.concat([self._held, cols]), 0, 1
        else:
            both, h = cols, self._next_far(cols.t, 0)
            if h == len(cols):
                return cols  # the common case: nothing far (the clock moved on)
            i = h + 1
        keep, held, back = self._judge(both.t, h, i)
        self._held = both.take(np.array([held])) if held is not None else GazeColumns.empty()
        if back is not None:
            self.went_back = int(np.count_nonzero(keep[:back]))
        return both.take(np.flatnonzero(keep))

    def _start(self, cols: GazeColumns) -> GazeColumns:
        """No clock yet: data wait (two at most, the oldest dropped for a third) until one comes
        within ``ahead`` s of one waiting; the two start the clock, the other is dropped, and the
        rest of ``cols`` is judged against it."""
        both = GazeColumns.concat([self._held, cols]) if len(self._held) else cols
        t = both.t.tolist()
        waiting: list[int] = []
        for i, x in enumerate(t):
            pair = next((w for w in waiting if abs(x - t[w]) <= self.ahead), None)
            if pair is not None:
                break
            if len(waiting) == 2:
                del waiting[0]
                self.dropped += 1
            waiting.append(i)
        else:
            self._held, self._waiting = both.take(np.array(waiting, dtype=np.intp)), True
            return GazeColumns.empty()
        self.dropped += len(waiting) - 1
        self._held, self._waiting = GazeColumns.empty(), False
        self.newest = max(t[pair], x)
        self.clock = max(self.clock, self.newest)
        started = both.take(np.array([pair, i], dtype=np.intp))
        if i + 1 == len(t):
            return started
        rest = self.update(both.take(np.arange(i + 1, len(t))), self._floor)
        if self.went_back is not None:
            self.went_back += len(started)
        return GazeColumns.concat([started, rest])

    def flush(self) -> int:
        """End of stream: the data still held are dropped; returns how many (0, 1, or 2 that
        waited to start the clock). The next stream may start at any time."""
        n = len(self._held)
        self.dropped += n
        self._clear()
        return n

    def restart(self) -> int:
        """The source restarted (its shell saw the clock jump): the next datum may be at any time;
        a datum held waits on, for the next datum to confirm it as the new segment's first.
        Returns 0 (nothing dropped)."""
        self.clock = self.newest = -math.inf
        self.went_back = None
        self._waiting = bool(len(self._held))
        return 0

    def take_dropped(self) -> int:
        """The data dropped since the last call."""
        n, self.dropped = self.dropped, 0
        return n

    def _next_far(self, t: NDArray[np.float64], i: int) -> int:
        """Accept ``t[i:]`` up to the first datum far from the clock that the next one does not
        confirm as a jump ahead at once (a jump back always waits for :meth:`_judge`); its index
        (``len(t)`` if none). Moves the clocks over what it accepted."""
        rest = t[i:]
        newest = np.maximum.accumulate(rest)
        before = np.empty_like(rest)  # the clock when each datum arrives
        np.maximum(newest[:-1], self.clock, out=before[1:])
        before[0] = self.clock
        gaze = np.empty_like(rest)  # the newest gaze when each datum arrives
        np.maximum(newest[:-1], self.newest, out=gaze[1:])
        gaze[0] = self.newest
        back = rest < np.maximum(gaze - self.behind, self._floor)
        far = np.flatnonzero((rest > before + self.ahead) | back)
        for j in far:
            nxt = rest[j + 1] if j + 1 < len(rest) else -math.inf
            if not back[j] and nxt > before[j] + self.ahead and abs(nxt - rest[j]) <= self.ahead:
                continue  # confirmed by the next: the clock moves on through both
            self.clock, self.newest = float(before[j]), float(gaze[j])
            return i + int(j)
        self.clock = max(self.clock, float(newest[-1]))
        self.newest = max(self.newest, float(newest[-1]))
        return len(t)

    def _judge(self, t: NDArray[np.float64], h: int, i: int) -> tuple[NDArray[np.bool_], int | None, int | None]:
        """Which of ``t`` are accepted, ``t[h]`` held and ``t[i:]`` still to judge; the one held
        after, and where a confirmed jump back starts (None: none)."""
        keep = np.ones(len(t), dtype=bool)
        keep[h] = False
        held: int | None = h
        back: int | None = None
        a = self.ahead
        while i < len(t):
            if held is None:
                held = self._next_far(t, i)
                if held == len(t):
                    return keep, None, back
                keep[held], i = False, held + 1
                continue
            x, y = float(t[i]), float(t[held])
            floor = max(self.newest - self.behind, self._floor)
            if abs(x - y) <= a and (x > self.clock + a or x < floor):  # confirmed (never both)
                if y < floor:  # back: a new segment from the held datum on, on its own clock
                    back, self._floor = held, -math.inf
                    self.clock = self.newest = max(x, y)
                else:  # ahead: the clocks move on through both
                    self.clock, self.newest = max(self.clock, x, y), max(self.newest, x, y)
                keep[held], held = True, None
                i += 1
            else:  # not confirmed: dropped, and the next datum is judged afresh
                self.dropped += 1
                held = None
        return keep, held, back


def leap_past(t: NDArray[np.float64], clock: float, deadline: float | None, margin: float) -> int | None:
    """Where gaze ``t`` (arrival order, accepted after a clock at ``clock``) first leaps in one
    step from short of ``deadline`` to more than ``margin`` s past it; None if it does not.

    Live at real time, a shell's timer reaches each public deadline whether or not gaze comes:
    gaze that pauses is not past a deadline the clock has not reached. Gaze that leaps past one
    is on a clock set ahead (``T`` from any app) or a source played faster than real time: the
    session asks its shell (:attr:`Session.clock_was_set <streamdp.session.Session.clock_was_set>`,
    the relay's read of ``t``), and a clock that was set starts a new segment there instead of a
    chunk released, and charged, for every deadline skipped (3,125 at once for ``T`` + 100,000 s).

    Examples
    --------
    >>> leap_past(np.array([10.0, 10.01, 100010.0, 100010.01]), 9.99, 40.0, 2.0)
    2
    >>> leap_past(np.array([39.99, 40.0, 40.01]), 39.98, 40.0, 2.0) is None  # the gaze itself passes it
    True
    """
    if deadline is None or not len(t) or float(t.max()) <= deadline + margin:
        return None
    before = np.maximum.accumulate(np.concatenate(([clock], t[:-1])))
    leap = np.flatnonzero((before < deadline) & (t > deadline + margin))
    return int(leap[0]) if len(leap) else None
