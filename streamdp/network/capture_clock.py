"""Whether Capture's clock jumped, told by the relay from Pupil Remote's ``t``.

The Capture plugin reads ``g_pool.timebase`` itself; the relay cannot, so it reads Pupil time with
``t`` on every heartbeat (about once a second, also while gaze flows) and applies the same rule,
:func:`streamdp.capture.watch.clock_jumped` with the session's public threshold (the reorder
window): a change up to the threshold continues the session and its public grid, a larger one
starts a new segment. Pupil time moves by Time Sync (``time_sync.py``: slews of at most 0.5 ms
every 0.1 s, jumps beyond 10 ms) or by ``T``; Capture announces neither. Two facts decide:

- **Back**: Capture stamps gaze with the eye frame's Pupil time, never ahead of its clock, so a
  clock read behind the newest gaze already read by more than the threshold went back. This
  holds for any source, a simulation played faster than real time included.
- **Forward or back, by more than the threshold from the wall clock**: Capture's clock runs at
  the monotonic clock's rate between changes of the timebase. Where the last interval between
  two reads, or the whole segment since its first read, ran at that rate (within 1 %: Time Sync
  slews 0.5 ms in a 0.1 s step, 0.5 %; plus what the reads' round trips leave unknown), the next
  read is expected at the previous one plus the wall time since; a simulation played at another
  rate is checked only by the first fact. A read's wall time is the middle of its round trip,
  known to half of it: on a loaded machine a few milliseconds over one 0.2 s heartbeat put a
  real-time clock outside 1 %, over the segment they do not.

What this cannot tell: a forward jump of a clock that does not run at real time, and anything
between two reads (a jump and its undo within a heartbeat). Gaze stamped after a jump and read
before the next ``t`` stays in the old segment (gaze that goes back is counted ``late`` there).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..capture.watch import CLOCK_JUMP_THRESHOLD, clock_jumped

__all__ = ["CaptureClock"]

#: how far from 1 the rate of Pupil time against the monotonic clock may be for the wall-clock
#: rule to apply (Time Sync's fastest slew is 0.5 %)
REAL_TIME_RATE_TOLERANCE = 0.01


@dataclass
class _Reading:
    wall: float
    pupil: float
    spread: float  # half the round trip of the request that read it: how far off ``wall`` can be


def _real_time(a: _Reading | None, b: _Reading | None) -> bool:
    if a is None or b is None or b.wall <= a.wall:
        return False
    elapsed = b.wall - a.wall
    return abs((b.pupil - a.pupil) - elapsed) <= REAL_TIME_RATE_TOLERANCE * elapsed + a.spread + b.spread


class CaptureClock:
    """Capture's clock as the relay knows it: reads of Pupil time in, the monotonic clock mapped
    to it (:meth:`now`) and the size of a jump out.

    Parameters
    ----------
    threshold : float
        The public threshold (seconds; default
        :data:`~streamdp.capture.watch.CLOCK_JUMP_THRESHOLD`, as the Capture plugin's).

    Examples
    --------
    >>> check = CaptureClock(threshold=0.1)
    >>> [check.read(wall=w, pupil=100.0 + w, newest_gaze=99.9 + w) for w in (0.0, 1.0, 2.0)]
    [None, None, None]
    >>> check.read(wall=3.0, pupil=103.0005, newest_gaze=102.9)  # a slew
    >>> check.read(wall=4.0, pupil=109.0, newest_gaze=103.9)  # T 5 s ahead
    4.9995
    >>> check.read(wall=5.0, pupil=108.0, newest_gaze=109.9)  # T back: behind the gaze read
    -1.9
    """

    def __init__(self, *, threshold: float = CLOCK_JUMP_THRESHOLD) -> None:
        clock_jumped(0.0, 0.0, threshold=threshold)  # the rule's own checks of the threshold
        self.threshold = float(threshold)
        #: Pupil time − monotonic time at the last read (None before any)
        self.offset: float | None = None
        #: monotonic time of the last read
        self.read_at = -math.inf
        self.reset()

    def reset(self) -> None:
        """Forget the reads' history (a new connection: Capture may have restarted)."""
        self._first: _Reading | None = None  # the segment's first read
        self._previous: _Reading | None = None  # the read before the last
        self._last: _Reading | None = None

    def _runs_at_real_time(self) -> bool:
        """Whether Pupil time ran at the monotonic clock's rate over the last interval between two
        reads or over the segment, within the tolerance and what the reads' round trips leave
        unknown (the segment rides out a loaded machine, the last interval a step of Time Sync
        within the threshold). The segment grows only while it runs at that rate: a clock at
        another rate, or a jump not told, starts it again at the last read."""
        if _real_time(self._first, self._last):
            return True
        self._first = self._last
        return _real_time(self._previous, self._last)

    def now(self) -> float | None:
        """Pupil time now, as last read; None before the first read."""
        return None if self.offset is None else time.monotonic() + self.offset

    def read(
        self, *, wall: float, pupil: float, newest_gaze: float | None, sync: bool = True, spread: float = 0.0
    ) -> float | None:
        """Pupil time ``pupil`` read at monotonic time ``wall``, with the newest gaze time read
        so far (None before any): the jump in seconds (negative: back) when the clock jumped
        since the last read, else None. A jump starts the reads afresh.

        ``sync``: map :meth:`now` to this read. The relay syncs when it connects and when gaze
        is quiet, not while gaze may be queued: a source played faster than real time is then
        ahead of the gaze read, and the relay would shed what it has not read (a jump syncs
        whatever ``sync`` says: the old mapping is wrong).

        ``spread``: half the round trip of the request that read ``pupil`` (``wall`` its middle).
        """
        self.read_at = wall
        last = self._last
        now = _Reading(wall, pupil, spread)
        jump: float | None = None
        if last is not None and self._runs_at_real_time():
            expected = last.pupil + (now.wall - last.wall)
            if clock_jumped(expected, pupil, threshold=self.threshold):
                jump = pupil - expected
        if jump is None and newest_gaze is not None and pupil < newest_gaze - self.threshold:
            jump = pupil - newest_gaze  # behind gaze Capture already sent: its clock went back
        if sync or jump is not None:
            self.offset = pupil - wall
        self._previous, self._last = last, now
        if self._first is None or jump is not None:
            # the reads before a jump say nothing of the clock after it
            self._first, self._previous = now, None
        if jump is None:
            return None
        return round(jump, 9)
