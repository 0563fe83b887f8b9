"""The fields of a session configuration, their defaults, their help and their checks.

:class:`ConfigFields` is the frozen dataclass :class:`~streamdp.config.SessionConfig` builds on:
one field per value that decides a session's output, each with the help text and option group the
command line offers it under (:mod:`streamdp.cli.options`), checked when the configuration is made
(a wrong type raises ``TypeError``, a value out of range or not among the field's choices
``ValueError``, both naming the field and the value).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ..errors import InputError
from ..kernels.geometry import CAMERA_FOV_DEG
from ..kernels.smoothing import MAX_SMOOTHING_TICKS, check_smoothing
from ..postprocess import SUPPORTED_MECHANISMS as POSTPROCESS_MECHANISMS
from ..privacy.accountant import UNITS
from ..privacy.bounds import WEIGHTS_PROFILES
from ..privacy.gaze_mechanisms import GAZE_MECHANISMS
from ..privacy.mechanisms import MECHANISMS
from ..privacy.mechanisms.validation import check_chunk_length
from ..privacy.shipped_weights import is_shipped
from ..privacy.weights_file import WeightsTable
from ..schedule_defaults import (
    DEFAULT_CHUNK_REORDER_WINDOW,
    DEFAULT_DEADLINE_SLACK,
    DEFAULT_MAX_EVENT_DURATION,
    DEFAULT_TICK_REORDER_WINDOW,
)
from ..signals import DEFAULT_SIGNAL, SIGNALS
from ..stages.events import EventConfig

#: ε of one chunk, all features together, when the configuration gives none
DEFAULT_EPSILON = 10.0
#: the most ε one chunk spends by default, all features together, whatever ``epsilon`` allows:
#: chosen on the synthetic study (docs/evaluation.md) as the smallest round value at which the
#: released features keep more utility than Bozkir et al.'s Algorithm 1 at ε 2496, while identity
#: stays at chance. At 200 the formal guarantee alone protects little; the ceiling is what keeps
#: "ε = 2496" from releasing identity
DEFAULT_EPSILON_CEILING = 200.0
#: the shipped allocation used unless the configuration names another (docs/evaluation.md)
DEFAULT_WEIGHTS = "task"

#: the real-time gaze channel's defaults: ticks a second, the window w (1 s of ticks) and ε per
#: degree over it (1/3 per degree and tick) and the public median of the released positions
#: (docs/gaze-channel.md)
DEFAULT_GAZE_RATE = 60.0
DEFAULT_GAZE_W = 60
#: ε_w 20 per degree over 60 ticks with a 9-tick median: the smallest measured ε that meets the
#: dwell (≥ 95 %) and error (≤ 2°) targets with a margin (docs/gaze-channel.md, "Defaults")
DEFAULT_GAZE_EPSILON = 20.0
DEFAULT_GAZE_SMOOTHING = "median5"
#: the tick rates the gaze channel takes: no eye tracker streams faster than 1000 Hz, and a tick
#: less often than once a second is no longer real time
MIN_GAZE_RATE, MAX_GAZE_RATE = 1.0, 1000.0

#: the scene camera when neither the configuration nor the source names one
DEFAULT_CAMERA = "pupil_core_720p"
#: the longest chunk: 2^20 steps are six days of gaze at the default step, and a chunk is held
#: whole in memory and noised as one signal
MAX_CHUNK_LENGTH = 2**20

_EVENTS = EventConfig()
#: EventConfig fields that SessionConfig holds under the same name
EVENT_FIELDS = tuple(f.name for f in fields(EventConfig) if f.name not in ("fov_deg", "blink_source"))


def _opt(default: Any, help: str, group: str, **cli: Any) -> Any:
    """A configuration field with what the CLI needs to offer it as an option."""
    return field(default=default, metadata={"help": help, "group": group, **cli})


@dataclass(frozen=True, kw_only=True)
class ConfigFields:
    """The fields of :class:`~streamdp.config.SessionConfig` and their checks (see there).

    Raises
    ------
    TypeError, ValueError
        A field of the wrong type or out of range, named with its value.
    """

    # privacy
    mechanism: str = _opt("dcfpa", "mechanism", "privacy", choices=tuple(MECHANISMS))
    epsilon: float | None = _opt(
        None,
        f"ε of one chunk, all features together, split by the weights (default {DEFAULT_EPSILON:g})",
        "privacy",
    )
    epsilon_per_feature: float | None = _opt(
        None, "ε of each feature per chunk instead of a total (the papers' convention)", "privacy"
    )
    epsilon_ceiling: float | None = _opt(
        DEFAULT_EPSILON_CEILING,
        "most ε one chunk spends, all features together, whatever epsilon allows; the ledger "
        "charges what is spent (None: no ceiling)",
        "privacy",
    )
    # also a features option: steps are computed at each chunk's deadline
    chunk_length: int = _opt(64, "steps per chunk, a power of two", "privacy", also=("features",))
    transform: str | None = _opt(None, "dcfpa/cfpa: transform (default dft)", "privacy", choices=("dft", "dct"))
    k: int | str | None = _opt(
        None, "dcfpa/cfpa: coefficients kept, or 'private' (default: the public default)", "privacy"
    )
    sensitivity: str | None = _opt(
        None,
        "dcfpa/cfpa: sensitivity (default: the mechanism's)",
        "privacy",
        choices=("bound", "tight", "reachable"),
    )
    level_share: float | None = _opt(None, "dcfpa: share of each feature's ε spent on the chunk's level", "privacy")
    weights: str = _opt(
        DEFAULT_WEIGHTS,
        f"how the ε of a chunk is split over the features: {', '.join(WEIGHTS_PROFILES)}, or a weights file "
        "from streamdp fit-weights",
        "privacy",
        choices=WEIGHTS_PROFILES,
        or_file=True,
    )
    bounds: str | None = _opt(None, "bounds profile, TOML or JSON (default: the shipped profile)", "privacy")
    postprocess_releases: bool = _opt(
        False,
        "on this device, smooth each chunk across chunks and make it consistent with public facts before it is "
        "published (streamdp.postprocess: no ε; dcfpa, cfpa, dcfpa-bozkir or lpa)",
        "privacy",
    )
    unit: str = _opt("chunk", "unit of privacy", "privacy", choices=UNITS)
    budget: float | None = _opt(None, "ε budget of the w-event or session unit", "privacy")
    w: int | None = _opt(None, "w of the w-event unit", "privacy")
    seed: int | None = _opt(
        None, "noise seed: reproducible, not private (research and tests; default: OS entropy)", "privacy"
    )
    identity: str | None = _opt(
        None,
        "whose budget this is, e.g. alice@headset1: ε spent is kept on this device across restarts (session/w-event)",
        "privacy",
    )
    ledger_dir: str | None = _opt(
        None, "folder of the durable ledgers (default ~/.local/state/streamdp/ledgers)", "privacy"
    )
    # features
    signal: str = _opt(
        DEFAULT_SIGNAL,
        "input signal: sets the units, diameter unit, I-DT dispersion, large-saccade threshold and "
        "bounds that are left at their defaults",
        "features",
        choices=tuple(SIGNALS),
    )
    window: float = _opt(30.0, "window length in s", "features")
    step: float = _opt(0.5, "step in s (PrivacEye used 1)", "features")
    camera: str = _opt(
        "auto",
        f"scene camera, for its field of view (auto: the source's, else {DEFAULT_CAMERA})",
        "features",
        choices=("auto", *sorted(CAMERA_FOV_DEG)),
    )
    units: str = _opt(
        "deg", "signal units of the thresholds: deg (visual angle) or norm", "features", choices=("deg", "norm")
    )
    diameter_unit: str = _opt(
        "auto",
        "pupil diameter unit (auto: mm where the 3d detector gives it, else px)",
        "features",
        choices=("auto", "mm", "px"),
    )
    blinks: str = _opt(
        "confidence",
        "detect blinks from confidence, or take the source's blink events",
        "features",
        choices=("confidence", "given"),
    )
    min_confidence: float = _opt(_EVENTS.min_confidence, "samples below it take no part in fixations", "features")
    max_dispersion: float = _opt(_EVENTS.max_dispersion, "I-DT dispersion threshold (deg or norm)", "features")
    min_fixation_duration: float = _opt(_EVENTS.min_fixation_duration, "shortest fixation in s", "features")
    max_fixation_duration: float | None = _opt(None, "longest fixation in s (default: uncut)", "features")
    max_event_duration: float = _opt(
        DEFAULT_MAX_EVENT_DURATION,
        "public block length in s: no event spans a multiple of it (bounds how far one raw sample reaches)",
        "features",
    )
    large_saccade: float = _opt(_EVENTS.large_saccade, "amplitude of a large saccade (deg or norm)", "features")
    max_sample_gap: float = _opt(_EVENTS.max_sample_gap, "s without a usable sample that end a fixation", "features")
    max_saccade_interval: float = _opt(
        _EVENTS.max_saccade_interval, "longest s from one fixation to the next that is a saccade", "features"
    )
    blink_filter_length: float = _opt(_EVENTS.blink_filter_length, "blink step filter history in s", "features")
    blink_onset: float = _opt(_EVENTS.blink_onset, "blink filter onset threshold", "features")
    blink_offset: float = _opt(_EVENTS.blink_offset, "blink filter offset threshold", "features")
    min_blink_duration: float = _opt(_EVENTS.min_blink_duration, "shortest blink in s", "features")
    max_blink_duration: float = _opt(_EVENTS.max_blink_duration, "longest blink in s", "features")
    # the real-time gaze channel
    gaze_channel: bool = _opt(
        False, "also publish sanitized gaze positions on streamdp.gaze.<mechanism>, every tick", "gaze"
    )
    gaze_mechanism: str = _opt("geo-uniform", "the gaze channel's mechanism", "gaze", choices=tuple(GAZE_MECHANISMS))
    gaze_epsilon: float = _opt(
        DEFAULT_GAZE_EPSILON, "ε per degree of gaze displacement (L1) over any gaze_w consecutive ticks", "gaze"
    )
    gaze_w: int = _opt(DEFAULT_GAZE_W, "ticks whose ε together is gaze_epsilon (the w-event window)", "gaze")
    gaze_rate: float = _opt(DEFAULT_GAZE_RATE, "ticks a second on the source's clock (a public grid)", "gaze")
    gaze_smoothing: str = _opt(
        DEFAULT_GAZE_SMOOTHING,
        "public causal median of the last k released positions, median<k> (k odd, 3–31), adaptive<k> (the same, "
        "following a jump within one tick) or none: free post-processing (one raw sample then reaches k ticks)",
        "gaze",
    )
    # live
    reorder_window: float = _opt(
        DEFAULT_TICK_REORDER_WINDOW,
        "s of live gaze a gaze tick waits for after its interval ends, then it is released (one 30 Hz "
        "world frame: Capture publishes gaze once a frame; a lagging eye's late gaze is not waited for)",
        "live",
    )
    chunk_reorder_window: float = _opt(
        DEFAULT_CHUNK_REORDER_WINDOW,
        "s of live gaze held back to put it in time order before the feature stages: a lagging eye "
        "process's gaze arrives that late and still counts (a chunk is released at its last step + this "
        "+ the slack)",
        "live",
    )
    deadline_slack: float = _opt(
        DEFAULT_DEADLINE_SLACK,
        "s after a chunk's last step (plus the chunk reorder window) at which it is released; it is "
        "computed during this hold, so the release time never depends on how long the computation took",
        "live",
    )

    def __post_init__(self) -> None:
        if self.signal in SIGNALS:
            # a signal sets what the user left at its default (scene-deg's values)
            defaults = {f.name: f.default for f in fields(self)}
            for name, value in SIGNALS[self.signal].settings.items():
                if getattr(self, name) == defaults[name]:
                    object.__setattr__(self, name, value)
        for name in ("bounds", "ledger_dir"):
            if isinstance(getattr(self, name), os.PathLike):
                object.__setattr__(self, name, os.fspath(getattr(self, name)))
        object.__setattr__(self, "weights", _weights(self.weights))
        if self.epsilon is not None and self.epsilon_per_feature is not None:
            raise ValueError(
                f"give epsilon (a chunk's total, {self.epsilon!r}) or epsilon_per_feature "
                f"({self.epsilon_per_feature!r}), not both"
            )
        if self.bounds is not None and not isinstance(self.bounds, str):
            raise TypeError(f"bounds must be the path of a bounds profile or None, got {self.bounds!r}")
        for f in fields(self):
            value = getattr(self, f.name)
            choices = f.metadata.get("choices")
            if choices is not None and value is not None and value not in choices and not f.metadata.get("or_file"):
                raise ValueError(f"{f.name} must be one of {', '.join(map(str, choices))}, got {value!r}")
        real = (
            "window",
            "step",
            "reorder_window",
            "chunk_reorder_window",
            "max_event_duration",
            "deadline_slack",
            "gaze_epsilon",
            "gaze_rate",
        )
        for name in real:
            _check_real(name, getattr(self, name))
        for name in ("epsilon", "epsilon_per_feature", "epsilon_ceiling", "level_share", "budget", *EVENT_FIELDS):
            value = getattr(self, name)
            if name != "units" and value is not None:
                _check_real(name, value)
        try:
            check_smoothing(self.gaze_smoothing, max_ticks=MAX_SMOOTHING_TICKS, median_only=True)
        except (TypeError, ValueError) as exc:  # the kernel speaks of "smoothing": name the field
            raise type(exc)(f"gaze_{exc}") from None
        if not isinstance(self.gaze_mechanism, str):
            raise TypeError(f"gaze_mechanism must be one of {', '.join(GAZE_MECHANISMS)}, got {self.gaze_mechanism!r}")
        if not isinstance(self.gaze_channel, (bool, np.bool_)):
            raise TypeError(f"gaze_channel must be True or False, got {self.gaze_channel!r}")
        if not isinstance(self.postprocess_releases, (bool, np.bool_)):
            raise TypeError(f"postprocess_releases must be True or False, got {self.postprocess_releases!r}")
        if self.postprocess_releases and self.mechanism not in POSTPROCESS_MECHANISMS:
            raise ValueError(
                f"postprocess_releases needs a mechanism whose noise the ledger states "
                f"({', '.join(POSTPROCESS_MECHANISMS)}), got {self.mechanism!r}"
            )
        for name in ("chunk_length", "w", "seed", "gaze_w"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
                raise TypeError(f"{name} must be an int, got {v!r}")
        check_chunk_length(self.chunk_length)
        if self.chunk_length > MAX_CHUNK_LENGTH:
            raise ValueError(f"chunk_length must be at most 2^20 = {MAX_CHUNK_LENGTH}, got {self.chunk_length!r}")
        if self.seed is not None and self.seed < 0:
            raise ValueError(f"seed must be ≥ 0 (or None: OS entropy), got {self.seed!r}")
        self._check_blinks()
        if self.k is not None and self.k != "private" and (isinstance(self.k, bool) or not isinstance(self.k, int)):
            raise TypeError(f"k must be an int or 'private', got {self.k!r}")
        for name in ("reorder_window", "chunk_reorder_window", "deadline_slack"):
            value = getattr(self, name)
            if value < 0 or not math.isfinite(value):
                raise ValueError(f"{name} must be finite and ≥ 0, got {value!r}")
        for name in ("gaze_epsilon", "gaze_w"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)!r}")
        if not MIN_GAZE_RATE <= self.gaze_rate <= MAX_GAZE_RATE:
            raise ValueError(f"gaze_rate must be {MIN_GAZE_RATE:g}–{MAX_GAZE_RATE:g} Hz, got {self.gaze_rate!r}")
        if self.epsilon_ceiling is not None and not self.epsilon_ceiling > 0:
            raise ValueError(f"epsilon_ceiling must be > 0 (or None: no ceiling), got {self.epsilon_ceiling!r}")
        if not (self.max_event_duration > 0 and math.isfinite(self.max_event_duration)):
            raise ValueError(f"max_event_duration must be finite and > 0, got {self.max_event_duration!r}")

    def _check_blinks(self) -> None:
        """The blink filter's thresholds and durations (the event detector checks the rest)."""
        for name in ("blink_onset", "blink_offset"):
            # the filter's response to confidences in [0, 1] lies in [-1, 1]: 0 fires on any
            # change, 1 never
            if not 0 < getattr(self, name) < 1:
                raise ValueError(f"{name} must be strictly between 0 and 1, got {getattr(self, name)!r}")
        if not 0 <= self.min_blink_duration <= self.max_blink_duration:
            raise ValueError(
                f"min_blink_duration must be ≥ 0 and at most max_blink_duration ({self.max_blink_duration!r}), "
                f"got {self.min_blink_duration!r}"
            )

    def describe(self) -> dict[str, Any]:
        """Every field as plain values (for ledgers and summaries; a weights file as its path, as
        given); :meth:`from_mapping` reads it back."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["weights"] = str(self.weights)
        return out


def _weights(value: object) -> str:
    """The ``weights`` field: a shipped allocation's name, or a :class:`WeightsTable` (a weights
    file's path, as given, with the weights read from it; one already read is kept, so that a
    configuration copied or replaced on a worker never reads the file again)."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    said = f"{', '.join(WEIGHTS_PROFILES)} or the path of a weights file from streamdp fit-weights"
    if not isinstance(value, str):
        raise TypeError(f"weights must be {said}, got {value!r}")
    if value in WEIGHTS_PROFILES and not isinstance(value, WeightsTable):
        return value
    if not value.strip():
        raise ValueError(f"weights must be {said}, got {value!r}")
    table = value
    if not isinstance(table, WeightsTable):
        try:
            table = WeightsTable.read(value)
        except InputError as exc:
            hint = f" (weights: {said})" if "no such weights file" in str(exc) else ""
            raise InputError(f"weights: {exc}{hint}") from None
    if is_shipped(table.allocation):
        raise InputError(
            f"weights: {value}: its name {table.allocation!r} is a shipped allocation's, which ledgers would "
            "confuse with it: give the file another \"name\""
        )
    return table


def _check_real(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value!r}")
