"""Encoding: the datums Capture would publish for a recording, tidy (time order) or as untidy as
Capture (world-frame bursts, late monocular gaze, blink datums re-published every frame)."""

from __future__ import annotations

import heapq
import math
import numbers
from collections.abc import Iterator, Mapping
from typing import Any

import msgpack
import numpy as np

from ..gaze import (
    BINOCULAR,
    UNKNOWN_EYE,
    Recording,
)
from .timing import BLINK_HISTORY, MATCHER_LATENESS, WORLD_FPS


def pupil_datum(eye: int, t: float, conf: float, x: float, y: float, diameter: float, unit: str) -> dict[str, Any]:
    """The pupil datum Capture would map a gaze sample from: 3d (``diameter_3d`` mm) for a
    stream in mm, 2d (``diameter`` px only) otherwise."""
    method = "3d" if unit == "mm" else "2d"
    datum: dict[str, Any] = {
        "topic": f"pupil.{eye}.{method}",
        "id": eye,
        "method": "pye3d 0.3.0 real-time" if method == "3d" else "2d c++",
        "timestamp": t,
        "confidence": conf,
        # the eye camera sees the pupil mirrored and offset; a plausible position, not the gaze
        "norm_pos": [0.5 + 0.3 * (x - 0.5), 0.5 - 0.3 * (y - 0.5)],
    }
    if math.isfinite(diameter):
        datum["diameter_3d" if unit == "mm" else "diameter"] = diameter
    return datum


def gaze_datum(
    t: float, x: float, y: float, conf: float, eyes: tuple[int, ...], base: list[dict[str, Any]], unit: str
) -> dict[str, Any]:
    """A gaze datum with Capture's fields: 3d gaze carries the eye model fields (binocular keyed
    by the strings ``"0"``/``"1"``, monocular singular), 2d gaze has none."""
    method = "3d" if unit == "mm" else "2d"
    eye_part = "01" if len(eyes) == 2 else str(eyes[0])
    datum: dict[str, Any] = {
        "topic": f"gaze.{method}.{eye_part}.",
        "norm_pos": [x, y],
        "confidence": conf,
        "timestamp": t,
        "base_data": base,
    }
    if method == "3d":
        datum["gaze_point_3d"] = [(x - 0.5) * 600.0, (0.5 - y) * 400.0, 500.0]
        centres = {"0": [20.0, 15.0, -20.0], "1": [-40.0, 15.0, -20.0]}
        if len(eyes) == 2:
            datum["eye_centers_3d"] = centres
            datum["gaze_normals_3d"] = {"0": [0.0, 0.0, 1.0], "1": [0.0, 0.0, 1.0]}
        else:
            datum["eye_center_3d"] = centres[eye_part]
            datum["gaze_normal_3d"] = [0.0, 0.0, 1.0]
    return datum


def recording_datums(recording: Recording) -> Iterator[dict[str, Any]]:
    """Every datum the recording yields, in time order, as Capture would publish it: each gaze
    sample as ``gaze.<3d|2d>.01.`` (or its eye's topic) followed by one pupil datum per eye, and
    the recording's blinks as ``blinks`` onset/offset datums. Samples without gaze are skipped:
    Capture publishes no gaze where it has none."""
    g = recording.gaze
    blinks: list[tuple[float, str]] = []
    if recording.blinks is not None:
        for s, e in zip(recording.blinks.start.tolist(), recording.blinks.end.tolist(), strict=True):
            blinks.extend(((s, "onset"), (e, "offset")))
        blinks.sort()
    bi = 0
    unit = "px" if g.diameter_unit == "px" else "mm"
    columns = (g.t, g.x, g.y, g.confidence, g.diameter, g.eye_id, g.valid)
    for t, x, y, c, d, eye, valid in zip(*(a.tolist() for a in columns), strict=True):
        while bi < len(blinks) and blinks[bi][0] <= t:
            bt, kind = blinks[bi]
            yield {"topic": "blinks", "type": kind, "timestamp": bt, "confidence": 0.9, "base_data": []}
            bi += 1
        if not valid:
            continue
        eyes = (0, 1) if eye in (BINOCULAR, UNKNOWN_EYE) else (int(eye),)
        base = [pupil_datum(e, t, c, x, y, d, unit) for e in eyes]
        yield gaze_datum(t, x, y, c, eyes, base, unit)
        yield from base


def checked_eye_lag(eye_lag: object) -> float:
    """``eye_lag`` as a float, refused unless a finite real ≥ 0."""
    if isinstance(eye_lag, bool) or not isinstance(eye_lag, numbers.Real):
        raise TypeError(f"eye_lag must be a real number of seconds ≥ 0, got {eye_lag!r}")
    value = float(eye_lag)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"eye_lag must be a finite number of seconds ≥ 0 (0: no eye falls behind), got {eye_lag!r}")
    return value


def _eye_lag_episodes(t: np.ndarray, eye_lag: float, rng: np.random.Generator) -> tuple[list[int], list[float]]:
    """Per sample, the eye whose process has fallen behind (-1: none) and by how much (s).

    Episodes are drawn from ``rng``: after a gap of 3–8 s one eye (either, per episode) falls
    behind, its lag growing linearly to ``eye_lag`` over 2–6 s (a process that runs slower than
    its camera: at most 0.65 s of lag per s) and draining faster (at most 0.75 s per s, a process
    catching up at up to four times its camera's rate), so that the lagging eye's datums still
    leave in order among themselves."""
    lagging = np.full(len(t), -1, dtype=np.int64)
    lag = np.zeros(len(t))
    if not len(t):
        return lagging.tolist(), lag.tolist()
    start, end = float(t[0]) + rng.uniform(3.0, 8.0), float(t[-1])
    while start < end:
        eye = int(rng.integers(0, 2))
        grow = max(rng.uniform(2.0, 6.0), eye_lag / 0.65)
        drain = max(grow / 4.0, eye_lag / 0.75)
        lo, hi = np.searchsorted(t, [start, start + grow + drain], side="left")
        since = t[lo:hi] - start
        lagging[lo:hi] = eye
        lag[lo:hi] = np.where(since < grow, since / grow, 1.0 - (since - grow) / drain) * eye_lag
        start += grow + drain + rng.uniform(3.0, 8.0)
    return lagging.tolist(), lag.tolist()


#: how far off the scene's centre (scene heights) the real Capture put binocular gaze as an eye process
#: fell behind: (6.2, 13.1) and (6.4, 13.3), at confidence 1.0 (2 of 9,175 gaze datums in one minute, 8 of
#: 9,192 in another, tests/real_capture/test_recording.py)
OFF_SCENE = (11.0, 14.0)


def _off_scene(lagging: list[int], binocular: list[bool], rng: np.random.Generator) -> dict[int, tuple[float, float]]:
    """The first binocular sample of each lag episode and the position off the scene its gaze goes out at: Capture's
    matcher still pairs the falling eye's last pupil datum with the other eye's (gaze_mapping/matching.py), and the
    binocular gazer's nearest point of two rays that no longer meet (gazer_3d/gazer_headset.py, mirrored when behind
    the eyes) projects far off the scene."""
    firsts = [i for i, eye in enumerate(lagging) if eye >= 0 and (i == 0 or lagging[i - 1] < 0)]
    out: dict[int, tuple[float, float]] = {}
    for i in firsts:
        j = next((k for k in range(i, min(i + 8, len(lagging))) if binocular[k]), None)
        x, dy, up = rng.uniform(-7.0, 7.0), rng.uniform(*OFF_SCENE), rng.random() < 0.5
        if j is not None:
            out[j] = (0.5 + x, 0.5 + (dy if up else -dy))
    return out


def capture_datums(
    recording: Recording, *, monocular_share: float = 0.15, seed: int = 0, eye_lag: float = 0.0
) -> Iterator[tuple[float, dict[str, Any]]]:
    """The recording's datums as Capture publishes them, each with the Pupil time it leaves:
    gaze in one burst per world frame (:data:`WORLD_FPS`); monocular gaze (the recording's own,
    and ``monocular_share`` of binocular samples, which the matcher found no partner for) up to
    :data:`MATCHER_LATENESS` s behind binocular gaze already sent; each blink's ``onset`` and
    ``offset`` re-published every frame while the detector's filter would fire, timestamped at the
    middle of its :data:`BLINK_HISTORY`, the first onset at the blink's start and the last offset
    at its end. Deterministic for a given ``seed``.

    With ``eye_lag`` > 0 (s), an eye process falls behind now and then, as on a loaded machine:
    in episodes (one eye each, drawn from ``seed``; a gap of 3–8 s between them) its lag grows
    linearly to ``eye_lag`` over a few seconds, then drains faster. Meanwhile the matcher pairs
    nothing: binocular samples go out as monocular gaze of alternating eyes, the lagging eye's
    (the gaze with its pupil datum) at the first world frame after ``t + lag``, in order among
    themselves, the other eye's as the matcher holds monocular gaze (up to
    :data:`MATCHER_LATENESS`). As each episode begins, its first binocular sample still goes out
    paired and on time, its gaze far off the scene (:data:`OFF_SCENE`, as the real Capture sends it):
    a live session and a replay both count it invalid. ``eye_lag=0`` sends what it always did.

    Raises
    ------
    TypeError, ValueError
        ``eye_lag`` is not a finite real number ≥ 0 (when called, before anything is sent).

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> sent = list(capture_datums(generate(duration=2.0, seed=1).recording))
    >>> times = [p for p, _ in sent]
    >>> times == sorted(times), len(set(times)) <= 2.0 * WORLD_FPS + 2
    (True, True)
    """
    return _capture_datums(recording, monocular_share, seed, checked_eye_lag(eye_lag))


def _capture_datums(
    recording: Recording, monocular_share: float, seed: int, eye_lag: float
) -> Iterator[tuple[float, dict[str, Any]]]:
    g = recording.gaze
    if not len(g):
        return
    t0, frame = float(g.t[0]), 1.0 / WORLD_FPS

    def leaves(t: float) -> float:  # the first world frame at or after t
        return t0 + math.ceil((t - t0) * WORLD_FPS - 1e-9) * frame

    rng = np.random.default_rng(seed)
    unmatched = (rng.random(len(g)) < monocular_share).tolist()
    lag = rng.uniform(0.0, MATCHER_LATENESS - frame, len(g)).tolist()
    # drawn after the rest: eye_lag=0 sends what it always did
    lagging_eye, lag_behind = _eye_lag_episodes(np.asarray(g.t, dtype=float), eye_lag, rng) if eye_lag > 0 else ([], [])
    eyes_of = g.eye_id.tolist()
    both = [bool(v) and e in (BINOCULAR, UNKNOWN_EYE) for v, e in zip(g.valid.tolist(), eyes_of, strict=True)]
    off_scene = _off_scene(lagging_eye, both, rng) if eye_lag > 0 else {}
    # (leaves at, monocular last within a burst, sequence, datums)
    queue: list[tuple[float, int, int, list[dict[str, Any]]]] = []
    if recording.blinks is not None:
        for s, e in zip(recording.blinks.start.tolist(), recording.blinks.end.tolist(), strict=True):
            n = max(1, min(round(BLINK_HISTORY / 2 * WORLD_FPS), int((e - s) * WORLD_FPS / 2)))
            for k in range(n):
                for kind, ts in (("onset", s + k * frame), ("offset", e - (n - 1 - k) * frame)):
                    datum = {"topic": "blinks", "type": kind, "timestamp": ts, "confidence": 0.9, "base_data": []}
                    queue.append((leaves(ts + BLINK_HISTORY / 2), 0, len(queue), [datum]))
    heapq.heapify(queue)
    seq = len(queue)
    unit = "px" if g.diameter_unit == "px" else "mm"
    columns = (g.t, g.x, g.y, g.confidence, g.diameter, g.eye_id, g.valid)
    for i, (t, x, y, c, d, eye, valid) in enumerate(zip(*(a.tolist() for a in columns), strict=True)):
        while queue and queue[0][0] < t:  # nothing still to come can leave before t
            at, _, _, datums = heapq.heappop(queue)
            for datum in datums:
                yield at, datum
        if not valid:
            continue
        binocular = eye in (BINOCULAR, UNKNOWN_EYE)
        lagging = lagging_eye[i] if lagging_eye else -1
        # while an eye process lags, the matcher finds no partner (but as the episode begins)
        paired = binocular and (i in off_scene or not (unmatched[i] or lagging >= 0))
        eyes = (0, 1) if paired else (i % 2,) if binocular else (int(eye),)
        late = len(eyes) == 1
        base = [pupil_datum(e, t, c, x, y, d, unit) for e in eyes]
        gx, gy = off_scene.get(i, (x, y))
        datums = [gaze_datum(t, gx, gy, c, eyes, base, unit), *base]
        if late and eyes[0] == lagging:  # mapped as soon as its pupil datum reaches the world process
            at = leaves(t + lag_behind[i])
        else:
            at = leaves(t + lag[i] if late else t)
        heapq.heappush(queue, (at, int(late), seq, datums))
        seq += 1
    while queue:
        at, _, _, datums = heapq.heappop(queue)
        for datum in datums:
            yield at, datum


def encode(datum: Mapping[str, Any], pack: Any = None) -> list[bytes]:
    """The backbone frames of a datum: ``[topic, msgpack(datum)]``."""
    payload = (pack or msgpack.Packer(use_bin_type=True).pack)(datum)
    return [str(datum["topic"]).encode(), payload]
