"""Utility of a gaze tick stream (issue #20): how far the positions are from the truth, and how
well an app selecting by dwell or following a moving target could use them. Pure NumPy; every
position is in degrees, every time in seconds on the ticks' clock. The synthetic tasks that
give the truth are in :mod:`streamdp.offline.gaze_tasks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

_F64 = NDArray[np.float64]
#: slack on a dwell's length: tick times k / rate differ from exact multiples by an ulp or so
_DWELL_SLACK_S = 1e-9


@dataclass(frozen=True)
class ErrorSummary:
    """Euclidean error in degrees: its median and 95th percentile."""

    median: float
    p95: float


@dataclass(frozen=True, eq=False)
class Selections:
    """Dwell selections: at ``t[i]`` target ``target[i]`` was selected."""

    t: _F64
    target: NDArray[np.int64]

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass(frozen=True)
class DwellScore:
    """``accuracy``: fraction of the trials whose first selection was the intended target;
    ``mean_time_s``: mean time from a trial's start to that selection over those trials (NaN
    when none); ``trials``: how many trials were scored; ``selections``: all selections made."""

    accuracy: float
    mean_time_s: float
    trials: int
    selections: int


def _points(name: str, values: ArrayLike, n: int | None = None) -> _F64:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 2 or a.shape[1] != 2:
        raise ValueError(f"{name} must be an (m, 2) array of degrees, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} has {a.shape[0]} rows, expected {n}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} holds non-finite values")
    return a


def _times(name: str, values: ArrayLike, n: int | None = None) -> _F64:
    t = np.asarray(values, dtype=np.float64)
    if t.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of times, got shape {t.shape}")
    if n is not None and t.shape[0] != n:
        raise ValueError(f"{name} has {t.shape[0]} values, expected {n}")
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{name} holds non-finite values")
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"{name} must increase strictly")
    return t


def _positive(name: str, value: float) -> float:
    v = float(value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _summary(err: _F64) -> ErrorSummary:
    if not len(err):
        raise ValueError("no positions to score")
    median, p95 = np.percentile(err, [50.0, 95.0])
    return ErrorSummary(float(median), float(p95))


def angular_error(ticks_deg: ArrayLike, true_deg: ArrayLike) -> ErrorSummary:
    """Median and 95th percentile of the Euclidean distance between positions, in degrees.

    Parameters
    ----------
    ticks_deg, true_deg : array (m, 2)
        Positions and their truth, row by row (m ≥ 1).

    Raises
    ------
    ValueError
        Arrays not (m, 2), of different lengths, empty or not finite.

    Examples
    --------
    >>> angular_error([[0.0, 0.0], [3.0, 4.0]], [[0.0, 0.0], [0.0, 0.0]])
    ErrorSummary(median=2.5, p95=4.75)
    """
    a = _points("ticks_deg", ticks_deg)
    b = _points("true_deg", true_deg, len(a))
    return _summary(np.hypot(a[:, 0] - b[:, 0], a[:, 1] - b[:, 1]))


def pursuit_error(t: ArrayLike, deg: ArrayLike, target_t: ArrayLike, target_deg: ArrayLike) -> ErrorSummary:
    """Error of the positions ``deg`` at times ``t`` from a target's path (interpolated linearly
    between its samples ``target_deg`` at ``target_t``): median and 95th percentile, degrees.

    Raises
    ------
    ValueError
        Bad shapes, times not strictly increasing, or ``t`` outside the target's time span.

    Examples
    --------
    >>> pursuit_error([0.5, 1.5], [[1.0, 0.0], [2.0, 0.0]], [0.0, 2.0], [[0.0, 0.0], [2.0, 0.0]])
    ErrorSummary(median=0.5, p95=0.5)
    """
    tt = _times("t", t)
    d = _points("deg", deg, len(tt))
    gt = _times("target_t", target_t)
    gd = _points("target_deg", target_deg, len(gt))
    if len(tt) and (tt[0] < gt[0] or tt[-1] > gt[-1]):
        raise ValueError(f"t spans [{tt[0]}, {tt[-1]}], outside the target's [{gt[0]}, {gt[-1]}]")
    true = np.stack([np.interp(tt, gt, gd[:, 0]), np.interp(tt, gt, gd[:, 1])], axis=1)
    return _summary(np.hypot(*(d - true).T))


def dwell_selection(
    t: ArrayLike,
    deg: ArrayLike,
    targets_deg: ArrayLike,
    *,
    dwell_s: float = 1.0,
    radius_deg: float = 7.5,
    grace_ticks: int = 0,
) -> Selections:
    """Selections by dwell: a tick is in a target's cell when that target is the nearest and
    within ``radius_deg``; a target is selected at the first tick at which the gaze has stayed in
    its cell for ``dwell_s`` from the stay's first tick to this one (at 60 Hz and 1 s: the
    stay's 61st tick), once per stay: it re-arms
    only after the gaze left the cell. A stay ends at the first tick elsewhere (the usual rule),
    or with ``grace_ticks`` > 0 only at more than that many ticks elsewhere in a row (a tolerance
    for tracking loss or noise that dwell interfaces often have).

    Parameters
    ----------
    t : array (m,)
        Tick times, strictly increasing (a contiguous tick stream).
    deg : array (m, 2)
        Positions at the ticks, degrees.
    targets_deg : array (n, 2)
        The targets, degrees.
    dwell_s, radius_deg : float
        Dwell time and cell radius, > 0.
    grace_ticks : int
        Ticks elsewhere in a row that a stay survives (≥ 0; default 0).

    Raises
    ------
    ValueError
        Bad shapes, times not strictly increasing, a dwell or radius not > 0, or a negative or
        non-integer ``grace_ticks``.

    Examples
    --------
    >>> t = np.arange(10) * 0.5
    >>> deg = [[0, 0]] * 4 + [[15, 0]] * 2 + [[0, 0]] * 4
    >>> s = dwell_selection(t, deg, [[0, 0], [15, 0]], dwell_s=1.0)
    >>> s.t.tolist(), s.target.tolist()
    ([1.0, 4.0], [0, 0])
    >>> dwell_selection(t, deg, [[0, 0], [15, 0]], dwell_s=1.0, grace_ticks=2).t.tolist()
    [1.0]
    """
    tt = _times("t", t)
    d = _points("deg", deg, len(tt))
    tg = _points("targets_deg", targets_deg)
    if not len(tg):
        raise ValueError("targets_deg holds no target")
    dwell, radius = _positive("dwell_s", dwell_s), _positive("radius_deg", radius_deg)
    if isinstance(grace_ticks, bool) or not isinstance(grace_ticks, (int, np.integer)) or grace_ticks < 0:
        raise ValueError(f"grace_ticks must be an int >= 0, got {grace_ticks!r}")
    dist = np.hypot(d[:, None, 0] - tg[None, :, 0], d[:, None, 1] - tg[None, :, 1])
    near = np.argmin(dist, axis=1) if len(d) else np.empty(0, dtype=np.int64)
    cell = np.where(dist[np.arange(len(d)), near] <= radius, near, -1)
    times, chosen = [], []
    for c in np.unique(cell[cell >= 0]):  # one pass per target, never per tick
        inside = np.flatnonzero(cell == c)
        # a new stay where more than grace_ticks ticks elsewhere came before this tick
        first = np.flatnonzero(np.diff(inside, prepend=-(grace_ticks + 2)) > grace_ticks + 1)
        last = np.append(first[1:] - 1, len(inside) - 1)
        t_in = tt[inside]
        at = np.searchsorted(t_in, t_in[first] + dwell - _DWELL_SLACK_S, side="left")  # a tick in the cell
        done = at <= last
        times.append(t_in[at[done]])
        chosen.append(np.full(int(done.sum()), c, dtype=np.int64))
    if not times:
        return Selections(np.empty(0), np.empty(0, dtype=np.int64))
    st, sc = np.concatenate(times), np.concatenate(chosen)
    order = np.argsort(st, kind="stable")
    return Selections(st[order], sc[order])


def dwell_accuracy(
    t: ArrayLike,
    deg: ArrayLike,
    targets_deg: ArrayLike,
    trial_start: ArrayLike,
    trial_target: ArrayLike,
    *,
    trial_end: ArrayLike | None = None,
    dwell_s: float = 1.0,
    radius_deg: float = 7.5,
    grace_ticks: int = 0,
) -> DwellScore:
    """Score a dwell task: trial ``i`` asks for target ``trial_target[i]`` from
    ``trial_start[i]`` until ``trial_end[i]`` (default: the next trial's start; the last trial
    runs to the end). It succeeds when its first selection (:func:`dwell_selection`) is that
    target. With one target in n selected at random, accuracy is about 1/n; a stream that never
    stays in a cell selects nothing and scores 0.

    Raises
    ------
    ValueError
        Bad shapes, unordered trials, a trial ending before it starts, a target index out of
        range, or those of :func:`dwell_selection`.

    Examples
    --------
    >>> t = np.arange(40) * 0.1
    >>> deg = [[0, 0]] * 20 + [[15, 0]] * 20
    >>> dwell_accuracy(t, deg, [[0, 0], [15, 0]], [0.0, 2.0], [0, 1])
    DwellScore(accuracy=1.0, mean_time_s=1.0, trials=2, selections=2)
    """
    tg = _points("targets_deg", targets_deg)
    sel = dwell_selection(t, deg, tg, dwell_s=dwell_s, radius_deg=radius_deg, grace_ticks=grace_ticks)
    start = _times("trial_start", trial_start)
    want = np.asarray(trial_target)
    if want.shape != start.shape or (len(want) and want.dtype.kind not in "iu"):
        raise ValueError(f"trial_target must be {len(start)} integer target indices, got {want!r}")
    if np.any((want < 0) | (want >= len(tg))):
        raise ValueError(f"trial_target indexes beyond the {len(tg)} targets")
    if trial_end is None:
        end = np.append(start[1:], np.inf)
    else:
        end = np.asarray(trial_end, dtype=np.float64)
        if end.shape != start.shape or np.any(~(end > start)):
            raise ValueError("trial_end must hold one time after each trial's start")
    if not len(start):
        raise ValueError("no trials to score")
    first = np.searchsorted(sel.t, start, side="left")
    has = first < len(sel)
    idx = np.minimum(first, max(len(sel) - 1, 0))
    hit = has & (sel.t[idx] < end) & (sel.target[idx] == want) if len(sel) else np.zeros(len(start), dtype=bool)
    times = sel.t[idx[hit]] - start[hit] if len(sel) else np.empty(0)
    mean_time = float(np.mean(times)) if len(times) else math.nan
    return DwellScore(float(np.mean(hit)), mean_time, len(start), len(sel))
