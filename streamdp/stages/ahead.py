"""Live gaze far ahead of the stream's clock, held until the next datum confirms the jump.

A live session runs on the source's clock, which its gaze moves: a single datum with a corrupt or
stray timestamp far in the future would move it at once, so that every tick and chunk up to that
time went out before its time, and the gaze that follows (at the real time) would look like a
clock that went back. :class:`AheadHold` keeps such a datum out of the stream until the next
datum says what it was: a datum near it confirms a jump (the stream goes on at the new time: gaze
after a pause, a source replayed faster than real time); any other refutes it, and the lone datum
is dropped as invalid. The threshold is public (the same second after which a jump back is a
restart): the schedule still runs on the timestamps alone, and no single datum moves it by more.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import check_seconds
from ..gaze import GazeColumns

__all__ = ["CLOCK_JUMP", "AheadHold"]

#: seconds beyond which the source's clock jumped: back, a restart (:class:`~.reorder.ReorderBuffer`);
#: ahead, a jump to confirm (:class:`AheadHold`). Capture's gaze moves on by a world frame (~33 ms)
#: between bursts, by a few hundred ms when an eye camera drops frames.
CLOCK_JUMP = 1.0


class AheadHold:
    """Gaze (in arrival order) in, the gaze the stream's clock accepts out.

    The clock is the newest gaze accepted, or a later time given to :meth:`advance` (a live
    shell's timer). A datum more than ``ahead`` s past it is held (at most one at a time) and the
    next datum decides:

    - past the clock by more than ``ahead`` s too, and within ``ahead`` s of the held one: the
      jump is confirmed, both are accepted;
    - anything else: the stream went on at the old time (late gaze included), the held datum is
      dropped (counted in ``dropped``) and this one is judged as any other: accepted, or held in
      its place if it is far ahead too. A clock that went back passes on (the reorder buffer
      tells the restart).

    The first datum of a stream starts the clock. What is still held when the stream ends is
    dropped (:meth:`flush`). A held datum is accepted only together with a second one as far
    ahead: no single datum moves the clock by more than ``ahead``.

    Parameters
    ----------
    ahead : float
        Seconds past the clock beyond which a datum waits for confirmation (> 0).

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
    """

    def __init__(self, ahead: float = CLOCK_JUMP) -> None:
        self.ahead = check_seconds("ahead", ahead)
        self.reset()

    def reset(self) -> None:
        """Forget the stream, what is held and the ``dropped`` count."""
        self.dropped = 0
        self._clear()

    def _clear(self) -> None:
        self.clock = -math.inf
        self._held = GazeColumns.empty()

    @property
    def limit(self) -> float:
        """The latest time accepted without confirmation (-inf before the stream's first datum)."""
        return self.clock + self.ahead

    def advance(self, clock: float) -> None:
        """The source's clock reached ``clock`` (a shell's timer, or a new segment's gaze)."""
        if clock > self.clock:
            self.clock = float(clock)

    def update(self, cols: GazeColumns) -> GazeColumns:
        """The gaze of ``cols`` the clock accepts, with a held datum it confirms (arrival order)."""
        if not len(cols):
            return cols
        if len(self._held):
            both, h, i = GazeColumns.concat([self._held, cols]), 0, 1
        else:
            both, h = cols, self._next_far(cols.t, 0)
            if h == len(cols):
                return cols  # the common case: nothing far ahead (the clock moved on)
            i = h + 1
        keep, held = self._judge(both.t, h, i)
        self._held = both.take(np.array([held])) if held is not None else GazeColumns.empty()
        return both.take(np.flatnonzero(keep))

    def flush(self) -> int:
        """End of stream: a datum still held is dropped; returns how many (0 or 1). The next
        stream may start at any time."""
        n = len(self._held)
        self.dropped += n
        self._clear()
        return n

    def take_dropped(self) -> int:
        """The data dropped since the last call."""
        n, self.dropped = self.dropped, 0
        return n

    def _next_far(self, t: NDArray[np.float64], i: int) -> int:
        """Accept ``t[i:]`` up to the first datum far ahead that the next one does not confirm at
        once; its index (``len(t)`` if none). Moves the clock over what it accepted."""
        rest = t[i:]
        newest = np.maximum.accumulate(rest)
        before = np.empty_like(rest)  # the clock when each datum arrives
        before[0] = self.clock
        np.maximum(newest[:-1], self.clock, out=before[1:])
        far = np.flatnonzero(rest > before + self.ahead)
        for j in far[1:] if len(far) and before[0] == -math.inf else far:  # the first datum starts the clock
            nxt = rest[j + 1] if j + 1 < len(rest) else -math.inf
            if nxt > before[j] + self.ahead and abs(nxt - rest[j]) <= self.ahead:
                continue  # confirmed by the next: the clock moves on through both
            self.clock = float(before[j])
            return i + int(j)
        self.clock = max(self.clock, float(newest[-1]))
        return len(t)

    def _judge(self, t: NDArray[np.float64], h: int, i: int) -> tuple[NDArray[np.bool_], int | None]:
        """Which of ``t`` are accepted, ``t[h]`` held and ``t[i:]`` still to judge; the one held after."""
        keep = np.ones(len(t), dtype=bool)
        keep[h] = False
        held: int | None = h
        a = self.ahead
        while i < len(t):
            if held is None:
                held = self._next_far(t, i)
                if held == len(t):
                    return keep, None
                keep[held], i = False, held + 1
                continue
            x = float(t[i])
            if x > self.clock + a and abs(x - t[held]) <= a:  # confirmed: the clock moves on through both
                keep[held], self.clock, held = True, max(self.clock, float(t[held]), x), None
                i += 1
            else:  # not confirmed: dropped, and the next datum is judged afresh
                self.dropped += 1
                held = None
        return keep, held
