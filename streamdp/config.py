"""One configuration, the only factory of a pipeline.

:class:`SessionConfig` holds, as plain values, everything that decides what a session outputs:
the mechanism and its parameters, the unit of privacy and its budget, the bounds profile, the
window and step, the event thresholds, the scene camera (field of view), the signal units, the
pupil diameter unit and the live reorder window. The relay, the Capture plugin, the Neon relay,
``replay``, ``demo``, ``evaluate`` and ``features`` all build their pipeline from it, and every CLI
command takes its options from its fields (:mod:`streamdp.cli.options`), so an option added here
reaches every command. It is frozen and picklable (worker processes, dask).
"""

from __future__ import annotations

import difflib
import json
import math
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .errors import InputError
from .kernels.geometry import CAMERA_FOV_DEG
from .pipeline import ChunkPrivatizer, FeaturePipeline, PrivatePipeline
from .privacy.accountant import UNITS, PrivacyUnit
from .privacy.bounds import WEIGHTS_PROFILES, BoundsProfile, default_profile, weights_profile
from .privacy.mechanisms import MECHANISMS, Mechanism, make_mechanism
from .privacy.noise import secure_generator
from .privacy.randomness import RandomSource
from .privacy.reach import DEFAULT_DEADLINE_SLACK, DEFAULT_MAX_EVENT_DURATION
from .signals import DEFAULT_SIGNAL, SIGNALS
from .stages.events import EventConfig
from .stages.features import WindowConfig

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

#: the scene camera when neither the configuration nor the source names one
DEFAULT_CAMERA = "pupil_core_720p"

_EVENTS = EventConfig()
#: EventConfig fields that SessionConfig holds under the same name
EVENT_FIELDS = tuple(f.name for f in fields(EventConfig) if f.name not in ("fov_deg", "blink_source"))


def _opt(default: Any, help: str, group: str, **cli: Any) -> Any:
    """A configuration field with what the CLI needs to offer it as an option."""
    return field(default=default, metadata={"help": help, "group": group, **cli})


@dataclass(frozen=True)
class SessionConfig:
    """Everything that decides a session's output.

    Build one from keywords, from plain values (:meth:`from_mapping`: a dict, the ``config`` of a
    ``replay.json``) or from a TOML file (:meth:`from_toml`; :meth:`to_toml` writes one).

    Raises
    ------
    TypeError, ValueError
        From the constructor: a field of the wrong type or out of range, named with its value;
        from :meth:`check` also anything the mechanism, the unit or the bounds refuse.

    Examples
    --------
    >>> cfg = SessionConfig(mechanism="dcfpa", epsilon=2.0, chunk_length=32)
    >>> d = cfg.mechanism_instance().describe()
    >>> d["epsilon"], round(d["epsilon_per_feature"], 4), cfg.event_config().fov_deg
    (2.0, 0.0769, (99.0, 53.0))
    >>> SessionConfig(mechanism="lpa", k=3).check()
    Traceback (most recent call last):
    ...
    TypeError: lpa does not take parameter 'k'
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
        DEFAULT_WEIGHTS, "how the ε of a chunk is split over the features", "privacy", choices=WEIGHTS_PROFILES
    )
    bounds: str | None = _opt(None, "bounds profile, TOML or JSON (default: the shipped profile)", "privacy")
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
    # live
    reorder_window: float = _opt(0.1, "s of live gaze held back to put it in time order", "live")
    deadline_slack: float = _opt(
        DEFAULT_DEADLINE_SLACK,
        "s after a chunk's last step (plus the reorder window) at which it is released; it is computed "
        "during this hold, so the release time never depends on how long the computation took",
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
            if choices is not None and value is not None and value not in choices:
                raise ValueError(f"{f.name} must be one of {', '.join(map(str, choices))}, got {value!r}")
        for name in ("window", "step", "reorder_window", "max_event_duration", "deadline_slack"):
            _check_real(name, getattr(self, name))
        for name in ("epsilon", "epsilon_per_feature", "epsilon_ceiling", "level_share", "budget", *EVENT_FIELDS):
            value = getattr(self, name)
            if name != "units" and value is not None:
                _check_real(name, value)
        for name in ("chunk_length", "w", "seed"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))):
                raise TypeError(f"{name} must be an int, got {v!r}")
        if self.k is not None and self.k != "private" and (isinstance(self.k, bool) or not isinstance(self.k, int)):
            raise TypeError(f"k must be an int or 'private', got {self.k!r}")
        for name in ("reorder_window", "deadline_slack"):
            value = getattr(self, name)
            if value < 0 or not math.isfinite(value):
                raise ValueError(f"{name} must be finite and ≥ 0, got {value!r}")
        if self.epsilon_ceiling is not None and not self.epsilon_ceiling > 0:
            raise ValueError(f"epsilon_ceiling must be > 0 (or None: no ceiling), got {self.epsilon_ceiling!r}")
        if not (self.max_event_duration > 0 and math.isfinite(self.max_event_duration)):
            raise ValueError(f"max_event_duration must be finite and > 0, got {self.max_event_duration!r}")
        # the cheap parts validate now; the mechanism (maybe costly) in check()
        self.window_config()
        self.event_config()
        self.privacy_unit()

    # ------------------------------------------------------------- parts

    def camera_for(self, source_camera: str | None = None) -> str:
        """The scene camera: the configured one, else the source's, else the default."""
        if self.camera != "auto":
            return self.camera
        return source_camera if source_camera in CAMERA_FOV_DEG else DEFAULT_CAMERA

    def event_config(self, source_camera: str | None = None) -> EventConfig:
        """The detector's thresholds: every :class:`EventConfig` field is a field of this
        configuration by the same name, but the camera (→ ``fov_deg``), ``blinks`` (→
        ``blink_source``)."""
        same = {name: getattr(self, name) for name in EVENT_FIELDS}
        return EventConfig(
            fov_deg=CAMERA_FOV_DEG[self.camera_for(source_camera)],
            blink_source=self.blinks,  # type: ignore[arg-type]
            **same,
        )

    def window_config(self) -> WindowConfig:
        """The windows on the public schedule: a chunk is computed when the ordered gaze passes
        its last step (the live session then holds it ``deadline_slack`` s before it publishes),
        so that local feature rows equal what the private pipeline sanitizes."""
        return WindowConfig(self.window, self.step, self.max_event_duration, self.chunk_length, 0.0)

    def privacy_unit(self) -> PrivacyUnit:
        return PrivacyUnit(
            self.unit, w=self.w, budget=self.budget, identity=self.identity, ledger_dir=self.ledger_dir
        )

    def bounds_profile(self) -> BoundsProfile:
        """The bounds (the shipped profile or the configured file) with the configured weights;
        a file's own per-feature weights are kept when ``weights`` is the default."""
        return _bounds(self.bounds, self.signal, self.weights)

    def mechanism_params(self) -> dict[str, Any]:
        """The mechanism parameters a user set: the others keep the mechanism's defaults, and a
        parameter the mechanism does not take is refused by it, never dropped."""
        params: dict[str, Any] = {"chunk_length": self.chunk_length}
        ceiling = math.inf if self.epsilon_ceiling is None else float(self.epsilon_ceiling)
        if self.epsilon_per_feature is not None:
            released = int(self.bounds_profile().released.sum())
            params["epsilon_per_feature"] = min(self.epsilon_per_feature, ceiling / max(released, 1))
        else:
            params["epsilon"] = min(DEFAULT_EPSILON if self.epsilon is None else self.epsilon, ceiling)
        for name in ("transform", "k", "sensitivity", "level_share"):
            if getattr(self, name) is not None:
                params[name] = getattr(self, name)
        return params

    def mechanism_instance(self) -> Mechanism:
        """The mechanism (built once per configuration: mechanisms are immutable).

        Raises
        ------
        TypeError, ValueError
            A parameter the mechanism refuses, named with its value.
        """
        return _mechanism(self)

    def check(self) -> SessionConfig:
        """Build everything once, so that bad options fail before any socket or file exists."""
        self.mechanism_instance()
        return self

    def rng(self, seed: int | None = None) -> RandomSource:
        """The noise's random source: bits from the OS CSPRNG when neither ``seed`` nor the
        configured seed is set; else a seeded source, reproducible and not private."""
        return secure_generator(self.seed if seed is None else seed)

    def feature_pipeline(self, source_camera: str | None = None) -> FeaturePipeline:
        """Gaze → feature rows (for the explicit, local, unsanitized ``features`` output)."""
        return FeaturePipeline(self.event_config(source_camera), self.window_config())

    def private_pipeline(self, seed: int | None = None, source_camera: str | None = None) -> PrivatePipeline:
        """Gaze → sanitized releases, with the generator of :meth:`rng`."""
        return PrivatePipeline(
            self.mechanism_instance(),
            unit=self.privacy_unit(),
            rng=self.rng(seed),
            events=self.event_config(source_camera),
            window=self.window_config(),
        )

    def chunk_privatizer(self, seed: int | None = None) -> ChunkPrivatizer:
        """Feature rows → sanitized releases (rows computed once, sanitized many ways)."""
        return ChunkPrivatizer(
            self.mechanism_instance(),
            self.privacy_unit(),
            self.rng(seed),
            self.window_config(),
            max_saccade_interval=self.max_saccade_interval,
        )

    def describe(self) -> dict[str, Any]:
        """Every field as plain values (for ledgers and summaries); :meth:`from_mapping` reads it back."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    # ------------------------------------------------------------- files

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], *, source: str = "configuration") -> SessionConfig:
        """A configuration from plain values keyed by field name: a dict, a TOML file's
        contents, :meth:`describe`'s output, the ``config`` of a ``replay.json``. Fields not given
        keep their defaults.

        Parameters
        ----------
        values : mapping of str to plain values
            Field names to values; None where the field's default is None.
        source : str
            Named first in error messages (a file's path).

        Raises
        ------
        TypeError
            ``values`` is not a mapping; a value of the wrong type (named).
        InputError
            A key that is no field of the configuration (named, with the nearest field).
        ValueError
            A value out of range (named).

        Examples
        --------
        >>> SessionConfig.from_mapping({"epsilon": 0.5, "chunk_length": 32}).epsilon
        0.5
        >>> SessionConfig.from_mapping({"epsilom": 0.5})
        Traceback (most recent call last):
        ...
        streamdp.errors.InputError: configuration: unknown key 'epsilom' (did you mean 'epsilon'?)
        """
        if not isinstance(values, Mapping):
            raise TypeError(f"{source}: a configuration must be a mapping of field names to values, got {values!r}")
        names = [f.name for f in fields(cls)]
        unknown = [k for k in values if k not in names]
        if unknown:
            said = []
            for key in unknown:
                near = difflib.get_close_matches(str(key), names, n=1)
                said.append(f"{key!r}" + (f" (did you mean {near[0]!r}?)" if near else ""))
            raise InputError(f"{source}: unknown key{'s' if len(said) > 1 else ''} {', '.join(said)}")
        try:
            return cls(**values)
        except (TypeError, ValueError) as exc:
            if type(exc) in (TypeError, ValueError):
                raise type(exc)(f"{source}: {exc}") from None
            raise

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> SessionConfig:
        """A configuration from a TOML file of ``field = value`` lines (:meth:`to_toml` writes one).
        A relative ``bounds`` path is relative to the file's folder.

        Raises
        ------
        InputError
            The file cannot be read, is not TOML, or has a key that is no field (named).
        TypeError, ValueError
            A value of the wrong type or out of range, named with the file and the field.
        """
        values = read_toml(path)
        bounds = values.get("bounds")
        if isinstance(bounds, str) and not Path(bounds).is_absolute():
            values["bounds"] = str(Path(path).parent / bounds)
        return cls.from_mapping(values, source=str(path))

    def to_toml(self) -> str:
        """This configuration as TOML, a commented line per field (unset fields commented out);
        :meth:`from_toml` reads it back to an equal configuration.

        Examples
        --------
        >>> for line in SessionConfig(epsilon=0.5).to_toml().splitlines():
        ...     if line.startswith(("epsilon =", "# transform")):
        ...         print(line)
        epsilon = 0.5  # ε of one chunk, all features together, split by the weights (default 10)
        # transform: unset (dcfpa/cfpa: transform (default dft))
        """
        lines = ["# streamdp session configuration (SessionConfig.from_toml reads it)"]
        group = None
        for f in fields(self):
            if f.metadata.get("group") != group:
                group = f.metadata.get("group")
                lines += ["", f"# {group}"]
            value, help_text = getattr(self, f.name), f.metadata.get("help", "")
            if value is None:
                lines.append(f"# {f.name}: unset ({help_text})")
            else:
                lines.append(f"{f.name} = {_toml_value(value)}  # {help_text}")
        return "\n".join(lines) + "\n"


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The contents of a TOML file (``tomllib``; ``tomli`` before Python 3.11).

    Raises
    ------
    InputError
        The file does not exist, is a folder, cannot be read, or is not valid TOML (the parser's
        message, with line and column).
    """
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{p}: is a folder, not a TOML file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: cannot be read ({exc})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{p}: not valid TOML: {exc}") from None


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    # a JSON string is a TOML basic string: the same quotes and escapes
    return json.dumps(str(value), ensure_ascii=False)


def _check_real(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value!r}")


@lru_cache(maxsize=16)
def _bounds(path: str | None, signal: str, weights: str) -> BoundsProfile:
    if not path and signal == DEFAULT_SIGNAL:
        return default_profile(weights)
    profile = BoundsProfile.load(path) if path else SIGNALS[signal].bounds_profile()
    if path and weights == DEFAULT_WEIGHTS:
        return profile  # a profile file's own weights
    return profile if weights == "equal" else profile.with_weights(weights_profile(weights), weights)


@lru_cache(maxsize=32)
def _mechanism(config: SessionConfig) -> Mechanism:
    return make_mechanism(config.mechanism, bounds=config.bounds_profile(), **config.mechanism_params())
