"""The synthetic study of ``streamdp evaluate --channel gaze``: its people, their tick streams, the
sanitization of a stream as a session makes it, public post-processing filters, and the feature
rows an attacker computes from a released stream.

Each synthetic person ``p`` (:class:`~streamdp.synthetic.PersonProfile` and
:class:`~streamdp.offline.gaze_tasks.TaskTraits` of id ``p``: the parameters are the identity)
does a dwell-selection task on the 3 × 3 grid, follows a target on a circle, and reads and
searches for ``seconds`` each (the recordings of the features evaluation, for the
re-identification attack). The gaze is generated once; only the noise changes between seeds.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..gaze import BlinkEvents, GazeBatch, Recording
from ..kernels.geometry import degrees_to_norm
from ..kernels.smoothing import causal_smooth, check_smoothing
from ..privacy.gaze_mechanisms import GazeMechanism
from ..privacy.randomness import RandomSource
from ..schema import N_FEATURES
from ..session import Session
from ..stages.gaze_ticks import GazeTicks, Ticks
from ..synthetic import Task, generate
from .gaze_tasks import DwellTask, PursuitTask, dwell_task, pursuit_task

_F64 = NDArray[np.float64]

#: the default public post-processing filters compared with the stream as released ("none")
DEFAULT_FILTERS = ("median5", "median9", "median15")
_FILTER = re.compile(r"^(median|mean)(\d+)$")


@dataclass(frozen=True, eq=False)
class TickStream:
    """One recording's raw ticks as the session's :class:`GazeTicks` emits them: ``parts`` are the
    batches a session releases one mechanism call each (what ``update`` and then ``flush`` gave),
    ``ticks`` all of them in order."""

    parts: tuple[Ticks, ...]
    ticks: Ticks


@dataclass(frozen=True, eq=False)
class GazeStudy:
    """The people, their tasks and their ticks (raw: for evaluation only).

    ``dwell[p]``, ``pursuit[p]``: person ``p``'s tasks; ``recordings``: the re-identification
    recordings, ``person_of[i]`` naming the person of ``recordings[i]``; ``streams``: the tick
    stream of every recording in the order dwell, pursuit, re-identification (the noise seed of a
    recording is its index here); ``task_of[i]``: the task label of ``recordings[i]`` that the
    attacker classifies (empty: no task attack; a manifest's study has it,
    :mod:`streamdp.offline.gaze_manifest`).
    """

    people: tuple[str, ...]
    dwell: tuple[DwellTask, ...]
    pursuit: tuple[PursuitTask, ...]
    recordings: tuple[Recording, ...]
    person_of: tuple[str, ...]
    streams: tuple[TickStream, ...]
    config: SessionConfig
    fov_deg: tuple[float, float]
    task_of: tuple[str, ...] = ()

    @property
    def dwell_streams(self) -> tuple[TickStream, ...]:
        return self.streams[: len(self.dwell)]

    @property
    def pursuit_streams(self) -> tuple[TickStream, ...]:
        return self.streams[len(self.dwell) : len(self.dwell) + len(self.pursuit)]

    @property
    def reid_streams(self) -> tuple[TickStream, ...]:
        return self.streams[len(self.dwell) + len(self.pursuit) :]


def tick_stream(gaze: GazeBatch, config: SessionConfig, fov_deg: tuple[float, float]) -> TickStream:
    """The ticks a session of ``config`` makes of a whole recording: :class:`GazeTicks` at the
    configured rate and confidence, one ``update`` with all the gaze, then ``flush``."""
    stage = GazeTicks(rate=config.gaze_rate, fov_deg=fov_deg, min_confidence=config.min_confidence)
    parts = tuple(p for p in (stage.update(gaze), stage.flush()) if len(p))
    return TickStream(parts, Ticks.concat(list(parts)))


def gaze_study(
    people: int = 6,
    seconds: float = 240.0,
    seed: int = 0,
    *,
    trials: int = 12,
    pursuit_s: float = 20.0,
    reid: bool = True,
    config: SessionConfig | None = None,
) -> GazeStudy:
    """Synthetic people ``0 … people − 1``: a dwell task of ``trials`` trials (1 s dwell), a
    ``pursuit_s`` s circle pursuit and (``reid``) reading and searching for ``seconds`` at
    120 Hz, in the scene camera of ``config`` (default :class:`SessionConfig`).

    Raises
    ------
    ValueError
        Fewer than two people, or a bad number of trials or duration (named).
    """
    if isinstance(people, bool) or not isinstance(people, int) or people < 2:
        raise ValueError(f"people must be an int ≥ 2, got {people!r}")
    cfg = config or SessionConfig()
    fov = cfg.event_config(None).fov_deg
    base = seed * 1000
    dwell = tuple(dwell_task(base + p, p, fov, trials=trials) for p in range(people))
    pursuit = tuple(pursuit_task(base + 500 + p, p, fov, duration=pursuit_s) for p in range(people))
    recordings: list[Recording] = []
    person_of: list[str] = []
    if reid:
        tasks: tuple[Task, Task] = ("reading", "search")
        for p in range(people):
            for j, task in enumerate(tasks):
                rec = generate(seconds, 120.0, base + 2 * p + j, p, task, fov).recording
                recordings.append(rec)
                person_of.append(f"P{p}")
    gazes = [t.gaze for t in dwell] + [t.gaze for t in pursuit] + [r.gaze for r in recordings]
    streams = tuple(tick_stream(g, cfg, fov) for g in gazes)
    names = tuple(f"P{p}" for p in range(people))
    return GazeStudy(names, dwell, pursuit, tuple(recordings), tuple(person_of), streams, cfg, fov)


def sanitize_stream(stream: TickStream, mechanism: GazeMechanism, rng: RandomSource) -> tuple[_F64, _F64]:
    """The released positions (m, 2) of one recording and the ε per degree each tick spent, as
    its session releases them: one state, one random source, one mechanism call per batch of
    ticks (a mechanism's draws depend on how the ticks are batched)."""
    state = mechanism.new_state()
    outs = [mechanism.release(p.deg, state, rng) for p in stream.parts]
    if not outs:
        return np.empty((0, 2)), np.empty(0)
    return np.concatenate([o.values for o in outs]), np.concatenate([o.epsilon for o in outs])


def check_filter(name: str) -> str:
    """``name`` if it names a filter: ``"none"``, ``"median<k>"`` or ``"mean<k>"`` with 2 ≤ k ≤ 600,
    or ``"adaptive<k>"`` with k odd (:mod:`~streamdp.kernels.adaptive_median`).

    Raises
    ------
    ValueError
        Anything else.

    Examples
    --------
    >>> check_filter("median5")
    'median5'
    >>> check_filter("median1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: filter must be none, median<k> or mean<k> with 2 ≤ k ≤ 600 ticks or adaptive<k> ..., got 'median1'
    """
    return check_smoothing(name)


def smooth(values: _F64, name: str) -> _F64:
    """A causal filter an app may apply to the released positions for free (post-processing):
    per axis, the median, mean or adaptive median of the last ``k`` ticks (the first ticks repeat the first one
    backwards; :func:`~streamdp.kernels.smoothing.causal_smooth`, which the channel applies on the
    device with ``gaze_smoothing``). ``"none"`` returns ``values``.

    Examples
    --------
    >>> smooth(np.array([[0.0, 0.0], [9.0, 1.0], [1.0, 1.0]]), "median3").tolist()
    [[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]
    """
    return causal_smooth(values, name)[0]


def ticks_recording(t: _F64, deg: _F64, fov_deg: tuple[float, float], name: str) -> Recording:
    """A released tick stream as gaze an attacker can feed the feature pipeline: x/y normalized
    as the channel publishes them (``x_norm``, ``y_norm``), confidence 1.0, valid, no diameter
    (the channel publishes none: the pupil features see no pupil), no blinks."""
    nx, ny = degrees_to_norm(deg[:, 0], deg[:, 1], fov_deg)
    return Recording(GazeBatch.from_arrays(t=t, x=nx, y=ny, valid=np.ones(len(t), dtype=bool)), None, name)


def halves(rec: Recording, mid: float) -> tuple[Recording, Recording]:
    """``rec`` cut at the public time ``mid``: samples with ``t ≤ mid``, and the rest."""
    cut = int(np.searchsorted(rec.gaze.t, mid, side="right"))
    out = []
    for lo, hi, keep in ((0, cut, lambda s: s <= mid), (cut, len(rec.gaze), lambda s: s > mid)):
        blinks = None
        if rec.blinks is not None:
            inside = keep(rec.blinks.start) & keep(rec.blinks.end)
            blinks = BlinkEvents.from_arrays(rec.blinks.start[inside], rec.blinks.end[inside])
        out.append(Recording(rec.gaze.slice(lo, hi), blinks, rec.name, camera=rec.camera))
    return out[0], out[1]


def split_features(rec: Recording, mid: float, config: SessionConfig) -> tuple[_F64, _F64, _F64, _F64]:
    """The feature rows of each half of ``rec`` (cut at ``mid``), each computed by a session's
    own conversion and pipeline from that half alone, so that no 30 s window holds gaze of both:
    ``(t_train, rows_train, t_test, rows_test)``. A recording without blink events (released
    ticks) has its blinks found from confidence whatever ``config.blinks`` says."""
    if rec.blinks is None and config.blinks == "given":
        config = replace(config, blinks="confidence")
    out: list[_F64] = []
    for half in halves(rec, mid):
        rows = Session.for_recording(config, half).feature_rows(half) if len(half.gaze) else None
        out += [rows.t, rows.values] if rows is not None else [np.empty(0), np.empty((0, N_FEATURES))]
    return out[0], out[1], out[2], out[3]


def midpoint(t: Sequence[float] | _F64) -> float:
    """The public cut of a recording's ticks: halfway between its first and last tick."""
    a = np.asarray(t, dtype=np.float64)
    return float(a[0] + (a[-1] - a[0]) / 2.0)


__all__ = [
    "DEFAULT_FILTERS",
    "GazeStudy",
    "TickStream",
    "check_filter",
    "gaze_study",
    "halves",
    "midpoint",
    "sanitize_stream",
    "smooth",
    "split_features",
    "tick_stream",
    "ticks_recording",
]
