"""Releases computed ahead of their public time, held until the source's clock reaches it.

A live session computes a chunk as soon as the ordered gaze passes its last step ``T`` and
publishes it at ``T + reorder_window + deadline_slack`` of the source's clock: the release time
is the schedule's, never the computation's, and the burst of gaze that reaches the deadline only
sends what is ready.
"""

from __future__ import annotations

import math
from collections import deque

from ..checks import check_seconds
from ..privacy.release import PrivateRelease

__all__ = ["ReleaseHold"]


class ReleaseHold:
    """Sealed releases waiting for their public time.

    Parameters
    ----------
    offset : float
        Source seconds from a release's last step to its public time (≥ 0).

    Raises
    ------
    TypeError
        ``offset`` is not a number.
    ValueError
        ``offset`` is negative or not finite, named with its value.

    Examples
    --------
    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> hold = ReleaseHold(offset=0.15)
    >>> hold.add([SimpleNamespace(t=np.array([9.5, 10.0]))])
    >>> hold.next_due, hold.due(10.1), len(hold.due(10.15))
    (10.15, [], 1)
    """

    def __init__(self, offset: float) -> None:
        self.offset = check_seconds("offset", offset, zero_ok=True)
        self._held: deque[PrivateRelease] = deque()
        #: the newest source time known (gaze received or a clock a shell gave)
        self.clock = -math.inf

    def __len__(self) -> int:
        return len(self._held)

    def add(self, releases: list[PrivateRelease]) -> None:
        self._held.extend(releases)

    def public_time(self, release: PrivateRelease) -> float:
        return float(release.t[-1]) + self.offset

    @property
    def next_due(self) -> float | None:
        """The public time of the oldest held release (None when nothing is held)."""
        return self.public_time(self._held[0]) if self._held else None

    def due(self, clock: float) -> list[PrivateRelease]:
        """Advance the clock to ``clock`` (it never goes back); take the releases now due."""
        self.clock = max(self.clock, clock)
        out: list[PrivateRelease] = []
        while self._held and self.public_time(self._held[0]) <= self.clock:
            out.append(self._held.popleft())
        return out

    def take_all(self) -> list[PrivateRelease]:
        """Everything held (the end of a stream: what was computed goes out)."""
        out = list(self._held)
        self._held.clear()
        return out

    def reset(self) -> None:
        """Forget what is held (already charged) and the clock."""
        self._held.clear()
        self.clock = -math.inf
