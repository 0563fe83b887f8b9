"""Synthetic interactive gaze tasks for the real-time channel (issue #20): dwell selection on a
grid of targets, and smooth pursuit of a moving target. Each returns the gaze (a
:class:`~streamdp.gaze.GazeBatch` in the scene camera's normalized units) and its ground truth;
:mod:`streamdp.offline.gaze_measures` scores tick streams against it.

The people are those of :mod:`streamdp.synthetic`: sensor noise, fixational drift, blink rate and
duration, confidence drop-outs and pupil size come from its
:class:`~streamdp.synthetic.PersonProfile`; what interactive tasks add (reaction time, saccade
undershoot, pursuit gain, lag and catch-up threshold) comes from :class:`TaskTraits`, also drawn
per person id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..gaze import BINOCULAR, GazeBatch
from ..kernels.geometry import CAMERA_FOV_DEG, degrees_to_norm
from ..stages.gaze_ticks import DEFAULT_TICK_RATE, GazeTicks, Ticks
from ..synthetic import PersonProfile

_F64 = NDArray[np.float64]
_FOV = CAMERA_FOV_DEG["pupil_core_720p"]
_FIX, _SAC, _PURSUIT = 0, 1, 2  # kinds of eye-movement segments

#: the default dwell targets: a 3 × 3 grid 15° apart, centred on the optical axis, row by row
#: from the top left (index 4 is the centre)
GRID_TARGETS_DEG: _F64 = np.array([(x, y) for y in (15.0, 0.0, -15.0) for x in (-15.0, 0.0, 15.0)])
GRID_TARGETS_DEG.setflags(write=False)


@dataclass(frozen=True)
class TaskTraits:
    """How one synthetic person acts in interactive tasks (units in the names)."""

    latency_s: float = 0.22
    undershoot: float = 0.08
    landing_sd_deg: float = 0.4
    pursuit_gain: float = 0.92
    pursuit_lag_s: float = 0.1
    catch_up_deg: float = 2.0

    @classmethod
    def for_person(cls, person_id: int) -> TaskTraits:
        """A distinct, reproducible set of traits per person id (physiological ranges)."""
        r = np.random.default_rng(np.random.SeedSequence([0x7A5C, int(person_id)]))
        return cls(
            latency_s=float(r.uniform(0.18, 0.3)),
            undershoot=float(r.uniform(0.03, 0.12)),
            landing_sd_deg=float(r.uniform(0.25, 0.6)),
            pursuit_gain=float(r.uniform(0.85, 0.98)),
            pursuit_lag_s=float(r.uniform(0.08, 0.15)),
            catch_up_deg=float(r.uniform(1.5, 2.5)),
        )


def _people(person: PersonProfile | int | None) -> tuple[PersonProfile, TaskTraits]:
    if person is None:
        return PersonProfile(), TaskTraits()
    if isinstance(person, PersonProfile):
        return person, TaskTraits()
    return PersonProfile.for_person(int(person)), TaskTraits.for_person(int(person))


@dataclass(frozen=True, eq=False)
class DwellTask:
    """Gaze of a dwell-selection task and its truth: trial ``i`` asks for target
    ``trial_target[i]`` from ``trial_start[i]`` to ``trial_end[i]`` (s, the gaze's clock)."""

    gaze: GazeBatch
    targets_deg: _F64
    trial_start: _F64
    trial_end: _F64
    trial_target: NDArray[np.int64]
    person: PersonProfile
    traits: TaskTraits


@dataclass(frozen=True, eq=False)
class PursuitTask:
    """Gaze of a pursuit task and the target's path: ``target_deg[i]`` (degrees) at
    ``target_t[i]``, every ms from the first sample to 1 s past the last (so that it covers the
    last tick of any rate ≥ 1 Hz)."""

    gaze: GazeBatch
    target_t: _F64
    target_deg: _F64
    person: PersonProfile
    traits: TaskTraits


def _check(rate: float, fov_deg: tuple[float, float]) -> None:
    if not (np.isfinite(rate) and rate > 0):
        raise ValueError(f"rate must be finite and > 0 Hz, got {rate!r}")
    if len(fov_deg) != 2 or not all(0 < f < 180 for f in fov_deg):
        raise ValueError(f"fov_deg must be two angles in (0, 180) degrees, got {fov_deg!r}")


def _sample_times(duration: float, rate: float, rng: np.random.Generator) -> _F64:
    n = int(np.floor(duration * rate))
    ts = np.arange(n) / rate + rng.uniform(-0.02, 0.02, n) / rate  # 2 % jitter, as synthetic.generate
    ts[0] = 0.0
    return np.maximum.accumulate(ts)


def _positions(ts: _F64, segs: _F64, reference: _F64 | None = None, gain: float = 1.0) -> _F64:
    """Eye position at ``ts`` from segments (rows: kind, t0, t1, x0, y0, x1, y1): fixations drift
    linearly, saccades follow a minimum-jerk profile, a pursuit moves ``gain`` times as far as
    ``reference`` (the delayed target at ``ts``) from (x1, y1), its value at t0: (n, 2)."""
    i = np.clip(np.searchsorted(segs[:, 1], ts, side="right") - 1, 0, len(segs) - 1)
    kind, t0, t1 = segs[i, 0], segs[i, 1], segs[i, 2]
    p0, p1 = segs[i, 3:5], segs[i, 5:7]
    u = np.clip((ts - t0) / np.maximum(t1 - t0, 1e-9), 0.0, 1.0)[:, None]
    u = np.where((kind == _SAC)[:, None], 10 * u**3 - 15 * u**4 + 6 * u**5, u)
    pos = p0 + (p1 - p0) * u
    if reference is not None:
        pos = np.where((kind == _PURSUIT)[:, None], p0 + gain * (reference - p1), pos)
    return pos


def _inside(ts: _F64, starts: _F64, ends: _F64) -> NDArray[np.bool_]:
    """Which of ``ts`` lie in one of the intervals [starts, ends) (starts sorted)."""
    if not len(starts):
        return np.zeros(len(ts), dtype=bool)
    j = np.searchsorted(starts, ts, side="right") - 1
    return (j >= 0) & (ts < ends[np.maximum(j, 0)])


def _render(
    ts: _F64,
    pos: _F64,
    blink: NDArray[np.bool_],
    prof: PersonProfile,
    rng: np.random.Generator,
    *,
    fov_deg: tuple[float, float],
    start_time: float,
    source: str,
) -> GazeBatch:
    """Samples of the eye positions ``pos`` (n, 2) in degrees: the person's sensor noise,
    confidence (low in blinks, as Pupil's, and in short drop-outs) and pupil."""
    n = len(ts)
    g = pos + rng.normal(0.0, prof.noise_sd_deg, (n, 2))
    g[blink] += rng.normal(0.0, 3.0, (int(blink.sum()), 2))
    conf = rng.uniform(0.85, 1.0, n)
    conf[blink] = rng.uniform(0.0, 0.3, int(blink.sum()))
    duration = float(ts[-1]) if n else 0.0
    starts = np.sort(rng.uniform(0.0, duration, rng.poisson(prof.dropouts_per_s * duration)))
    ends = starts + rng.uniform(0.01, 0.03, len(starts))
    drop = _inside(ts, starts, ends)
    conf[drop] = rng.uniform(0.0, 0.4, int(drop.sum()))
    diam = prof.pupil_baseline_mm + rng.normal(0.0, 0.02, n)
    nx, ny = degrees_to_norm(g[:, 0], g[:, 1], fov_deg)
    return GazeBatch.from_arrays(
        t=ts + start_time,
        x=nx,
        y=ny,
        confidence=conf,
        diameter=np.where(blink | (conf < 0.3), np.nan, diam),
        eye_id=np.full(n, BINOCULAR),
        diameter_unit="mm",
        source=source,
    )


def _blink_s(prof: PersonProfile, rng: np.random.Generator, n: int | None = None) -> _F64:
    """Blink durations in s (one as a 0-d array when ``n`` is None)."""
    return np.clip(rng.gamma(6.0, prof.blink_duration_mean_s / 6.0, n), 0.08, 0.4)


def _saccade_s(p0: ArrayLike, p1: ArrayLike) -> float:
    """Main-sequence duration (synthetic.generate's): 2.2 ms/deg · amplitude + 21 ms."""
    return 0.0022 * float(np.hypot(*np.subtract(p1, p0))) + 0.021


def dwell_task(
    seed: int | None = 0,
    person: PersonProfile | int | None = None,
    fov_deg: tuple[float, float] = _FOV,
    *,
    rate: float = 200.0,
    targets: ArrayLike | None = None,
    dwell_s: float = 1.0,
    trials: int = 12,
    start_time: float = 1000.0,
) -> DwellTask:
    """Gaze of a person selecting targets by dwell: ``trials`` targets in a row, each different
    from the one before.

    In each trial the person may blink (as often as the profile's blink rate says, at the trial's
    start, as people do around a target change), reacts after a latency, makes a saccade that
    falls short by the undershoot with a landing error (and a corrective saccade when it misses
    by more than 1°), then holds the target for ``dwell_s + 1`` s (2 s by default) in fixations
    with drift and tremor, re-centred by microsaccades every 0.3–0.6 s.

    Parameters
    ----------
    seed : int or None
        Seed of the generator.
    person : PersonProfile, int or None
        A person id (profile and :class:`TaskTraits` of that person), a profile (default traits)
        or None (defaults).
    fov_deg : (float, float)
        Scene camera field of view mapping degrees to normalized positions.
    rate : float
        Sampling rate in Hz.
    targets : array (n, 2) or None
        Target positions in degrees; default :data:`GRID_TARGETS_DEG`.
    dwell_s : float
        The dwell time the task is made for (s).
    trials : int
        Number of trials (≥ 1).
    start_time : float
        Time of the first sample.

    Raises
    ------
    ValueError
        A bad rate, field of view, targets (not (n ≥ 2, 2) finite), dwell or number of trials.

    Examples
    --------
    >>> task = dwell_task(seed=1, person=2, trials=3)
    >>> task.trial_target.shape, bool(task.trial_end[-1] <= task.gaze.t[-1] + 0.01)
    ((3,), True)
    """
    _check(rate, fov_deg)
    tg = GRID_TARGETS_DEG if targets is None else np.asarray(targets, dtype=np.float64)
    if tg.ndim != 2 or tg.shape[1] != 2 or len(tg) < 2 or not np.all(np.isfinite(tg)):
        raise ValueError(f"targets must be a finite (n >= 2, 2) array of degrees, got shape {tg.shape}")
    if not (np.isfinite(dwell_s) and dwell_s > 0):
        raise ValueError(f"dwell_s must be finite and > 0, got {dwell_s!r}")
    if isinstance(trials, bool) or not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"trials must be an int >= 1, got {trials!r}")
    prof, traits = _people(person)
    rng = np.random.default_rng(seed)
    segs: list[tuple[float, ...]] = []
    blinks: list[tuple[float, float]] = []
    pos, t = np.zeros(2), 0.0
    starts, ends, chosen = [], [], []
    target = -1
    p_blink = min(0.9, prof.blink_rate_per_min / 60.0 * (dwell_s + 1.0))

    def add(kind: int, d: float, p1: NDArray[np.float64]) -> None:
        nonlocal t, pos
        segs.append((kind, t, t + d, *pos, *p1))
        t, pos = t + d, np.asarray(p1, dtype=np.float64)

    for _ in range(trials):
        target = int(rng.choice([i for i in range(len(tg)) if i != target]))
        starts.append(t)
        chosen.append(target)
        if rng.random() < p_blink:
            b = float(_blink_s(prof, rng))
            blinks.append((t, t + b))
            add(_FIX, b, pos)
        add(_FIX, max(0.1, rng.normal(traits.latency_s, 0.03)), pos + rng.normal(0.0, 0.05, 2))
        aim = tg[target]
        land = aim - traits.undershoot * (aim - pos) + rng.normal(0.0, traits.landing_sd_deg, 2)
        add(_SAC, _saccade_s(pos, land), land)
        if np.hypot(*(aim - land)) > 1.0:
            add(_FIX, rng.uniform(0.12, 0.18), land)
            corrected = aim + rng.normal(0.0, 0.2, 2)
            add(_SAC, _saccade_s(land, corrected), corrected)
        hold_end = t + dwell_s + 1.0
        while t < hold_end:
            d = min(rng.uniform(0.3, 0.6), hold_end - t)
            ang = rng.uniform(0.0, 2 * np.pi)
            add(_FIX, d, pos + prof.drift_deg_per_s * d * np.array([np.cos(ang), np.sin(ang)]))
            if t < hold_end:  # a microsaccade back towards the target
                add(_SAC, 0.02, aim + rng.normal(0.0, 0.25, 2))
        ends.append(t)
    ts = _sample_times(t, rate, rng)
    xy = _positions(ts, np.asarray(segs))
    closed = np.asarray(blinks).reshape(-1, 2)
    in_blink = _inside(ts, closed[:, 0], closed[:, 1])
    gaze = _render(ts, xy, in_blink, prof, rng, fov_deg=fov_deg, start_time=start_time, source=f"dwell(seed={seed})")
    return DwellTask(
        gaze,
        np.array(tg),
        np.asarray(starts) + start_time,
        np.asarray(ends) + start_time,
        np.asarray(chosen, dtype=np.int64),
        prof,
        traits,
    )


def _path(kind: str, s: _F64, radius: float, speed: float, phase: float) -> _F64:
    """The target at times ``s`` (s ≥ 0; before 0 it waits at its start) at ``speed`` °/s on
    average."""
    s = np.maximum(s, 0.0)
    if kind == "circle":
        w = speed / radius
        return radius * np.stack([np.cos(w * s + phase), np.sin(w * s + phase)], axis=1)
    # a 3:2 Lissajous figure, its frequency set so that its mean speed is ``speed``
    u = np.linspace(0.0, 2 * np.pi, 4001)
    length = np.sum(np.hypot(np.diff(np.sin(3 * u + phase)), np.diff(0.75 * np.sin(2 * u)))) * radius
    w = speed * 2 * np.pi / length
    return radius * np.stack([np.sin(3 * w * s + phase), 0.75 * np.sin(2 * w * s)], axis=1)


def pursuit_task(
    seed: int | None = 0,
    person: PersonProfile | int | None = None,
    fov_deg: tuple[float, float] = _FOV,
    *,
    rate: float = 200.0,
    duration: float = 20.0,
    path: Literal["circle", "lissajous"] = "circle",
    radius_deg: float = 10.0,
    speed_deg_s: float = 10.0,
    start_time: float = 1000.0,
) -> PursuitTask:
    """Gaze of a person following a target moving smoothly at ``speed_deg_s``: a circle of
    ``radius_deg``, or a 3:2 Lissajous figure as wide.

    The eye starts on the target; its pursuit follows the target's motion ``pursuit_lag_s`` late
    at ``pursuit_gain``, so the eye falls behind, and a catch-up saccade lands back on the target
    (± 0.2°) whenever it is ``catch_up_deg`` off. Blinks come at the profile's rate.

    Parameters
    ----------
    seed, person, fov_deg, rate, start_time
        As :func:`dwell_task`.
    duration : float
        Seconds of gaze.
    path : {"circle", "lissajous"}
        The target's path.
    radius_deg, speed_deg_s : float
        Its size and mean speed.

    Raises
    ------
    ValueError
        A bad rate, field of view, path, duration, radius or speed.

    Examples
    --------
    >>> task = pursuit_task(seed=1, person=2, duration=5.0)
    >>> len(task.gaze), task.target_deg.shape
    (1000, (6000, 2))
    """
    _check(rate, fov_deg)
    if path not in ("circle", "lissajous"):
        raise ValueError(f"path must be 'circle' or 'lissajous', got {path!r}")
    for name, v in (("duration", duration), ("radius_deg", radius_deg), ("speed_deg_s", speed_deg_s)):
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be finite and > 0, got {v!r}")
    prof, traits = _people(person)
    rng = np.random.default_rng(seed)
    phase = float(rng.uniform(0.0, 2 * np.pi))
    ts = _sample_times(duration, rate, rng)
    target = _path(path, ts, radius_deg, speed_deg_s, phase)
    lag, gain = traits.pursuit_lag_s, traits.pursuit_gain
    reference = _path(path, ts - lag, radius_deg, speed_deg_s, phase)
    segs: list[tuple[float, ...]] = []
    a, eye = 0, target[0]
    while a < len(ts):  # one step per catch-up saccade, never per sample
        ref0 = reference[a]
        follow = eye + gain * (reference[a:] - ref0)
        off = np.flatnonzero(np.hypot(*(target[a:] - follow).T) > traits.catch_up_deg)
        segs.append((_PURSUIT, ts[a], ts[a + off[0]] if len(off) else np.inf, *eye, *ref0))
        if not len(off):
            break
        s = a + int(off[0])
        start = follow[off[0]]
        d = _saccade_s(start, target[s])
        land = _path(path, ts[s : s + 1] + d, radius_deg, speed_deg_s, phase)[0] + rng.normal(0.0, 0.2, 2)
        segs.append((_SAC, ts[s], ts[s] + d, *start, *land))
        a, eye = int(np.searchsorted(ts, ts[s] + d, side="left")), land  # pursuit again from there
    xy = _positions(ts, np.asarray(segs), reference, gain)
    n_b = rng.poisson(prof.blink_rate_per_min / 60.0 * duration)
    b0 = np.sort(rng.uniform(0.0, duration, n_b))
    in_blink = _inside(ts, b0, b0 + _blink_s(prof, rng, n_b))
    gaze = _render(ts, xy, in_blink, prof, rng, fov_deg=fov_deg, start_time=start_time, source=f"pursuit(seed={seed})")
    path_t = np.arange(0.0, duration + 1.0, 0.001)
    return PursuitTask(gaze, path_t + start_time, _path(path, path_t, radius_deg, speed_deg_s, phase), prof, traits)


def raw_ticks(gaze: GazeBatch, fov_deg: tuple[float, float] = _FOV, *, rate: float = DEFAULT_TICK_RATE) -> Ticks:
    """The un-noised ticks of a whole recording: :class:`~streamdp.stages.gaze_ticks.GazeTicks`
    over it, flushed. Raw: for evaluation only.

    Examples
    --------
    >>> task = dwell_task(seed=1, trials=2)
    >>> ticks = raw_ticks(task.gaze)
    >>> bool(abs(len(ticks) / task.gaze.duration - 60.0) < 1.0)
    True
    """
    stage = GazeTicks(rate=rate, fov_deg=fov_deg)
    return Ticks.concat([stage.update(gaze), stage.flush()])
