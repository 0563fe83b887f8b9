"""The public release schedule: step grid, chunk slots and deadlines, all from the configuration.

Everything a subscriber sees about *when* is fixed in advance, never by the gaze:

- **Steps** lie on the grid ``t_k = k · step`` of the source clock (``k`` an integer), not on the
  first sample. Published ``t`` are these grid times.
- **Chunks** are the slots ``c`` of ``n`` consecutive steps ``k ∈ [c·n, (c+1)·n)``. The session's
  first chunk is the first slot whose first step has a full window after the session's start
  (its first sample): ``c·n·step − window ≥ start``. Every slot from there whose last step lies
  before the session's stop is released, whatever the gaze did in between: a gap, a lost eye or
  a restart of the detector never moves the grid nor changes how many releases there are. A
  step whose window holds no event releases the public defaults (rates 0, means and variances
  0), clipped and noised as any other.
- **Deadlines.** Chunk ``c`` is computed when the data clock passes ``T_c + slack`` (``T_c`` its
  last step; the pipeline's slack is 0): with what is known then, whatever the gaze still holds
  open. A live session adds its reorder window and holds the computed release for its own
  ``deadline_slack``, so in source time the release goes out at ``T_c + reorder_window +
  deadline_slack``, however long the computation took. An event
  that becomes known after the deadline of the chunk its end falls in counts from the next
  step on (its end is taken as just after the last step computed).

All of it is defined in data time, so a replay and a live run of the same gaze give the same
bytes; a live shell moves the clock on without gaze by :meth:`streamdp.session.Session.advance_to`.
The timing defaults (deadline slack, event blocks, saccade link) are in
:mod:`streamdp.schedule_defaults`, where the raw-gaze reach (:mod:`streamdp.privacy.reach`) reads
them too without importing the stages.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..schedule_defaults import DEFAULT_DEADLINE_SLACK

__all__ = ["DEFAULT_DEADLINE_SLACK", "ReleaseSchedule", "first_full_step", "session_chunks"]


@dataclass(frozen=True)
class ReleaseSchedule:
    """The public grid of one configuration.

    Parameters
    ----------
    window, step : float
        Window length and step in s.
    chunk_length : int
        Steps per chunk ``n``.
    deadline_slack : float
        s after a chunk's last step (in the pipeline's data time) at which it is computed
        (default 0).

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> s = ReleaseSchedule(window=30.0, step=0.5, chunk_length=64)
    >>> s.first_chunk(start=12.3), s.chunk_times(2)[[0, -1]].tolist(), s.deadline(2)
    (2, [64.0, 95.5], 95.5)
    >>> s.chunks_between(start=12.3, stop=200.0)
    [2, 3, 4, 5]
    """

    window: float
    step: float
    chunk_length: int
    deadline_slack: float = 0.0

    def __post_init__(self) -> None:
        for name in ("window", "step", "deadline_slack"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"ReleaseSchedule.{name} must be a number, got {v!r}")
            if not math.isfinite(v) or v < 0 or (v == 0 and name != "deadline_slack"):
                raise ValueError(f"ReleaseSchedule.{name} must be finite and > 0 (slack ≥ 0), got {v!r}")
        n = self.chunk_length
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"ReleaseSchedule.chunk_length must be an int ≥ 1, got {n!r}")

    def step_time(self, k: int) -> float:
        """The public time of step ``k``."""
        return float(k * self.step)

    def first_step(self, start: float) -> int:
        """The first step whose window ``(t − window, t]`` starts at or after ``start``."""
        return first_full_step(start, self.window, self.step)

    def first_chunk(self, start: float) -> int:
        """The first chunk slot released for a session starting at ``start``."""
        return -(-self.first_step(start) // self.chunk_length)

    def last_step(self, c: int) -> int:
        return (c + 1) * self.chunk_length - 1

    def chunk_times(self, c: int) -> NDArray[np.float64]:
        """The step times of chunk ``c`` (an array of n floats)."""
        return np.arange(c * self.chunk_length, (c + 1) * self.chunk_length, dtype=np.float64) * self.step

    def deadline(self, c: int) -> float:
        """Data time after which chunk ``c`` is computed with what is known."""
        return self.step_time(self.last_step(c)) + self.deadline_slack

    def chunks_between(self, start: float, stop: float) -> list[int]:
        """The chunk slots a session from ``start`` to ``stop`` releases: from the first with full
        windows to the last whose last step is at or before ``stop``."""
        c0 = self.first_chunk(start)
        c1 = math.floor((stop / self.step + 1) / self.chunk_length) - 1
        while self.step_time(self.last_step(c1 + 1)) <= stop:
            c1 += 1
        while c1 >= c0 and self.step_time(self.last_step(c1)) > stop:
            c1 -= 1
        return list(range(c0, c1 + 1))


def first_full_step(start: float, window: float, step: float) -> int:
    """Smallest ``k`` with ``k·step − window ≥ start`` (exact on the float grid).

    Examples
    --------
    >>> first_full_step(0.0, 30.0, 0.5), first_full_step(0.1, 30.0, 0.5)
    (60, 61)
    """
    k = math.ceil((start + window) / step)
    while k * step - window < start:
        k += 1
    while (k - 1) * step - window >= start:
        k -= 1
    return int(k)


def session_chunks(*, start: float, stop: float, window: float, step: float, chunk_length: int) -> int:
    """Chunks a whole session from ``start`` to ``stop`` releases (all of them carry its gaze).

    Examples
    --------
    >>> session_chunks(start=0.0, stop=300.0, window=30.0, step=0.5, chunk_length=64)
    8
    """
    return len(ReleaseSchedule(window, step, chunk_length).chunks_between(start, stop))
