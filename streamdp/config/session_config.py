"""SessionConfig, the only factory of a pipeline: the fields (:mod:`.fields`) and their files
(:mod:`.toml_files`), and everything built from them, the parts (the event detector's thresholds,
the windows, the unit of privacy, the bounds, the mechanism) and the pipelines.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ..gaze_channel import GazeChannel, tick_offset
from ..kernels.geometry import CAMERA_FOV_DEG
from ..pipeline import ChunkPrivatizer, FeaturePipeline, PrivatePipeline
from ..privacy.accountant import PrivacyUnit
from ..privacy.bounds import BoundsProfile, default_profile, weights_profile
from ..privacy.gaze_mechanisms import GAZE_MECHANISMS, GazeMechanism
from ..privacy.ledger_store import LedgerStore
from ..privacy.mechanisms import Mechanism, make_mechanism
from ..privacy.noise import secure_generator
from ..privacy.randomness import RandomSource
from ..privacy.weights_file import WeightsTable
from ..schedule_defaults import TICK_SLACK
from ..signals import DEFAULT_SIGNAL, SIGNALS
from ..stages.ahead import CLOCK_JUMP
from ..stages.events import EventConfig
from ..stages.features import WindowConfig
from ..stages.gaze_privatizer import GAZE_LEDGER_SUFFIX
from .fields import DEFAULT_CAMERA, DEFAULT_EPSILON, DEFAULT_WEIGHTS, EVENT_FIELDS
from .toml_files import ConfigFiles

#: added to a seed for the gaze channel's noise
GAZE_SEED_OFFSET = 0x6A2E


@dataclass(frozen=True, kw_only=True)
class SessionConfig(ConfigFiles):
    """Everything that decides a session's output.

    Build one from keywords, from plain values (:meth:`from_mapping`: a dict, the ``config`` of a
    ``replay.json``) or from a TOML file (:meth:`from_toml`; :meth:`to_toml` writes one).

    ``weights`` is a shipped allocation's name (``"equal"``, ``"task"``) or the path of a weights
    file from ``streamdp fit-weights`` (:mod:`streamdp.privacy.weights_file`; a relative path is
    relative to the working directory, ``~`` is expanded). The file is read and checked when the
    configuration is made, and its weights stay with the configuration (a copy sent to a worker
    reads no file); the path is kept as given, so :meth:`to_toml` and :meth:`describe` write it
    back as it was given. A name that is a shipped allocation's is that allocation: give
    ``./task`` for a file called ``task``.

    Raises
    ------
    TypeError, ValueError
        From the constructor: a field of the wrong type or out of range, named with its value;
        from :meth:`check` also anything the mechanism, the unit or the bounds refuse.
    InputError
        From the constructor: a weights file that cannot be read or is refused
        (:func:`~streamdp.privacy.weights_file.load_weights_file`), named with the problem.

    Examples
    --------
    >>> cfg = SessionConfig(mechanism="dcfpa", epsilon=2.0, chunk_length=32)
    >>> d = cfg.mechanism_instance().describe()
    >>> d["epsilon"], d["weights"], d["epsilon_per_feature"], cfg.event_config().fov_deg  # ε 2: one feature
    (2.0, 'task@k=1', 2.0, (99.0, 53.0))
    >>> SessionConfig(mechanism="lpa", k=3).check()
    Traceback (most recent call last):
    ...
    TypeError: lpa does not take parameter 'k'

    A weights file: each feature's ε is its share, and the ledger names the file's allocation

    >>> import json, pathlib, tempfile
    >>> from streamdp.privacy.weights_file import weights_digest, weights_document
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pilot.json"
    >>> _ = path.write_text(json.dumps(weights_document({"fixation_rate": 3.0, "blink_rate": 1.0}, name="pilot")))
    >>> d = SessionConfig(weights=str(path), epsilon=4.0).mechanism_instance().describe()
    >>> d["weights"], d["epsilon_per_feature"][0], d["weights_digest"] == weights_digest({"fixation_rate": 3.0,
    ...                                                                                   "blink_rate": 1.0})
    ('pilot', 3.0, True)
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        # the cheap parts validate now; the mechanism (maybe costly) in check()
        self.window_config()
        self.event_config()
        self.privacy_unit()

    def camera_for(self, source_camera: str | None = None) -> str:
        """The scene camera: the configured one, else the source's, else the default.

        Raises
        ------
        TypeError
            ``source_camera`` is neither a str nor None.
        """
        if source_camera is not None and not isinstance(source_camera, str):
            raise TypeError(f"source_camera must be a camera's name (str) or None, got {source_camera!r}")
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

    @property
    def chunk_hold(self) -> float:
        """Source seconds from a live chunk's last step to its public release time: the chunk
        reorder window (late gaze it waits for) + the slack (its computation)."""
        return self.chunk_reorder_window + self.deadline_slack

    @property
    def tick_hold(self) -> float:
        """Source seconds from the end of a live gaze tick's interval to its public release time:
        the reorder window + :data:`~streamdp.schedule_defaults.TICK_SLACK` (a tick takes
        microseconds to compute, in the call that releases it: the slack only puts the release
        strictly after the gaze the tick waited for)."""
        return self.reorder_window + TICK_SLACK

    @property
    def chunk_leap(self) -> float:
        """Seconds past a chunk's deadline beyond which live gaze leapt there
        (:func:`~streamdp.stages.ahead.leap_past`): the clock-jump threshold + :attr:`chunk_hold`; a
        clock set by less explains no leap."""
        return CLOCK_JUMP + self.chunk_hold

    @property
    def tick_offset(self) -> float:
        """Source seconds from a live gaze tick's time to its public release time: half a tick (to
        the end of its interval) + :attr:`tick_hold`."""
        return tick_offset(self.gaze_rate, self.tick_hold)

    def privacy_unit(self) -> PrivacyUnit:
        return PrivacyUnit(self.unit, w=self.w, budget=self.budget, identity=self.identity, ledger_dir=self.ledger_dir)

    def bounds_profile(self) -> BoundsProfile:
        """The bounds (the shipped profile or the configured file) with the configured weights: a
        shipped allocation, or a weights file's (as read when the configuration was made); a
        bounds file's own per-feature weights are kept when ``weights`` is the default.

        On the shipped profile, the shipped ``task`` allocation is taken at the total ε a chunk
        spends (after the ceiling; :func:`~streamdp.privacy.shipped_weights.resolve_weights`): it
        funds fewer features at a low ε, named ``task@k=K`` in the ledger. ε stated per feature
        funds every feature of it.

        Examples
        --------
        >>> SessionConfig(epsilon=2496.0).bounds_profile().weights_name  # spends the ceiling, 200
        'task'
        >>> SessionConfig(epsilon=10.0).bounds_profile().weights_name.startswith("task@k=")
        True
        """
        spent = None if self.epsilon_per_feature is not None else _spending(self)[0]["epsilon"]
        if spent is not None and not 0 < spent < math.inf:
            spent = None  # an ε the mechanism refuses, in its own words, when it is built
        return _bounds(self.bounds, self.signal, self.weights, spent)

    def mechanism_params(self) -> dict[str, Any]:
        """The mechanism parameters a user set: the others keep the mechanism's defaults, and a
        parameter the mechanism does not take is refused by it, never dropped."""
        params: dict[str, Any] = {"chunk_length": self.chunk_length, **_spending(self)[0]}
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
        self.gaze_mechanism_instance()
        return self

    def gaze_mechanism_instance(self, source_camera: str | None = None) -> GazeMechanism | None:
        """The gaze channel's mechanism (None when the channel is off): ε per degree over
        ``gaze_w`` ticks, positions clipped to the scene camera's public field of view.

        Raises
        ------
        ValueError
            The channel is on for a signal that is not scene gaze, or a parameter the mechanism
            refuses.
        """
        if not self.gaze_channel:
            return None
        if self.signal != DEFAULT_SIGNAL:
            raise ValueError(f"gaze_channel needs scene gaze (signal {DEFAULT_SIGNAL!r}), got signal {self.signal!r}")
        fx, fy = self.event_config(source_camera).fov_deg
        mechanism = GAZE_MECHANISMS[self.gaze_mechanism]
        try:
            return mechanism(epsilon=self.gaze_epsilon, w=self.gaze_w, field=(fx / 2, fy / 2))
        except ValueError as exc:  # the mechanism names its own parameters: say which fields set them
            raise ValueError(f"gaze_epsilon={self.gaze_epsilon!r}, gaze_w={self.gaze_w!r}: {exc}") from None

    def gaze_channel_for(
        self, seed: int | None = None, source_camera: str | None = None, *, live: bool = False
    ) -> GazeChannel | None:
        """The real-time gaze channel (None when off); ``live``: each tick held to its public time
        (the end of its interval + the reorder window). Its noise has a source of its own: the OS
        CSPRNG, or with a seed ``seed + GAZE_SEED_OFFSET`` (the chunks' noise never repeats in the
        ticks').

        Raises
        ------
        TypeError, ValueError
            ``seed`` is not an int ≥ 0 or None; the channel's mechanism refuses its fields.
        """
        seed = self.seed if seed is None else _seed(seed)
        mechanism = self.gaze_mechanism_instance(source_camera)
        if mechanism is None:
            return None
        ledger = None
        if self.identity is not None:  # the identity's ledger folder, a line of the channel's own
            ledger = LedgerStore(self.identity + GAZE_LEDGER_SUFFIX, folder=self.ledger_dir)
        return GazeChannel(
            mechanism,
            rate=self.gaze_rate,
            fov_deg=self.event_config(source_camera).fov_deg,
            min_confidence=self.min_confidence,
            rng=secure_generator(None if seed is None else seed + GAZE_SEED_OFFSET),
            hold=self.tick_hold if live else None,
            reorder=self.reorder_window,
            ledger=ledger,
            smoothing=self.gaze_smoothing,
        )

    def rng(self, seed: int | None = None) -> RandomSource:
        """The noise's random source: bits from the OS CSPRNG when neither ``seed`` nor the
        configured seed is set; else a seeded source, reproducible and not private.

        Raises
        ------
        TypeError, ValueError
            ``seed`` is not an int ≥ 0 or None.
        """
        return secure_generator(self.seed if seed is None else _seed(seed))

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
            postprocess=bool(self.postprocess_releases),
        )

    def chunk_privatizer(self, seed: int | None = None) -> ChunkPrivatizer:
        """Feature rows → sanitized releases (rows computed once, sanitized many ways)."""
        return ChunkPrivatizer(
            self.mechanism_instance(),
            self.privacy_unit(),
            self.rng(seed),
            self.window_config(),
            max_saccade_interval=self.max_saccade_interval,
            postprocess=bool(self.postprocess_releases),
        )


def _seed(seed: object) -> int:
    """A noise seed given to a method, checked as the field is."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or None, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be ≥ 0 (or None: OS entropy), got {seed!r}")
    return int(seed)


@lru_cache(maxsize=16)
def _bounds(path: str | None, signal: str, weights: str, spent: float | None) -> BoundsProfile:
    if isinstance(weights, WeightsTable):  # a weights file's, read when the configuration was made
        if path:
            profile = BoundsProfile.load(path)
        else:
            profile = default_profile() if signal == DEFAULT_SIGNAL else SIGNALS[signal].bounds_profile()
        return profile.with_weights(weights.mapping(), weights.allocation)
    if not path and signal == DEFAULT_SIGNAL:
        # the count of funded features was chosen for the shipped bounds only
        return default_profile(weights, epsilon=spent)
    profile = BoundsProfile.load(path) if path else SIGNALS[signal].bounds_profile()
    if path and weights == DEFAULT_WEIGHTS:
        return profile  # a profile file's own weights
    return profile if weights == "equal" else profile.with_weights(weights_profile(weights), weights)


@lru_cache(maxsize=32)
def _mechanism(config: SessionConfig) -> Mechanism:
    params = config.mechanism_params()
    asked = _spending(config)[1]
    if asked is not None:  # the ledger says what was asked beside what is spent
        if not math.isfinite(asked):
            raise ValueError(
                f"epsilon_per_feature {config.epsilon_per_feature!r} × "
                f"{int(config.bounds_profile().released.sum())} released features is not finite"
            )
        params["epsilon_asked"] = asked
    mech = make_mechanism(config.mechanism, bounds=config.bounds_profile(), **params)
    fitted = getattr(config.weights, "epsilon", None)  # a weights file fitted for an ε
    spent = math.nan if fitted is None else float(mech.describe().get("epsilon", math.nan))
    if fitted is not None and math.isfinite(spent) and not math.isclose(fitted, spent, rel_tol=1e-6):
        logging.getLogger(__name__).warning(
            "weights %s were fitted for ε %g a chunk, and this session spends %g: refit them for it "
            "(streamdp fit-weights --epsilon %g)",
            config.weights,
            fitted,
            spent,
            spent,
        )
    return mech


def _spending(config: SessionConfig) -> tuple[dict[str, float], float | None]:
    """What the mechanism spends, as the keyword the configuration states it by (``epsilon`` or
    ``epsilon_per_feature``, after the ceiling), and the total ε per chunk asked for when the
    ceiling lowered it (else None)."""
    ceiling = math.inf if config.epsilon_ceiling is None else float(config.epsilon_ceiling)
    if config.epsilon_per_feature is not None:
        released = int(config.bounds_profile().released.sum())
        asked = config.epsilon_per_feature * released
        spend = {"epsilon_per_feature": min(config.epsilon_per_feature, ceiling / max(released, 1))}
    else:
        asked = DEFAULT_EPSILON if config.epsilon is None else config.epsilon
        spend = {"epsilon": min(asked, ceiling)}
    return spend, (float(asked) if asked > ceiling else None)
