"""Gaze in, feature rows out: the event detector and the window features as one stage."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from .gaze import BlinkEvents, GazeBatch, Recording
from .privacy.accountant import PrivacyUnit
from .privacy.bounds import BoundsProfile, default_profile
from .privacy.mechanisms import Mechanism, make_mechanism
from .privacy.noise import secure_generator
from .privacy.release import PrivateRelease
from .stages.chunker import Chunker
from .stages.events import EventConfig, EventDetector
from .stages.features import FeatureRows, WindowConfig, WindowFeatures
from .stages.privatizer import Privatizer


class FeaturePipeline:
    """Streaming gaze → 52 features every step (stage contract: update / flush / reset).

    The event detector's segment gap is the window length: after a gap longer than a window,
    windows restart and nothing is computed across the gap.

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> rec = generate(duration=40.0, rate=120.0, seed=1).recording
    >>> rows = FeaturePipeline().run(rec)
    >>> rows.values.shape
    (20, 52)
    """

    def __init__(self, events: EventConfig | None = None, window: WindowConfig | None = None) -> None:
        self.window_config = window or WindowConfig()
        cfg = events or EventConfig()
        self.event_config = replace(cfg, segment_gap=self.window_config.window)
        self.detector = EventDetector(self.event_config)
        self.features = WindowFeatures(self.window_config)

    def update(self, batch: GazeBatch, blinks: BlinkEvents | None = None) -> FeatureRows:
        return self.features.update(self.detector.update(batch, blinks))

    def flush(self) -> FeatureRows:
        rows = self.features.update(self.detector.flush())
        self.features.reset()
        return rows

    def reset(self) -> None:
        self.detector.reset()
        self.features.reset()

    def restart(self) -> FeatureRows:
        """The source restarted (e.g. Pupil Capture did, and its clock with it): finish what the
        data allow, then start a new segment with the next batch."""
        return self.flush()

    def run(self, recording: Recording, batch_size: int | None = None) -> FeatureRows:
        """Features of a whole recording (blinks from the recording when the config asks)."""
        blinks = recording.blinks if self.event_config.blink_source == "given" else None
        gaze = recording.gaze
        if batch_size is None:
            parts = [self.update(gaze, blinks)]
        else:
            parts = []
            for i, start in enumerate(range(0, len(gaze), batch_size)):
                parts.append(self.update(gaze.slice(start, start + batch_size), blinks if i == 0 else None))
        parts.append(self.flush())
        return FeatureRows.concat(parts)


class PrivatePipeline:
    """Gaze in, sanitized chunks out: features → chunks of n steps → mechanism + accountant.

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> from streamdp.privacy import dcfpa, default_profile, secure_generator
    >>> mech = dcfpa(epsilon=1.0, bounds=default_profile(), chunk_length=32)
    >>> releases = PrivatePipeline(mech, rng=secure_generator(0)).run(generate(duration=60.0, seed=1).recording)
    >>> len(releases), releases[0].values.shape, releases[0].ledger["mechanism"]
    (1, (32, 52), 'dcfpa')
    """

    def __init__(
        self,
        mechanism: Mechanism,
        unit: PrivacyUnit | None = None,
        rng: np.random.Generator | None = None,
        events: EventConfig | None = None,
        window: WindowConfig | None = None,
    ) -> None:
        self.features = FeaturePipeline(events, window)
        wc = self.features.window_config
        self.chunker = Chunker(mechanism.chunk_length, wc.step)
        self.privatizer = Privatizer(mechanism, unit, rng, wc.window, wc.step)

    def update(self, batch: GazeBatch, blinks: BlinkEvents | None = None) -> list[PrivateRelease]:
        return self.privatizer.update(self.chunker.update(self.features.update(batch, blinks)))

    def flush(self) -> list[PrivateRelease]:
        out = self.privatizer.update(self.chunker.update(self.features.flush()))
        self.chunker.flush()
        return out

    def restart(self) -> list[PrivateRelease]:
        """The source restarted: finish what the data allow; the budget spent is kept."""
        return self.flush()

    def run(self, recording: Recording, batch_size: int | None = None) -> list[PrivateRelease]:
        blinks = recording.blinks if self.features.event_config.blink_source == "given" else None
        gaze = recording.gaze
        out: list[PrivateRelease] = []
        if batch_size is None:
            out += self.update(gaze, blinks)
        else:
            for i, start in enumerate(range(0, len(gaze), batch_size)):
                out += self.update(gaze.slice(start, start + batch_size), blinks if i == 0 else None)
        out += self.flush()
        return out


@dataclass(frozen=True)
class PipelineConfig:
    """Everything that decides a private pipeline's output, as plain values: picklable for worker
    processes and dask, and what the CLI's options become."""

    mechanism: str = "dcfpa"
    epsilon: float = 1.0
    chunk_length: int = 64
    transform: str = "dft"
    k: int | str | None = None
    sensitivity: str = "bound"
    bounds_file: str | None = None
    unit: str = "chunk"
    budget: float | None = None
    w: int | None = None
    seed: int | None = None
    blinks: Literal["confidence", "given"] = "confidence"
    window: float = 30.0
    step: float = 0.5

    def pipeline(self, seed: int | None) -> PrivatePipeline:
        """The pipeline, with a cryptographic generator seeded by ``seed`` (None: OS entropy).

        Raises
        ------
        TypeError, ValueError, InputError
            A parameter the mechanism, the unit or the bounds profile refuses.
        """
        bounds = BoundsProfile.load(self.bounds_file) if self.bounds_file else default_profile()
        mech = make_mechanism(
            self.mechanism,
            epsilon=self.epsilon,
            bounds=bounds,
            chunk_length=self.chunk_length,
            transform=self.transform,
            k=self.k,
            sensitivity=self.sensitivity,
        )
        return PrivatePipeline(
            mech,
            unit=PrivacyUnit(self.unit, w=self.w, budget=self.budget),
            rng=secure_generator(seed),
            events=EventConfig(blink_source=self.blinks),
            window=WindowConfig(self.window, self.step),
        )
