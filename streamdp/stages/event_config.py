"""The event detector's thresholds, with their units and defaults: :class:`EventConfig`, which
:class:`~streamdp.stages.events.EventDetector` and its fixation and blink parts
(:mod:`streamdp.stages._fixations`, :mod:`streamdp.stages._blinks`) all read."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..kernels.geometry import CAMERA_FOV_DEG
from ..schedule_defaults import DEFAULT_MAX_SACCADE_INTERVAL


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
    """

    units: Literal["deg", "norm"] = "deg"
    fov_deg: tuple[float, float] = CAMERA_FOV_DEG["pupil_core_720p"]
    min_confidence: float = 0.6
    max_dispersion: float = 2.5
    min_fixation_duration: float = 0.08
    max_fixation_duration: float | None = None
    max_sample_gap: float = 0.075
    max_saccade_interval: float = DEFAULT_MAX_SACCADE_INTERVAL
    large_saccade: float = 3.0
    blink_source: Literal["confidence", "given"] = "confidence"
    blink_filter_length: float = 0.2
    blink_onset: float = 0.5
    blink_offset: float = 0.25
    min_blink_duration: float = 0.05
    max_blink_duration: float = 2.0

    def __post_init__(self) -> None:
        positive = (
            "max_dispersion",
            "min_fixation_duration",
            "max_sample_gap",
            "max_saccade_interval",
            "large_saccade",
            "blink_filter_length",
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
