"""Eye-movement event types: struct-of-arrays, produced by the event detector."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from .gaze import BlinkEvents


def _empty() -> NDArray[np.float64]:
    return np.empty(0)


@dataclass(frozen=True, eq=False)
class Fixations:
    """Fixations: times in s, centroid and spread in signal units (degrees by default)."""

    start: NDArray[np.float64] = field(default_factory=_empty)
    end: NDArray[np.float64] = field(default_factory=_empty)
    x: NDArray[np.float64] = field(default_factory=_empty)
    y: NDArray[np.float64] = field(default_factory=_empty)
    var_x: NDArray[np.float64] = field(default_factory=_empty)
    var_y: NDArray[np.float64] = field(default_factory=_empty)
    #: mean and variance of the pupil diameter over the fixation; NaN where none was measured
    pupil_mean: NDArray[np.float64] = field(default_factory=_empty)
    pupil_var: NDArray[np.float64] = field(default_factory=_empty)

    @property
    def duration(self) -> NDArray[np.float64]:
        return self.end - self.start

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @staticmethod
    def concat(parts: list[Fixations]) -> Fixations:
        if not parts:
            return Fixations()
        return Fixations(*(np.concatenate([getattr(p, f) for p in parts]) for f in _FIXATION_FIELDS))

    def select(self, mask: NDArray[np.bool_]) -> Fixations:
        return Fixations(*(getattr(self, f)[mask] for f in _FIXATION_FIELDS))


_FIXATION_FIELDS = ("start", "end", "x", "y", "var_x", "var_y", "pupil_mean", "pupil_var")


@dataclass(frozen=True, eq=False)
class Saccades:
    """Saccades between consecutive fixations: from the end of one to the start of the next.

    Amplitude and direction are those of the displacement between the two fixation centroids;
    ``angle`` is in degrees counter-clockwise from rightward, ``letter`` the saccade's letter in
    the 24-letter wordbook alphabet.
    """

    start: NDArray[np.float64] = field(default_factory=_empty)
    end: NDArray[np.float64] = field(default_factory=_empty)
    amplitude: NDArray[np.float64] = field(default_factory=_empty)
    angle: NDArray[np.float64] = field(default_factory=_empty)
    dx: NDArray[np.float64] = field(default_factory=_empty)
    letter: NDArray[np.int8] = field(default_factory=lambda: np.empty(0, dtype=np.int8))

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @staticmethod
    def concat(parts: list[Saccades]) -> Saccades:
        if not parts:
            return Saccades()
        return Saccades(*(np.concatenate([getattr(p, f) for p in parts]) for f in _SACCADE_FIELDS))

    def select(self, mask: NDArray[np.bool_]) -> Saccades:
        return Saccades(*(getattr(self, f)[mask] for f in _SACCADE_FIELDS))


_SACCADE_FIELDS = ("start", "end", "amplitude", "angle", "dx", "letter")


def concat_blinks(parts: list[BlinkEvents]) -> BlinkEvents:
    if not parts:
        return BlinkEvents(np.empty(0), np.empty(0))
    return BlinkEvents(np.concatenate([p.start for p in parts]), np.concatenate([p.end for p in parts]))


@dataclass(frozen=True, eq=False)
class EventBatch:
    """What the event detector finished during one update.

    Every event with an end time before ``final_before`` has been emitted by now, and no later
    update will emit one. ``restarts`` holds the time of the first sample of every segment that
    began in this update (the stream's first sample, and the first sample after a gap longer than
    the segment gap); ``segment_ends`` the last sample time of the segment each one closes (NaN
    for the first segment of the stream).
    """

    fixations: Fixations
    saccades: Saccades
    blinks: BlinkEvents
    final_before: float
    restarts: NDArray[np.float64] = field(default_factory=_empty)
    segment_ends: NDArray[np.float64] = field(default_factory=_empty)

    @staticmethod
    def concat(parts: list[EventBatch]) -> EventBatch:
        return EventBatch(
            Fixations.concat([p.fixations for p in parts]),
            Saccades.concat([p.saccades for p in parts]),
            concat_blinks([p.blinks for p in parts]),
            parts[-1].final_before if parts else -np.inf,
            np.concatenate([p.restarts for p in parts]) if parts else _empty(),
            np.concatenate([p.segment_ends for p in parts]) if parts else _empty(),
        )
