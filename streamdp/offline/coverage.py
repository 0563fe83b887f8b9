"""What of a recording's gaze can count, in words: the samples the confidence threshold keeps, and
the steps the public chunk grid releases.

Both are told to the person who runs a command on their own recording (never written into a
release): ``features``, ``replay`` and ``heatmap`` refuse gaze of which no sample is usable and
warn when most of it is not; ``replay`` says why steps of a recording are not in any chunk.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..privacy.mechanisms import check_chunk_length
from ..stages.schedule import ReleaseSchedule

__all__ = ["WARN_ABOVE", "GazeTally", "GridCoverage"]

#: the share of unusable samples above which a command warns (and still runs)
WARN_ABOVE = 0.5


@dataclass
class GazeTally:
    """Counts of the gaze samples seen and of those usable (a position, confidence at or above the
    threshold), and the first and last timestamp; filled a batch at a time.

    Examples
    --------
    >>> tally = GazeTally(0.6)
    >>> tally.add(np.array([1.0, 2.0]), np.array([True, True]), np.array([0.3, 0.2]))
    >>> tally.problem()
    ('all 2 gaze samples are below --min-confidence 0.6 (as when the eye tracker loses the eye)', '')
    """

    threshold: float
    total: int = 0
    usable: int = 0
    invalid: int = 0
    first: float = math.inf
    last: float = -math.inf

    def add(self, t: NDArray[np.float64], valid: NDArray[np.bool_], confidence: NDArray[np.float64]) -> None:
        if not len(t):
            return
        self.total += len(t)
        self.usable += int(np.count_nonzero(valid & (confidence >= self.threshold)))
        self.invalid += int(np.count_nonzero(~valid))
        self.first = min(self.first, float(t[0]))
        self.last = max(self.last, float(t[-1]))

    def _below(self) -> str:
        where = f"below --min-confidence {self.threshold:g}"
        return f"{where} or without a position" if self.invalid else where

    def problem(self) -> tuple[str, str]:
        """``(error, warning)``: an error when no sample is usable, a warning when more than
        :data:`WARN_ABOVE` of them are not; empty strings otherwise."""
        if not self.total:
            return "", ""
        if not self.usable:
            lost = " (as when the eye tracker loses the eye)" if not self.invalid else ""
            return f"all {self.total} gaze samples are {self._below()}{lost}", ""
        share = 1.0 - self.usable / self.total
        if share <= WARN_ABOVE:
            return "", ""
        return "", (
            f"{share:.0%} of {self.total} gaze samples are {self._below()}: only the other {1 - share:.0%} count"
        )


@dataclass(frozen=True)
class GridCoverage:
    """The steps and chunks of gaze from ``start`` to ``stop`` on the public grid of ``config``.

    Examples
    --------
    >>> cov = GridCoverage.of(SessionConfig(chunk_length=8), 1216.2187, 1255.4)
    >>> cov.steps, cov.chunks, cov.before, cov.after
    (18, 1, 3, 7)
    """

    config: SessionConfig
    start: float
    stop: float
    #: the first and last step with a full window (``last < first``: none)
    first: int
    last: int
    #: the chunk slots released, and the first slot (the one after the first full window)
    slots: tuple[int, ...]
    first_slot: int

    @classmethod
    def of(cls, config: SessionConfig, start: float, stop: float) -> GridCoverage:
        s = _schedule(config, config.chunk_length)
        first = s.first_step(start)
        last = math.floor(stop / s.step)
        while s.step_time(last + 1) <= stop:
            last += 1
        while last >= first and s.step_time(last) > stop:
            last -= 1
        slots = tuple(s.chunks_between(start, stop))
        return cls(config, start, stop, first, last, slots, s.first_chunk(start))

    @property
    def steps(self) -> int:
        return max(0, self.last - self.first + 1)

    @property
    def chunks(self) -> int:
        return len(self.slots)

    @property
    def before(self) -> int:
        """Steps with a full window before the first chunk slot starts."""
        n = self.config.chunk_length
        return min(self.steps, max(0, self.first_slot * n - self.first))

    @property
    def after(self) -> int:
        """Steps with a full window after the last chunk ends (all of them without a chunk)."""
        if not self.slots:
            return self.steps - self.before
        return max(0, self.last - ((self.slots[-1] + 1) * self.config.chunk_length - 1))

    def _grid(self) -> str:
        c = self.config
        return (
            f"chunks are fixed slots of {c.chunk_length} steps × {c.step:g} s on the public grid of the source "
            f"clock (one every {c.chunk_length * c.step:g} s, whatever the gaze)"
        )

    def _t(self, k: int) -> str:
        return f"t {k * self.config.step:.1f} s"

    def _span(self, a: int, b: int) -> str:
        return f"t {a * self.config.step:.1f}–{b * self.config.step:.1f} s"

    def _before(self) -> str:
        return f"the {self.before} before the first slot (it starts before the first full window)"

    def no_chunk(self) -> str:
        """Why the gaze gives no chunk (call when :attr:`chunks` is 0): too few steps, or steps
        enough that do not fill a slot of the public grid."""
        c, n = self.config, self.config.chunk_length
        gives = f"{self.stop - self.start:.1f} s of gaze gives {self.steps} steps"
        if not self.steps:
            return f"shorter than one chunk: {gives} (a step needs a full {c.window:g} s window), a chunk needs {n}"
        a, b = self.first_slot * n, (self.first_slot + 1) * n - 1
        shorter = self._shorter()
        hint = f"give --chunk-length {shorter} or less, or" if shorter else "give"
        head = (
            f"shorter than one chunk: {gives}, a chunk needs {n}"
            if self.steps < n
            else f"no whole chunk: {gives}, enough for a chunk of {n} but not on the public grid"
        )
        before = (
            f"; the {self.before} steps before it lie in a slot that starts before the first full window"
            if self.before
            else ""
        )
        return (
            f"{head}: {self._grid()}; the first slot after the gaze's first full {c.window:g} s window "
            f"({self._t(self.first)}) runs {self._span(a, b)}, past the end of the gaze at t {self.stop:.1f} s"
            f"{before}: {hint} a longer recording"
        )

    def _shorter(self) -> int | None:
        n = self.config.chunk_length // 2
        while n >= 2:
            check_chunk_length(n)
            if _schedule(self.config, n).chunks_between(self.start, self.stop):
                return n
            n //= 2
        return None

    def note(self) -> str:
        """Why some steps are in no chunk (empty when every step is in one, or there is no chunk)."""
        if not self.slots or not (self.before or self.after):
            return ""
        n = self.config.chunk_length
        a, b = self.slots[0] * n, (self.slots[-1] + 1) * n - 1
        after = f"the {self.after} after the last (the next slot ends past the gaze)"
        left = [self._before() if self.before else "", after if self.after else ""]
        return (
            f"{self.steps} steps with a full {self.config.window:g} s window ({self._span(self.first, self.last)}), "
            f"{self.chunks * n} of them in {self.chunks} whole chunk{'s' if self.chunks != 1 else ''} "
            f"({self._span(a, b)}); {self._grid()}, so {' and '.join(x for x in left if x)} are not released"
        )


def _schedule(config: SessionConfig, chunk_length: int) -> ReleaseSchedule:
    return ReleaseSchedule(config.window, config.step, chunk_length)
