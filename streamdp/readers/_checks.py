"""The checks every reader applies, so that no format turns damaged or mislabelled data into
plausible-looking gaze.

- **Sampling rate** (:func:`check_sampling_rate`): the typical step between timestamps must be
  that of an eye tracker, :data:`MIN_RATE_HZ` to :data:`MAX_RATE_HZ`. Timestamps in ms where s are
  expected (or s where ns are) fail it by a factor of 1000 or more, and the message says which unit
  they look like and what to multiply or divide by.
- **Time order** (:func:`check_time_order`): a sample stream read from a file must not go back in
  time. A step back means a damaged or spliced file, and re-sorting it would hide that, so the
  reader refuses, naming the row. One exception: Pupil Capture writes ``.pldata`` gaze in the order
  it publishes it, and monocular gaze may be published up to ~10 eye frames behind binocular gaze
  already written (≤ 0.33 s with 30 Hz eye cameras), and an eye process that falls behind on a
  loaded PC publishes its gaze up to 1.3 s late (measured on the real Capture v3.6: the live
  session waits 2 s for it, and takes 1 s more as no jump). Steps back within
  :data:`PLDATA_REORDER_TOLERANCE` are that interleaving and are sorted; farther back is refused.
  Event lists (blinks, fixations) are sets of intervals, not streams, and are ordered by the reader.
- **Valid gaze** (:func:`require_valid_gaze`): a recording must hold at least one sample with a
  gaze position and a confidence above 0; otherwise every feature would be computed from nothing.
- **Overlap** (:func:`check_overlap`): a side stream (pupil diameters, blinks) must overlap the
  gaze in time, or it is on another clock or in another unit.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InputError
from ..gaze import GazeBatch

#: the slowest and fastest sampling rates of an eye tracker streamdp accepts (Hz): EyeLink's
#: 2 kHz with room for clock jitter at the top
MIN_RATE_HZ = 10.0
MAX_RATE_HZ = 2500.0
#: how far (s) a ``.pldata`` gaze datum may lie behind one written before it and still be sorted
PLDATA_REORDER_TOLERANCE = 3.0

_SCALE = {"s": 1.0, "ms": 1e-3, "µs": 1e-6, "ns": 1e-9}
_UNIT_NAME = {"s": "seconds", "ms": "milliseconds", "µs": "microseconds", "ns": "nanoseconds"}


def typical_step(t: ArrayLike) -> float | None:
    """The median step between distinct timestamps, measured over 8 steps at a time so that two
    interleaved streams (two eye cameras a fraction of a frame apart) count as one; None when
    there are fewer than two distinct timestamps.

    Examples
    --------
    >>> round(typical_step([0.0, 0.001, 0.008, 0.009, 0.016, 0.017, 0.024, 0.025, 0.032, 0.033]), 6)
    0.004
    """
    u = np.unique(np.asarray(t, dtype=np.float64))
    if u.size < 2:
        return None
    k = min(8, u.size - 1)
    return float(np.median((u[k:] - u[:-k]) / k))


def _plausible(step_s: float) -> bool:
    return 1.0 / MAX_RATE_HZ <= step_s <= 1.0 / MIN_RATE_HZ


def _factor(f: float) -> str:
    return f"{f:.0f}" if f <= 1000 else f"1e{round(math.log10(f))}"


def check_sampling_rate(where: str, t: ArrayLike, unit: str = "s") -> None:
    """Refuse timestamps whose typical step is no eye tracker's sampling rate.

    Parameters
    ----------
    where : str
        The file and column, named in the message.
    t : array of float
        The timestamps as the file gives them, in any order.
    unit : {"s", "ms", "µs", "ns"}
        The unit the format says they are in.

    Raises
    ------
    InputError
        The rate is outside :data:`MIN_RATE_HZ` .. :data:`MAX_RATE_HZ`; where another unit would
        make it plausible the message names that unit and the factor to apply.

    Examples
    --------
    >>> check_sampling_rate("gaze.csv", [0.0, 0.005, 0.010])
    >>> check_sampling_rate("gaze.csv", [0.0, 5.0, 10.0])
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: gaze.csv: timestamps look like milliseconds, not seconds: median step 5 — divide by 1000
    """
    step = typical_step(t)
    if step is None or _plausible(step * _SCALE[unit]):
        return
    guess = next((u for u in _SCALE if u != unit and _plausible(step * _SCALE[u])), None)
    if guess is not None:
        f = _SCALE[guess] / _SCALE[unit]
        fix = f"divide by {_factor(1 / f)}" if f < 1 else f"multiply by {_factor(f)}"
        raise InputError(
            f"{where}: timestamps look like {_UNIT_NAME[guess]}, not {_UNIT_NAME[unit]}: median step {step:g} — {fix}"
        )
    rate = 1.0 / (step * _SCALE[unit])
    raise InputError(
        f"{where}: median step {step:g} {unit} between timestamps means {rate:.4g} Hz, no eye tracker's sampling "
        f"rate ({MIN_RATE_HZ:g} Hz to {MAX_RATE_HZ:g} Hz): check the unit"
    )


def check_time_order(
    where: str,
    times: ArrayLike,
    *,
    first_row: int = 2,
    rows: NDArray[np.intp] | None = None,
    noun: str = "row",
    tolerance: float = 0.0,
) -> NDArray[np.intp] | None:
    """Refuse timestamps (s) that go backwards by more than ``tolerance``; return the stable order
    that sorts those within it, or None when ``t`` is already in order.

    Parameters
    ----------
    where : str
        The file (and column), named in the message.
    times : array of float
        Timestamps in s, in file order.
    first_row, rows, noun : int, array of int, str
        How the message names sample ``i``: ``f"{noun} {rows[i]}"``, by default ``i + first_row``
        (a CSV's first data row is row 2).
    tolerance : float
        How far (s) a sample may lie behind the latest one before it (0: not at all).

    Raises
    ------
    InputError
        A sample lies more than ``tolerance`` behind an earlier one; the message names it.

    Examples
    --------
    >>> check_time_order("gaze.csv", np.array([1.0, 1.1, 1.1])) is None
    True
    >>> check_time_order("gaze.pldata", np.array([1.0, 1.2, 1.1]), tolerance=1.0).tolist()
    [0, 2, 1]
    """
    t = np.asarray(times, dtype=np.float64)
    if t.shape[0] < 2:
        return None
    latest = np.maximum.accumulate(t)
    behind = latest[:-1] - t[1:]
    if not np.any(behind > 0.0):
        return None
    too_far = np.flatnonzero(behind > tolerance)
    if too_far.size:
        i = int(too_far[0]) + 1
        row = int(rows[i]) if rows is not None else i + first_row
        allowed = f" (more than the {tolerance:g} s this format may interleave)" if tolerance else ""
        raise InputError(
            f"{where}: timestamps go backwards at {noun} {row}: {float(t[i])!r} after {float(latest[i - 1])!r}, "
            f"{float(behind[i - 1]):.6g} s back{allowed}; the file is damaged or joins recordings, and streamdp "
            "does not re-sort it"
        )
    return np.argsort(t, kind="stable")


def require_valid_gaze(gaze: GazeBatch, where: str) -> None:
    """Refuse gaze without one sample that has a position and a confidence above 0.

    Raises
    ------
    InputError
        No sample is usable; the message counts why.
    """
    n = len(gaze)
    if n == 0:
        raise InputError(f"{where}: holds no gaze")
    if np.any(gaze.valid & (gaze.confidence > 0.0)):
        return
    no_position = int(np.count_nonzero(~gaze.valid))
    raise InputError(
        f"{where}: no valid gaze: of its {n} samples {no_position} have no gaze position (empty or NaN, or the "
        f"headset not worn) and {n - no_position} have confidence 0"
    )


def check_overlap(where: str, what: str, start: ArrayLike, end: ArrayLike, gaze_t: NDArray[np.float64]) -> None:
    """Refuse a side stream (pupil samples, blinks: intervals ``start``..``end`` in s) of which
    nothing falls within the gaze's time span.

    Raises
    ------
    InputError
        Nothing overlaps: the stream is on another clock or in another unit.
    """
    s = np.asarray(start, dtype=np.float64)
    e = np.asarray(end, dtype=np.float64)
    if s.size == 0 or gaze_t.shape[0] == 0:
        return
    t0, t1 = float(gaze_t[0]), float(gaze_t[-1])
    if np.any((e >= t0) & (s <= t1)):
        return
    raise InputError(
        f"{where}: none of its {what} ({float(s.min())!r} .. {float(e.max())!r}) falls within the gaze "
        f"({t0!r} .. {t1!r}): another clock or another unit"
    )
