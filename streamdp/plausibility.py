"""Public plausibility bounds on recorded gaze, separate from the privacy bounds.

The privacy bounds (:mod:`streamdp.privacy.bounds`) clip what a feature may contribute to a
release; they say nothing about whether the input is gaze at all. These bounds do, and they are
public constants, the same for every recording, so that leaving a sample out reveals nothing of
anyone's gaze but that the sample was no gaze:

- **Position**: a gaze position more than :data:`MAX_SCENE_WIDTHS` scene widths (or heights)
  from the scene's centre is no place anyone looked (Capture's off-screen gaze lies within a few);
  the sample counts as invalid (no position).
- **Time**: no eye tracker gives more than :data:`MAX_SAMPLES_PER_SECOND` samples in a second (the
  fastest, 2.5 kHz, three streams at once: binocular and both eyes), and no recording pauses longer
  than :data:`MAX_GAP_S`. The samples of a second holding more, and those cut off from the longest
  stretch of the recording by such a pause, are left out (their timestamps would otherwise set
  how much work the steps between them cost).
- **Pupil diameter**: beyond physiology (:data:`DIAMETER_RANGE`: mm of a human pupil, px of an eye
  camera's image) a diameter is unknown (NaN); the sample's position still counts.

:func:`implausible` is the pure NumPy test; :func:`within_bounds` applies it to a
:class:`~streamdp.gaze.GazeBatch` and counts what it left out (:class:`Implausible`), for the
command's one-line summary. Readers and commands call it; a live session holds its decoded gaze to the
per-sample bounds with :func:`columns_within_bounds` (the same gaze, live or replayed, is the same input).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from .gaze import GazeBatch, GazeColumns

__all__ = [
    "DIAMETER_RANGE",
    "MAX_GAP_S",
    "MAX_SAMPLES_PER_SECOND",
    "MAX_SCENE_WIDTHS",
    "Implausible",
    "columns_within_bounds",
    "implausible",
    "implausible_diameter",
    "implausible_position",
    "plausible_position",
    "share",
    "within_bounds",
]

#: how far from the scene's centre (in scene widths and heights) a gaze position may lie
MAX_SCENE_WIDTHS = 10.0
#: the most gaze samples any second may hold: 2.5 kHz (EyeLink's 2 kHz with room) × 3 streams
MAX_SAMPLES_PER_SECOND = 7500
#: the longest pause (s) within one recording
MAX_GAP_S = 3600.0
#: the plausible pupil diameters, (low, high], by unit: a human pupil in mm, an eye image in px
DIAMETER_RANGE = {"mm": (0.5, 15.0), "px": (0.0, 1000.0)}


def implausible(
    t: NDArray[np.float64],
    x: NDArray[np.float64],
    y: NDArray[np.float64],
    diameter: NDArray[np.float64],
    diameter_unit: str,
) -> tuple[NDArray[np.bool_], NDArray[np.bool_], NDArray[np.bool_]]:
    """Which samples break the public bounds: ``(position, time, diameter)`` masks.

    ``t`` is in time order (s). A NaN position or diameter breaks nothing (it is already unknown).

    Examples
    --------
    >>> t = np.array([0.0, 0.01, 0.02, 9000.0])
    >>> pos, time, dia = implausible(t, np.array([0.5, 1e6, 0.4, 0.5]), np.full(4, 0.5),
    ...                              np.array([3.0, 3.0, 40.0, 3.0]), "mm")  # fmt: skip
    >>> pos.tolist(), time.tolist(), dia.tolist()
    ([False, True, False, False], [False, False, False, True], [False, False, True, False])
    """
    position = implausible_position(x, y)
    dia = implausible_diameter(diameter, diameter_unit)
    time = np.zeros(t.shape, dtype=bool)
    if t.size:
        second = np.floor(t)
        starts = np.flatnonzero(np.r_[True, second[1:] != second[:-1]])
        counts = np.diff(np.r_[starts, t.size])
        time |= np.repeat(counts > MAX_SAMPLES_PER_SECOND, counts)
        # the longest stretch without a pause of MAX_GAP_S keeps its samples; the others are cut off
        cuts = np.r_[0, np.flatnonzero(np.diff(t) > MAX_GAP_S) + 1, t.size]
        longest = int(np.argmax(np.diff(cuts)))
        outside = np.ones(t.shape, dtype=bool)
        outside[cuts[longest] : cuts[longest + 1]] = False
        time |= outside
    return position, time, dia


def implausible_position(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Which positions lie beyond :data:`MAX_SCENE_WIDTHS` of the scene's centre (NaN: none)."""
    with np.errstate(invalid="ignore"):
        return (np.abs(x - 0.5) > MAX_SCENE_WIDTHS) | (np.abs(y - 0.5) > MAX_SCENE_WIDTHS)


def plausible_position(x: NDArray[np.float64], y: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Which positions are finite and within :data:`MAX_SCENE_WIDTHS` of the scene's centre.

    Examples
    --------
    >>> plausible_position(np.array([0.5, 6.2, np.nan, np.inf]), np.array([0.5, 13.1, 0.5, 0.5])).tolist()
    [True, False, False, False]
    """
    with np.errstate(invalid="ignore"):
        return (np.abs(x - 0.5) <= MAX_SCENE_WIDTHS) & (np.abs(y - 0.5) <= MAX_SCENE_WIDTHS)


def implausible_diameter(diameter: NDArray[np.float64], diameter_unit: str) -> NDArray[np.bool_]:
    """Which diameters lie beyond :data:`DIAMETER_RANGE` of ``diameter_unit`` (NaN: none)."""
    low, high = DIAMETER_RANGE.get(diameter_unit, (-np.inf, np.inf))
    with np.errstate(invalid="ignore"):
        return (np.isfinite(diameter) & ((diameter <= low) | (diameter > high))) | np.isinf(diameter)


def columns_within_bounds(cols: GazeColumns) -> tuple[GazeColumns, Implausible]:
    """Live gaze, decoded and not yet ordered, held to the per-sample bounds as :func:`within_bounds`
    holds a recording: a position beyond them makes its sample invalid (no position), a diameter
    beyond them (in either unit's column) becomes unknown. The time bounds are a recording's (a live
    stream's clock is followed by the session's restart and leap checks). Gaze within the bounds is
    returned as it is; what was left out is counted (``times`` 0).

    Examples
    --------
    >>> from streamdp.gaze import GazeBatch
    >>> cols = GazeColumns.from_batch(GazeBatch.from_arrays(t=[0.0, 0.01], x=[0.5, 6.2], y=[0.5, 13.1]))
    >>> kept, what = columns_within_bounds(cols)
    >>> kept.valid.tolist(), what.positions
    ([True, False], 1)
    """
    position = implausible_position(cols.x, cols.y) & cols.valid
    mm = implausible_diameter(cols.diameter_mm, "mm")
    px = implausible_diameter(cols.diameter_px, "px")
    count = Implausible(len(cols), int(np.count_nonzero(position)), 0, int(np.count_nonzero(mm | px)))
    if not (count.positions or count.diameters):
        return cols, count
    kept = replace(
        cols,
        x=np.where(position, np.nan, cols.x),
        y=np.where(position, np.nan, cols.y),
        diameter_mm=np.where(mm, np.nan, cols.diameter_mm),
        diameter_px=np.where(px, np.nan, cols.diameter_px),
        valid=cols.valid & ~position,
    )
    return kept, count


@dataclass(frozen=True)
class Implausible:
    """What :func:`within_bounds` left out of ``total`` samples: ``positions`` made invalid,
    ``times`` dropped, ``diameters`` made unknown."""

    total: int
    positions: int = 0
    times: int = 0
    diameters: int = 0

    @property
    def samples(self) -> int:
        """The samples that no longer count: positions made invalid and timestamps dropped."""
        return self.positions + self.times

    def describe(self) -> str:
        """In words, with fractions; empty when nothing broke a bound.

        Examples
        --------
        >>> Implausible(9302, positions=3, diameters=12).describe()
        '3 of 9302 gaze samples (0.032%) beyond the public plausibility bounds (3 positions beyond 10 scene widths), counted as invalid; 12 pupil diameters (0.13%) beyond physiology, unknown'
        >>> Implausible(10).describe()
        ''
        """  # noqa: E501
        parts = []
        if self.samples:
            why = []
            if self.positions:
                why.append(
                    f"{self.positions} position{'s' * (self.positions != 1)} beyond {MAX_SCENE_WIDTHS:g} scene widths"
                )
            if self.times:
                why.append(
                    f"{self.times} timestamp{'s' * (self.times != 1)} beyond {MAX_SAMPLES_PER_SECOND} a second or "
                    f"a {MAX_GAP_S:g} s pause"
                )
            parts.append(
                f"{self.samples} of {self.total} gaze samples ({share(self.samples, self.total)}) beyond the public "
                f"plausibility bounds ({', '.join(why)}), counted as invalid"
            )
        if self.diameters:
            parts.append(
                f"{self.diameters} pupil diameter{'s' * (self.diameters != 1)} "
                f"({share(self.diameters, self.total)}) beyond physiology, unknown"
            )
        return "; ".join(parts)


def share(part: int, total: int) -> str:
    """``part`` of ``total`` as a percentage: two significant digits below 10 %, whole above.

    Examples
    --------
    >>> share(3, 9302), share(8000, 8000), share(800, 8000)
    ('0.032%', '100%', '10%')
    """
    share = 100.0 * part / max(total, 1)
    return f"{share:.2g}%" if share < 10 else f"{share:.0f}%"


def within_bounds(gaze: GazeBatch) -> tuple[GazeBatch, Implausible]:
    """``gaze`` within the public bounds, and what was left out: an implausible position makes its
    sample invalid (no position), an implausible timestamp drops its sample, an implausible
    diameter becomes unknown (NaN). Gaze within the bounds is returned as it is.

    Examples
    --------
    >>> g = GazeBatch.from_arrays(t=[0.0, 0.01, 0.02], x=[0.5, 1e300, 0.4], y=[0.5, 0.5, 0.5])
    >>> kept, what = within_bounds(g)
    >>> kept.valid.tolist(), what.positions, what.samples
    ([True, False, True], 1, 1)
    """
    position, time, dia = implausible(gaze.t, gaze.x, gaze.y, gaze.diameter, gaze.diameter_unit)
    position &= gaze.valid & ~time
    count = Implausible(
        len(gaze), int(np.count_nonzero(position)), int(np.count_nonzero(time)), int(np.count_nonzero(dia & ~time))
    )
    if not (count.samples or count.diameters):
        return gaze, count
    x = np.where(position, np.nan, gaze.x)
    y = np.where(position, np.nan, gaze.y)
    diameter = np.where(dia, np.nan, gaze.diameter)
    out = replace(gaze, x=x, y=y, diameter=diameter, valid=gaze.valid & ~position)
    if count.times:
        keep = np.flatnonzero(~time)
        out = replace(
            out,
            t=out.t[keep],
            x=out.x[keep],
            y=out.y[keep],
            confidence=out.confidence[keep],
            diameter=out.diameter[keep],
            eye_id=out.eye_id[keep],
            valid=out.valid[keep],
        )
    return out, count
