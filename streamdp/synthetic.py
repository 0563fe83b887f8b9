"""Synthetic gaze realistic enough to test on, with its ground-truth events.

Fixations with drift and tremor, saccades whose duration follows the main sequence
(``D = 2.2 ms/deg · A + 21 ms``, Baloh et al. 1975) with a minimum-jerk position profile, blinks
during which confidence collapses and no pupil is measured, a pupil diameter drifting as an
Ornstein-Uhlenbeck process, sensor noise, and short confidence drop-outs. Each "person" is a
:class:`PersonProfile`; :meth:`PersonProfile.for_person` derives a stable, distinct profile from a
person id, so several people can be generated and told apart. It is also the embedded default
for demos.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from .gaze import BINOCULAR, BlinkEvents, GazeBatch, Recording
from .kernels.geometry import CAMERA_FOV_DEG, degrees_to_norm, norm_to_degrees

Task = Literal["reading", "search"]

#: half extents of the synthetic scene in degrees: gaze stays within it
_SCENE = (20.0, 12.0)


@dataclass(frozen=True)
class PersonProfile:
    """Oculomotor parameters of one synthetic person (units in the names)."""

    fixation_duration_mean_s: float = 0.25
    fixation_duration_shape: float = 4.0
    saccade_amplitude_mean_deg: float = 4.0
    saccade_amplitude_shape: float = 2.5
    rightward_bias: float = 0.5
    vertical_spread: float = 0.6
    blink_rate_per_min: float = 15.0
    blink_duration_mean_s: float = 0.2
    pupil_baseline_mm: float = 3.5
    pupil_drift_sd_mm: float = 0.25
    pupil_drift_tau_s: float = 8.0
    noise_sd_deg: float = 0.08
    drift_deg_per_s: float = 0.3
    dropouts_per_s: float = 0.2

    @classmethod
    def for_person(cls, person_id: int) -> PersonProfile:
        """A distinct, reproducible profile for each person id (parameters in physiological ranges)."""
        r = np.random.default_rng(np.random.SeedSequence([0x5EED, int(person_id)]))
        return cls(
            fixation_duration_mean_s=float(r.uniform(0.18, 0.34)),
            fixation_duration_shape=float(r.uniform(3.0, 6.0)),
            saccade_amplitude_mean_deg=float(r.uniform(2.5, 6.5)),
            saccade_amplitude_shape=float(r.uniform(1.8, 3.5)),
            rightward_bias=float(r.uniform(0.35, 0.65)),
            vertical_spread=float(r.uniform(0.3, 1.0)),
            blink_rate_per_min=float(r.uniform(8.0, 24.0)),
            blink_duration_mean_s=float(r.uniform(0.12, 0.3)),
            pupil_baseline_mm=float(r.uniform(2.8, 4.8)),
            pupil_drift_sd_mm=float(r.uniform(0.1, 0.4)),
            noise_sd_deg=float(r.uniform(0.04, 0.12)),
            drift_deg_per_s=float(r.uniform(0.1, 0.5)),
        )


@dataclass(frozen=True, eq=False)
class GroundTruth:
    """The generator's events. Saccade amplitude is target minus start position in degrees."""

    fixation_start: NDArray[np.float64]
    fixation_end: NDArray[np.float64]
    saccade_start: NDArray[np.float64]
    saccade_end: NDArray[np.float64]
    saccade_amplitude: NDArray[np.float64]
    saccade_angle: NDArray[np.float64]
    blinks: BlinkEvents


@dataclass(frozen=True, eq=False)
class SyntheticRecording:
    recording: Recording
    truth: GroundTruth
    person: PersonProfile


def _task_direction(task: Task, person: PersonProfile, rng: np.random.Generator, x: float) -> tuple[float, bool]:
    """Saccade direction in degrees, and whether it is a reading return sweep."""
    if task == "reading":
        if x > _SCENE[0] * 0.6 and rng.random() < 0.7:
            return 180.0 + rng.normal(0.0, 4.0), True
        sign = 0.0 if rng.random() < 0.8 + 0.2 * person.rightward_bias else 180.0
        return sign + rng.normal(0.0, 12.0 * person.vertical_spread), False
    right = rng.random() < person.rightward_bias
    base = rng.uniform(-90.0, 90.0) if right else rng.uniform(90.0, 270.0)
    return float(base), False


def generate(
    duration: float = 60.0,
    rate: float = 200.0,
    seed: int | None = 0,
    person: PersonProfile | int | None = None,
    task: Task = "reading",
    fov_deg: tuple[float, float] = CAMERA_FOV_DEG["pupil_core_720p"],
    start_time: float = 1000.0,
) -> SyntheticRecording:
    """Generate ``duration`` seconds of gaze at ``rate`` Hz.

    Parameters
    ----------
    duration, rate : float
        Length in seconds and sampling rate in Hz (samples jitter by 2 % of a period).
    seed : int or None
        Seed of the generator (None: fresh entropy).
    person : PersonProfile, int or None
        A profile, a person id for :meth:`PersonProfile.for_person`, or None for the default.
    task : {"reading", "search"}
        Reading: mostly small rightward saccades with large leftward return sweeps at line ends.
        Search: directions spread all round, amplitudes 1.8× larger.
    fov_deg : (float, float)
        Scene camera field of view used to map degrees to normalized positions.
    start_time : float
        Timestamp of the first sample (Pupil time is arbitrary).

    Raises
    ------
    ValueError
        A non-positive duration or rate, or an unknown task.

    Examples
    --------
    >>> syn = generate(duration=10.0, rate=100.0, seed=3)
    >>> len(syn.recording.gaze), syn.recording.gaze.diameter_unit
    (1000, 'mm')
    """
    if not duration > 0:
        raise ValueError(f"duration must be > 0 s, got {duration!r}")
    if not rate > 0:
        raise ValueError(f"rate must be > 0 Hz, got {rate!r}")
    if task not in ("reading", "search"):
        raise ValueError(f"task must be 'reading' or 'search', got {task!r}")
    if person is None:
        prof = PersonProfile()
    elif isinstance(person, PersonProfile):
        prof = person
    else:
        prof = PersonProfile.for_person(int(person))
    if task == "search":
        prof = replace(prof, saccade_amplitude_mean_deg=prof.saccade_amplitude_mean_deg * 1.8)
    rng = np.random.default_rng(seed)

    # the event timeline: one Python step per event (a few per second), never per sample
    kinds: list[int] = []  # 0 fixation, 1 saccade, 2 blink
    t0s: list[float] = []
    t1s: list[float] = []
    p0: list[tuple[float, float]] = []
    p1: list[tuple[float, float]] = []
    t = 0.0
    pos = (float(rng.uniform(-_SCENE[0], 0.0)), float(rng.uniform(-_SCENE[1], _SCENE[1])))
    p_blink = prof.blink_rate_per_min / 60.0 * prof.fixation_duration_mean_s
    shape_f = prof.fixation_duration_shape
    shape_a = prof.saccade_amplitude_shape
    while t < duration:
        d = max(0.1, rng.gamma(shape_f, prof.fixation_duration_mean_s / shape_f))
        ang = rng.uniform(0, 2 * np.pi)
        drift = prof.drift_deg_per_s * d * np.array([np.cos(ang), np.sin(ang)])
        end_pos = (pos[0] + drift[0], pos[1] + drift[1])
        kinds.append(0)
        t0s.append(t)
        t1s.append(t + d)
        p0.append(pos)
        p1.append(end_pos)
        t += d
        pos = end_pos
        if rng.random() < p_blink:
            b = float(np.clip(rng.gamma(6.0, prof.blink_duration_mean_s / 6.0), 0.08, 0.6))
            kinds.append(2)
            t0s.append(t)
            t1s.append(t + b)
            new = (pos[0] + rng.normal(0, 0.5), pos[1] + rng.normal(0, 0.5))
            p0.append(pos)
            p1.append(new)
            t += b
            pos = new
            continue
        direction, sweep = _task_direction(task, prof, rng, pos[0])
        amp = (
            abs(pos[0] - (-_SCENE[0] * 0.8)) + rng.normal(0, 0.5)
            if sweep
            else rng.gamma(shape_a, prof.saccade_amplitude_mean_deg / shape_a)
        )
        amp = float(np.clip(amp, 0.5, 35.0))
        rad = np.radians(direction)
        target = [pos[0] + amp * np.cos(rad), pos[1] + amp * np.sin(rad)]
        # stay inside the scene: reflect at its edges
        for axis in (0, 1):
            lim = _SCENE[axis]
            if target[axis] > lim:
                target[axis] = 2 * lim - target[axis]
            if target[axis] < -lim:
                target[axis] = -2 * lim - target[axis]
        target_t = (float(target[0]), float(target[1]))
        amp = float(np.hypot(target_t[0] - pos[0], target_t[1] - pos[1]))
        sd = 0.0022 * amp + 0.021
        kinds.append(1)
        t0s.append(t)
        t1s.append(t + sd)
        p0.append(pos)
        p1.append(target_t)
        t += sd
        pos = target_t

    kind = np.asarray(kinds)
    ev_t0 = np.asarray(t0s)
    ev_t1 = np.asarray(t1s)
    ev_p0 = np.asarray(p0)
    ev_p1 = np.asarray(p1)

    # samples, vectorized
    n = int(np.floor(duration * rate))
    ts = np.arange(n) / rate + rng.uniform(-0.02, 0.02, n) / rate
    ts[0] = 0.0
    ts = np.maximum.accumulate(ts)
    seg = np.clip(np.searchsorted(ev_t0, ts, side="right") - 1, 0, len(kind) - 1)
    u = np.clip((ts - ev_t0[seg]) / (ev_t1[seg] - ev_t0[seg]), 0.0, 1.0)
    k = kind[seg]
    prof_u = np.where(k == 1, 10 * u**3 - 15 * u**4 + 6 * u**5, u)  # minimum jerk in saccades
    gx = ev_p0[seg, 0] + (ev_p1[seg, 0] - ev_p0[seg, 0]) * prof_u
    gy = ev_p0[seg, 1] + (ev_p1[seg, 1] - ev_p0[seg, 1]) * prof_u
    gx += rng.normal(0.0, prof.noise_sd_deg, n)
    gy += rng.normal(0.0, prof.noise_sd_deg, n)

    conf = rng.uniform(0.85, 1.0, n)
    in_blink = k == 2
    # the lid closes and opens over ~40 ms: confidence ramps down and up around the closure
    edge = np.minimum(ts - ev_t0[seg], ev_t1[seg] - ts)
    blink_conf = np.clip(edge / 0.04, 0.0, 1.0) * 0.8
    conf = np.where(in_blink, np.minimum(conf, blink_conf * rng.uniform(0.0, 0.3, n)), conf)
    n_drop = rng.poisson(prof.dropouts_per_s * duration)
    for c in rng.uniform(0, duration, n_drop):
        w = (ts >= c) & (ts < c + rng.uniform(0.01, 0.03))
        conf[w] = rng.uniform(0.0, 0.4, int(w.sum()))
    gx = np.where(in_blink, gx + rng.normal(0, 3.0, n), gx)
    gy = np.where(in_blink, gy + rng.normal(0, 3.0, n), gy)

    # pupil: AR(1) discretisation of an OU process around the baseline at the nominal rate
    a_mean = float(np.exp(-1.0 / (rate * prof.pupil_drift_tau_s)))
    innov = rng.normal(0, 1, n) * prof.pupil_drift_sd_mm * np.sqrt(1 - a_mean * a_mean)
    start = rng.normal(0, prof.pupil_drift_sd_mm)
    from scipy.signal import lfilter  # lazy: a relay importing this module loads no SciPy

    ou = lfilter([1.0], [1.0, -a_mean], innov, zi=[a_mean * start])[0]
    diam = prof.pupil_baseline_mm + ou + rng.normal(0, 0.02, n)
    diam = np.where(in_blink | (conf < 0.3), np.nan, np.maximum(diam, 1.0))

    nx, ny = degrees_to_norm(gx, gy, fov_deg)
    gaze = GazeBatch.from_arrays(
        t=ts + start_time,
        x=nx,
        y=ny,
        confidence=conf,
        diameter=diam,
        eye_id=np.full(n, BINOCULAR),
        diameter_unit="mm",
        source=f"synthetic({task}, seed={seed})",
    )
    is_f, is_s, is_b = kind == 0, kind == 1, kind == 2
    keep = lambda m: m & (ev_t1 <= duration)  # noqa: E731 - events the recording holds whole
    amp_all = np.hypot(ev_p1[:, 0] - ev_p0[:, 0], ev_p1[:, 1] - ev_p0[:, 1])
    ang_all = np.degrees(np.arctan2(ev_p1[:, 1] - ev_p0[:, 1], ev_p1[:, 0] - ev_p0[:, 0]))
    blinks = BlinkEvents(ev_t0[keep(is_b)] + start_time, ev_t1[keep(is_b)] + start_time)
    truth = GroundTruth(
        ev_t0[keep(is_f)] + start_time,
        ev_t1[keep(is_f)] + start_time,
        ev_t0[keep(is_s)] + start_time,
        ev_t1[keep(is_s)] + start_time,
        amp_all[keep(is_s)],
        ang_all[keep(is_s)],
        blinks,
    )
    rec = Recording(gaze=gaze, blinks=blinks, name=f"synthetic-{task}-{seed}")
    return SyntheticRecording(rec, truth, prof)


@dataclass(frozen=True)
class EyeCamera:
    """How one synthetic person's eye appears in the eye camera (MPIIDPEye-style signal).

    The pupil centre moves in the eye image roughly linearly with the eye's rotation: with the
    centre of rotation ~10 mm behind the pupil, 1° moves the pupil ~0.17 mm, and an eye camera
    that sees ~25–45 mm of face across its image turns that into ~0.004–0.007 of the image width
    per degree. The diameter in px is the diameter in mm times the image's px per mm (a 640-px
    wide eye image over ~35–50 mm: 13–18 px/mm). Both depend on where the headset sits, so they
    differ per person; detection adds its own jitter to the position (~0.001–0.002) and to the
    diameter (~0.5–1.5 px).
    """

    norm_per_deg: float = 0.0055
    px_per_mm: float = 15.0
    centre: tuple[float, float] = (0.5, 0.5)
    detection_noise_norm: float = 0.0015
    detection_noise_px: float = 1.0

    @classmethod
    def for_person(cls, person_id: int) -> EyeCamera:
        """A distinct, reproducible camera placement per person id."""
        r = np.random.default_rng(np.random.SeedSequence([0xE1E, int(person_id)]))
        return cls(
            norm_per_deg=float(r.uniform(0.004, 0.007)),
            px_per_mm=float(r.uniform(13.0, 18.0)),
            centre=(float(r.uniform(0.4, 0.6)), float(r.uniform(0.4, 0.6))),
            detection_noise_norm=float(r.uniform(0.001, 0.002)),
            detection_noise_px=float(r.uniform(0.5, 1.5)),
        )


def generate_eye_camera(
    duration: float = 60.0,
    rate: float = 30.0,
    seed: int | None = 0,
    person: int | None = None,
    task: Task = "reading",
    camera: EyeCamera | None = None,
    start_time: float = 1000.0,
) -> SyntheticRecording:
    """Eye-camera pupil positions (normalized image units) and px diameters, as MPIIDPEye
    recorded them (~30 Hz): the gaze of :func:`generate` seen through :class:`EyeCamera`.

    Parameters
    ----------
    duration, rate, seed, task, start_time
        As for :func:`generate` (default rate 30 Hz).
    person : int or None
        Person id for both :meth:`PersonProfile.for_person` and :meth:`EyeCamera.for_person`;
        None: the default profile and camera.
    camera : EyeCamera or None
        Overrides the person's camera.

    Raises
    ------
    ValueError
        As :func:`generate`.

    Examples
    --------
    >>> syn = generate_eye_camera(duration=20.0, seed=1, person=2)
    >>> syn.recording.gaze.diameter_unit, len(syn.recording.gaze)
    ('px', 600)
    >>> bool(0.0 < syn.recording.gaze.x.min() and syn.recording.gaze.x.max() < 1.0)
    True
    """
    cam = camera or (EyeCamera() if person is None else EyeCamera.for_person(person))
    fov = CAMERA_FOV_DEG["pupil_core_720p"]
    scene = generate(
        duration=duration, rate=rate, seed=seed, person=person, task=task, fov_deg=fov, start_time=start_time
    )
    g = scene.recording.gaze
    ax, ay = norm_to_degrees(g.x, g.y, fov)
    jitter = np.random.default_rng(None if seed is None else [0xE1E, seed])
    noise = jitter.normal(0.0, cam.detection_noise_norm, (2, len(g)))
    diameter_px = g.diameter * cam.px_per_mm + jitter.normal(0.0, cam.detection_noise_px, len(g))
    gaze = GazeBatch.from_arrays(
        t=g.t,
        x=cam.centre[0] + cam.norm_per_deg * ax + noise[0],
        y=cam.centre[1] + cam.norm_per_deg * ay + noise[1],
        confidence=g.confidence,
        diameter=diameter_px,
        eye_id=np.zeros(len(g), dtype=np.int8),
        diameter_unit="px",
        source=f"synthetic eye camera({task}, seed={seed})",
    )
    truth = replace(scene.truth, saccade_amplitude=scene.truth.saccade_amplitude * cam.norm_per_deg)
    rec = Recording(gaze=gaze, blinks=scene.recording.blinks, name=f"synthetic-eye-{task}-{seed}")
    return SyntheticRecording(rec, truth, scene.person)
