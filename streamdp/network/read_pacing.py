"""How the relay paces its reads of Capture's backbone against the public schedule.

Capture publishes gaze in ~30–60 bursts a second; waking for each costs the relay more than
decoding them. So between deadlines the relay lets gaze queue up to ``interval`` seconds, and
from ``interval`` before a deadline on it reads every burst, so that a release goes out as soon as
the gaze makes it due. The schedule runs on the data's clock: the newest gaze read, running on
with the monotonic clock from when it was read, at the speed the data arrives (1 live; more when
a recording is played faster).
"""

from __future__ import annotations

import time

__all__ = ["ReadPacing"]

#: monotonic seconds between two measurements of the data's speed
_SPEED_PERIOD = 0.5


class ReadPacing:
    """The data's clock and the pause before the next read.

    Parameters
    ----------
    interval : float
        Seconds gaze may queue between two reads (0: read every burst); checked by the relay.

    Examples
    --------
    >>> reads = ReadPacing(0.25)
    >>> reads.now() is None, reads.pause(wait=None, timeout=1.0)  # no gaze yet: read at once
    (True, 0.0)
    >>> reads.seen(100.0)
    >>> reads.pause(wait=10.0, timeout=1.0), reads.pause(wait=0.3, timeout=1.0)
    (0.25, 0.04999999999999999)
    """

    def __init__(self, interval: float) -> None:
        self.interval = float(interval)
        self.reset()

    def reset(self) -> None:
        """A new segment: its gaze sets the data's clock again."""
        #: newest gaze time read − monotonic time when it was read (None before any gaze)
        self.offset: float | None = None
        #: source seconds per monotonic second of the gaze read (1 live; more in a fast replay)
        self.speed = 1.0
        self._mark: tuple[float, float] | None = None

    def seen(self, newest: float) -> None:
        """The newest gaze time read, just now."""
        now = time.monotonic()
        self.offset = newest - now
        if self._mark is None:
            self._mark = (now, newest)
            return
        wall, data = self._mark
        if now - wall >= _SPEED_PERIOD:
            self.speed = max(1.0, (newest - data) / (now - wall))
            self._mark = (now, newest)

    def now(self) -> float | None:
        """The data's clock now (None before any gaze)."""
        return None if self.offset is None else time.monotonic() + self.offset

    def pause(self, *, wait: float | None, timeout: float) -> float:
        """Seconds to let gaze queue before the next read: up to ``interval``, never into the last
        ``interval`` (in source time) before a deadline ``wait`` source seconds away, nor past
        ``timeout`` (the next heartbeat)."""
        if self.interval <= 0 or self.offset is None:
            return 0.0
        pause = min(self.interval, timeout)
        if wait is not None:
            pause = min(pause, (wait - self.interval * self.speed) / self.speed)
        return pause
