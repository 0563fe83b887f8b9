"""Streaming eye-movement event detection: fixations (I-DT), saccades and blinks.

:class:`EventDetector` is a :class:`~streamdp.stages.base.Stage`: ``update`` takes a gaze batch and
returns the events it finished, ``flush`` finishes what the end of the stream allows, ``reset``
forgets everything. Feeding a recording in one batch or in any split gives identical events. The
fixation and blink detectors inside it are private parts with array-level signatures, in
:mod:`streamdp.stages._fixations` and :mod:`streamdp.stages._blinks`.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, TimestampOrderError
from ..events import EventBatch, Fixations, Saccades, concat_blinks
from ..gaze import BlinkEvents, GazeBatch
from ..kernels.geometry import CAMERA_FOV_DEG, norm_to_degrees
from ..kernels.wordbook import encode_saccades
from ._blinks import _BlinkDetector
from ._fixations import _FixationDetector
from .base import Stage

_F64 = NDArray[np.float64]


@dataclass(frozen=True)
class EventConfig:
    """Thresholds of the event detector, with their units.

    Parameters
    ----------
    units : {"deg", "norm"}
        "deg" (default) maps normalized gaze to visual angle with ``fov_deg`` and every spatial
        threshold is in degrees; "norm" keeps normalized units (e.g. eye-camera pupil position,
        as MPIIDPEye used) and the thresholds are in those units.
    fov_deg : (float, float)
        Horizontal and vertical field of view of the scene camera (default Pupil Core 720p).
    min_confidence : float
        Samples below it (or marked invalid) take no part in fixations. Pupil's default is 0.6.
    max_dispersion : float
        I-DT dispersion threshold, (max x - min x) + (max y - min y). Default 2.5°: this
        range-sum is up to √2-2× larger than the largest pairwise angle Pupil's detector
        thresholds at 1.5°, and 2.5° gave the best agreement with Player on the tutorial data.
    min_fixation_duration : float
        Seconds; Pupil's detector uses 0.08 s.
    max_fixation_duration : float or None
        Seconds after which a fixation is cut (Pupil's detector: 0.22 s). None (default) keeps
        fixations whole, so that duration features see real durations.
    max_sample_gap : float
        Seconds without a usable sample that end a fixation and forbid a saccade across them.
    max_saccade_interval : float
        Longest time in s from one fixation's end to the next one's start that still counts as a
        saccade between them (longer: data were lost, no saccade is invented).
    large_saccade : float
        Amplitude at and above which a saccade is large (default 3°, the small/large split of the
        features and of the wordbook alphabet).
    blink_source : {"confidence", "given"}
        Detect blinks from confidence, or take the source's own blink events.
    blink_filter_length, blink_onset, blink_offset : float
        Pupil's step-filter blink detector: 0.2 s history, onset threshold 0.5. The offset
        threshold is 0.25 rather than Pupil's 0.5: real lids reopen gradually and the response
        stayed above -0.5 for two of the three blinks Player found in the tutorial recording.
    min_blink_duration, max_blink_duration : float
        Blinks outside this range of seconds are discarded (defaults 0.05 s and 2 s).
    segment_gap : float
        A gap between two samples longer than this (s) ends a segment; the feature windows restart
        after it. The pipeline sets it to the window length.
    """

    units: Literal["deg", "norm"] = "deg"
    fov_deg: tuple[float, float] = CAMERA_FOV_DEG["pupil_core_720p"]
    min_confidence: float = 0.6
    max_dispersion: float = 2.5
    min_fixation_duration: float = 0.08
    max_fixation_duration: float | None = None
    max_sample_gap: float = 0.075
    max_saccade_interval: float = 0.2
    large_saccade: float = 3.0
    blink_source: Literal["confidence", "given"] = "confidence"
    blink_filter_length: float = 0.2
    blink_onset: float = 0.5
    blink_offset: float = 0.25
    min_blink_duration: float = 0.05
    max_blink_duration: float = 2.0
    segment_gap: float = 30.0

    def __post_init__(self) -> None:
        positive = (
            "max_dispersion",
            "min_fixation_duration",
            "max_sample_gap",
            "max_saccade_interval",
            "large_saccade",
            "blink_filter_length",
            "segment_gap",
            "max_blink_duration",
        )
        for name in positive:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"EventConfig.{name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"EventConfig.{name} must be finite and > 0, got {value!r}")
        mfd = self.max_fixation_duration
        if mfd is not None and not (isinstance(mfd, (int, float)) and mfd > self.min_fixation_duration):
            raise ValueError(f"EventConfig.max_fixation_duration must be None or > min_fixation_duration, got {mfd!r}")
        if not 0.0 <= self.min_confidence <= 1.0:
            raise ValueError(f"EventConfig.min_confidence must be in [0, 1], got {self.min_confidence!r}")
        if self.units not in ("deg", "norm"):
            raise ValueError(f"EventConfig.units must be 'deg' or 'norm', got {self.units!r}")
        if self.blink_source not in ("confidence", "given"):
            raise ValueError(f"EventConfig.blink_source must be 'confidence' or 'given', got {self.blink_source!r}")
        if not 0 < self.fov_deg[0] < 180 or not 0 < self.fov_deg[1] < 180:
            raise ValueError(f"EventConfig.fov_deg must be in (0, 180) degrees, got {self.fov_deg!r}")


@dataclass
class _SegmentState:
    prev_fix: tuple[float, float, float, int] | None = None  # end t, x, y, gap id
    given_blinks: list[BlinkEvents] = field(default_factory=list)


class EventDetector(Stage[GazeBatch, EventBatch]):
    """Gaze batches in, :class:`~streamdp.events.EventBatch` out.

    Converts positions to the configured units, drops samples below ``min_confidence`` from
    fixation detection, pairs consecutive fixations into saccades, detects blinks (or passes the
    source's through) and splits the stream into segments at gaps longer than ``segment_gap``.

    Raises
    ------
    TimestampOrderError
        A batch starts before the previous one ended. The batch is rejected whole and the
        detector's state is unchanged, so nothing already accepted is lost.
    InputError
        ``blinks`` were given while ``EventConfig.blink_source`` is "confidence".

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> gaze = generate(duration=10.0, rate=120.0, seed=1).recording.gaze
    >>> detector = EventDetector()
    >>> first, rest = gaze.split([600])
    >>> events = EventBatch.concat([detector.update(first), detector.update(rest), detector.flush()])
    >>> len(events.fixations) > 10, len(detector.flush().fixations)
    (True, 0)
    """

    def __init__(self, config: EventConfig | None = None) -> None:
        self.config = config or EventConfig()
        self._fixations = _FixationDetector(self.config)
        self._blinks = _BlinkDetector(self.config)
        self.reset()

    def reset(self) -> None:
        """Forget the stream: the next batch starts a new one."""
        self._fixations.reset()
        self._blinks.reset()
        self._seg = _SegmentState()
        self._last_t = -np.inf
        self._started = False

    def update(self, batch: GazeBatch, blinks: BlinkEvents | None = None) -> EventBatch:
        """Take the next gaze batch (and the source's blinks, when they are given); return the
        events it finished."""
        if len(batch) and batch.t[0] < self._last_t:
            raise TimestampOrderError(
                f"{batch.source}: timestamps go backwards between batches: {self._last_t!r} then "
                f"{float(batch.t[0])!r}; the batch was rejected (call restart() if the source "
                "restarted its clock)"
            )
        if blinks is not None and self.config.blink_source != "given":
            raise InputError("blinks were given but EventConfig.blink_source is 'confidence'")
        if blinks is not None and len(blinks.start):
            self._seg.given_blinks.append(blinks)
        parts: list[EventBatch] = []
        restarts: list[float] = []
        seg_ends: list[float] = []
        if len(batch):
            t = batch.t
            prev = np.concatenate(([self._last_t], t[:-1]))
            cuts = np.flatnonzero((t - prev) > self.config.segment_gap)
            if not self._started:
                cuts = np.union1d(cuts, [0]).astype(np.intp)
            cut_set = set(cuts.tolist())
            bounds = sorted({0, *cut_set, len(batch)})
            for a, b in itertools.pairwise(bounds):
                if a in cut_set:
                    if self._started:
                        parts.append(self._flush_segment())
                        seg_ends.append(self._last_t)
                    else:
                        seg_ends.append(np.nan)
                    self._started = True
                    restarts.append(float(t[a]))
                parts.append(self._update_segment(batch.slice(a, b)))
                self._last_t = float(t[b - 1])
        else:
            parts.append(self._update_segment(batch))
        out = EventBatch.concat(parts)
        return EventBatch(
            out.fixations,
            out.saccades,
            out.blinks,
            self.final_before,
            np.asarray(restarts, dtype=np.float64),
            np.asarray(seg_ends, dtype=np.float64),
        )

    @property
    def final_before(self) -> float:
        """Every event ending before this time has been emitted."""
        fb = self._fixations.final_before
        if self.config.blink_source == "confidence":
            fb = min(fb, self._blinks.final_before)
        return fb

    def flush(self) -> EventBatch:
        """End of stream: finish every event the data allow and leave the detector ready for a new
        stream. ``final_before`` of the result lies just past the last sample."""
        out = self._flush_segment()
        last = self._last_t
        self.reset()
        return EventBatch(out.fixations, out.saccades, out.blinks, float(np.nextafter(last, np.inf)))

    def _to_units(self, batch: GazeBatch) -> tuple[_F64, _F64]:
        if self.config.units == "deg":
            return norm_to_degrees(batch.x, batch.y, self.config.fov_deg)
        return batch.x, batch.y

    def _update_segment(self, batch: GazeBatch) -> EventBatch:
        cfg = self.config
        usable = batch.valid & (batch.confidence >= cfg.min_confidence)
        x, y = self._to_units(batch)
        raw_last = float(batch.t[-1]) if len(batch) else -np.inf
        fx, gid = self._fixations.update(batch.t[usable], x[usable], y[usable], batch.diameter[usable], raw_last)
        saccades = self._saccades(fx, gid)
        if cfg.blink_source == "confidence":
            conf = np.where(batch.valid, batch.confidence, 0.0)
            blinks = self._blinks.update(batch.t, conf)
        else:
            blinks = self._given_blinks(self.final_before)
        return EventBatch(fx, saccades, blinks, self.final_before)

    def _flush_segment(self) -> EventBatch:
        fx, gid = self._fixations.flush()
        saccades = self._saccades(fx, gid)
        if self.config.blink_source == "confidence":
            blinks = self._blinks.flush()
        else:
            blinks = self._given_blinks(np.nextafter(self._last_t, np.inf))
        self._fixations.reset()
        self._seg = _SegmentState(given_blinks=self._seg.given_blinks)
        return EventBatch(fx, saccades, blinks, -np.inf)

    def _given_blinks(self, before: float) -> BlinkEvents:
        held = concat_blinks(self._seg.given_blinks)
        done = held.end < before
        self._seg.given_blinks = [BlinkEvents(held.start[~done], held.end[~done])] if np.any(~done) else []
        return BlinkEvents(held.start[done], held.end[done])

    def _saccades(self, fx: Fixations, gid: NDArray[np.int64]) -> Saccades:
        """Saccades into each new fixation from the one before it, when nothing was lost between."""
        if len(fx) == 0:
            return Saccades()
        prev = self._seg.prev_fix
        p_end = np.concatenate(([prev[0] if prev else np.nan], fx.end[:-1]))
        p_x = np.concatenate(([prev[1] if prev else np.nan], fx.x[:-1]))
        p_y = np.concatenate(([prev[2] if prev else np.nan], fx.y[:-1]))
        p_gid = np.concatenate(([prev[3] if prev else -1], gid[:-1]))
        self._seg.prev_fix = (float(fx.end[-1]), float(fx.x[-1]), float(fx.y[-1]), int(gid[-1]))
        ok = (p_gid == gid) & ((fx.start - p_end) <= self.config.max_saccade_interval)
        dx = fx.x[ok] - p_x[ok]
        dy = fx.y[ok] - p_y[ok]
        amp = np.hypot(dx, dy)
        ang = np.degrees(np.arctan2(dy, dx))
        return Saccades(
            p_end[ok],
            fx.start[ok],
            amp,
            ang,
            dx,
            encode_saccades(amp, ang, self.config.large_saccade),
        )
