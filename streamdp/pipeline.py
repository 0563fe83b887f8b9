"""The pipelines as stages: gaze → feature rows, and gaze → sanitized releases.

Build them from a :class:`~streamdp.config.SessionConfig` (``config.feature_pipeline()``,
``config.private_pipeline(seed)``), the one place that turns options into a pipeline.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import TypeAlias

import numpy as np

from .gaze import BlinkEvents, GazeBatch, Recording
from .privacy.accountant import PrivacyUnit
from .privacy.mechanisms import Mechanism
from .privacy.randomness import RandomSource
from .privacy.release import PrivateRelease
from .schedule_defaults import DEFAULT_MAX_SACCADE_INTERVAL
from .stages.base import Stage
from .stages.chunker import Chunker
from .stages.events import EventConfig, EventDetector
from .stages.features import FeatureRows, WindowConfig, WindowFeatures
from .stages.privatizer import Privatizer, check_mechanism

#: what ``run()`` takes: a recording, a batch of gaze (no blink events), or a recording's path
RecordingSource: TypeAlias = Recording | GazeBatch | str | os.PathLike[str]


def as_recording(source: RecordingSource, what: str = "run()") -> Recording:
    """``source`` as a :class:`~streamdp.gaze.Recording`: a recording as is, a gaze batch with no
    blink events (named after its ``source``), a path read by
    :func:`streamdp.readers.read_recording`.

    Raises
    ------
    TypeError
        Anything else, named, with what is accepted.
    InputError
        A path that holds no recording streamdp reads.

    Examples
    --------
    >>> from streamdp.gaze import GazeBatch
    >>> as_recording(GazeBatch.from_arrays(t=[0.0], x=[0.5], y=[0.5], source="probe")).name
    'probe'
    >>> as_recording(42)
    Traceback (most recent call last):
    ...
    TypeError: run() takes a Recording, a GazeBatch or the path of a recording (str or Path), got int
    """
    if isinstance(source, Recording):
        return source
    if isinstance(source, GazeBatch):
        return Recording(gaze=source, blinks=None, name=source.source)
    if isinstance(source, (str, os.PathLike)):
        from .readers import read_recording  # I/O: only when a path is given

        return read_recording(os.fspath(source))
    raise TypeError(
        f"{what} takes a Recording, a GazeBatch or the path of a recording (str or Path), got {type(source).__name__}"
    )


def _check_batch_size(batch_size: object) -> int | None:
    if batch_size is None:
        return None
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise TypeError(f"batch_size must be an int or None, got {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be ≥ 1, got {batch_size!r}")
    return int(batch_size)


def _batches(
    recording: Recording, blinks: BlinkEvents | None, batch_size: int | None
) -> list[tuple[GazeBatch, BlinkEvents | None]]:
    """The recording's gaze in batches of ``batch_size`` (all at once for None), the blinks with
    the first."""
    gaze = recording.gaze
    if batch_size is None:
        return [(gaze, blinks)]
    return [
        (gaze.slice(start, start + batch_size), blinks if i == 0 else None)
        for i, start in enumerate(range(0, len(gaze), batch_size))
    ]


class FeaturePipeline(Stage[GazeBatch, FeatureRows]):
    """Streaming gaze → 52 features every step (stage contract: update / flush / reset).

    Steps lie on the public grid; gaps do not restart the windows. With ``window.chunk_length``
    set (the private pipeline), the pipeline keeps the public release schedule
    (:mod:`streamdp.stages.schedule`): when the data clock passes a chunk's deadline it computes
    that chunk's steps with what is known, whatever the gaze still holds open. Batches are cut at
    deadlines so that the result never depends on how the input was split.

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> rec = generate(duration=40.0, rate=120.0, seed=1).recording
    >>> rows = FeaturePipeline().run(rec)
    >>> rows.values.shape, float(rows.t[0])  # the synthetic clock starts at 1000 s
    ((20, 52), 1030.0)
    """

    def __init__(self, events: EventConfig | None = None, window: WindowConfig | None = None) -> None:
        if events is not None and not isinstance(events, EventConfig):
            raise TypeError(f"events must be an EventConfig, got {type(events).__name__}")
        if window is not None and not isinstance(window, WindowConfig):
            raise TypeError(f"window must be a WindowConfig, got {type(window).__name__}")
        self.window_config = window or WindowConfig()
        self.event_config = events or EventConfig()
        self.schedule = self.window_config.schedule()
        self.detector = EventDetector(self.event_config, max_event_duration=self.window_config.max_event_duration)
        self.features = WindowFeatures(self.window_config)
        self._chunk: int | None = None  # the next chunk slot to compute at its deadline
        self._clock = -np.inf
        self.reset()

    def update(self, item: GazeBatch, /, blinks: BlinkEvents | None = None) -> FeatureRows:
        batch = item
        out: list[FeatureRows] = []
        if len(batch) and self._chunk is None and self.schedule is not None:
            self._chunk = self.schedule.first_chunk(float(batch.t[0]))
        while self._chunk is not None and len(batch) and batch.t[-1] > self._deadline():
            cut = int(np.searchsorted(batch.t, self._deadline(), side="right"))
            out.append(self.features.update(self.detector.update(batch.slice(0, cut), blinks)))
            blinks = None
            out.append(self._compute_chunk())
            batch = batch.slice(cut, len(batch))
        out.append(self.features.update(self.detector.update(batch, blinks)))
        if len(batch):
            self._clock = max(self._clock, float(batch.t[-1]))
        return FeatureRows.concat(out)

    def advance(self, clock: float) -> FeatureRows:
        """No gaze up to ``clock`` (data time) remains to come: compute every chunk whose
        deadline is before it, with what is known, and what the watermark allows."""
        out: list[FeatureRows] = []
        while self._chunk is not None and clock > self._deadline():
            out.append(self._compute_chunk())
        out.append(self.features.update(self.detector.advance(clock)))
        self._clock = max(self._clock, clock)
        return FeatureRows.concat(out)

    def _deadline(self) -> float:
        assert self.schedule is not None and self._chunk is not None
        return self.schedule.deadline(self._chunk)

    @property
    def next_deadline(self) -> float | None:
        """Data time at which the next chunk is computed (public: the schedule's), or None
        before the first gaze and for local rows without chunks."""
        if self.schedule is None or self._chunk is None:
            return None
        return self._deadline()

    def _compute_chunk(self) -> FeatureRows:
        assert self.schedule is not None and self._chunk is not None
        rows = self.features.update(self.detector.advance(self._deadline()))
        last = self.schedule.step_time(self.schedule.last_step(self._chunk))
        self._chunk += 1
        return FeatureRows.concat([rows, self.features.emit_until(last)])

    def flush(self) -> FeatureRows:
        """End of stream at the data clock's time: every step up to it is computed."""
        rows = self.features.update(self.detector.flush())
        rows = FeatureRows.concat([rows, self.features.emit_until(self._clock), self.features.flush()])
        self.reset()
        return rows

    def reset(self) -> None:
        self.detector.reset()
        self.features.reset()
        self._chunk = None
        self._clock = -np.inf

    def restart(self) -> FeatureRows:
        """The source restarted (e.g. Pupil Capture did, and its clock with it): finish what the
        data allow, then start a new stream with the next batch."""
        return self.flush()

    def run(self, recording: RecordingSource, batch_size: int | None = None) -> FeatureRows:
        """Features of a whole recording, a gaze batch or the recording at a path (blinks from the
        recording when the config asks), fed in batches of ``batch_size`` samples (default: all).

        Raises
        ------
        TypeError
            ``recording`` is none of these; ``batch_size`` is not an int.
        ValueError
            ``batch_size`` < 1.
        """
        rec = as_recording(recording)
        blinks = rec.blinks if self.event_config.blink_source == "given" else None
        parts = [self.update(gaze, b) for gaze, b in _batches(rec, blinks, _check_batch_size(batch_size))]
        parts.append(self.flush())
        return FeatureRows.concat(parts)


class ChunkPrivatizer(Stage[FeatureRows, "list[PrivateRelease]"]):
    """Feature rows in, sanitized chunks out: chunks of n steps → mechanism + accountant.

    The second half of :class:`PrivatePipeline`, on its own for rows computed once and
    sanitized under many settings (``evaluate``).
    """

    def __init__(
        self,
        mechanism: Mechanism,
        unit: PrivacyUnit | None = None,
        rng: RandomSource | None = None,
        window: WindowConfig | None = None,
        *,
        max_saccade_interval: float = DEFAULT_MAX_SACCADE_INTERVAL,
        postprocess: bool = False,
    ) -> None:
        wc = window or WindowConfig()
        # the privatizer first: it refuses a wrong mechanism, unit or generator with a TypeError
        self.privatizer = Privatizer(
            mechanism,
            unit,
            rng,
            wc.window,
            wc.step,
            max_event_duration=wc.max_event_duration,
            deadline_slack=wc.deadline_slack,
            max_saccade_interval=max_saccade_interval,
            postprocess=postprocess,
        )
        self.chunker = Chunker(mechanism.chunk_length, wc.step)

    def update(self, item: FeatureRows, /) -> list[PrivateRelease]:
        return self.privatizer.update(self.chunker.update(item))

    def flush(self) -> list[PrivateRelease]:
        out = self.privatizer.update(self.chunker.flush())
        return out + self.privatizer.flush()

    def reset(self) -> None:
        """Forget the partial chunk; the budget spent is kept."""
        self.chunker.reset()
        self.privatizer.reset()


class PrivatePipeline(Stage[GazeBatch, "list[PrivateRelease]"]):
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
        rng: RandomSource | None = None,
        events: EventConfig | None = None,
        window: WindowConfig | None = None,
        *,
        postprocess: bool = False,
    ) -> None:
        wc = window or WindowConfig()
        if wc.chunk_length is None:
            # the privatizer refuses anything but a registered mechanism: ask it first
            check_mechanism(mechanism)
            wc = replace(wc, chunk_length=mechanism.chunk_length)
        elif wc.chunk_length != mechanism.chunk_length:
            raise ValueError(
                f"window.chunk_length ({wc.chunk_length}) differs from the mechanism's ({mechanism.chunk_length})"
            )
        self.features = FeaturePipeline(events, wc)
        self.sanitizer = ChunkPrivatizer(
            mechanism,
            unit,
            rng,
            self.features.window_config,
            max_saccade_interval=self.features.event_config.max_saccade_interval,
            postprocess=postprocess,
        )
        self.chunker = self.sanitizer.chunker
        self.privatizer = self.sanitizer.privatizer
        self._kept_rows: list[FeatureRows] | None = None

    def update(self, item: GazeBatch, /, blinks: BlinkEvents | None = None) -> list[PrivateRelease]:
        return self._release(self.features.update(item, blinks))

    def advance(self, clock: float) -> list[PrivateRelease]:
        """No gaze up to ``clock`` remains to come: release every chunk whose deadline passed."""
        return self._release(self.features.advance(clock))

    def flush(self) -> list[PrivateRelease]:
        return self._release(self.features.flush()) + self.sanitizer.flush()

    def reset(self) -> None:
        """Forget the stream (windows, partial chunk); the budget spent is kept."""
        self.features.reset()
        self.sanitizer.reset()

    def keep_rows(self) -> list[FeatureRows]:
        """From now on, keep every batch of unsanitized feature rows in the returned list: local
        research output (rows are raw functions of the gaze), never a sink's input."""
        self._kept_rows = []
        return self._kept_rows

    def _release(self, rows: FeatureRows) -> list[PrivateRelease]:
        if self._kept_rows is not None and len(rows):
            self._kept_rows.append(rows)
        return self.sanitizer.update(rows)

    def restart(self) -> list[PrivateRelease]:
        """The source restarted: finish what the data allow; the budget spent is kept."""
        return self.flush()

    def run(self, recording: RecordingSource, batch_size: int | None = None) -> list[PrivateRelease]:
        """Releases of a whole recording, a gaze batch or the recording at a path, fed in batches
        of ``batch_size`` samples (default: all).

        Raises
        ------
        TypeError
            ``recording`` is none of these; ``batch_size`` is not an int.
        ValueError
            ``batch_size`` < 1.
        """
        rec = as_recording(recording)
        blinks = rec.blinks if self.features.event_config.blink_source == "given" else None
        out: list[PrivateRelease] = []
        for gaze, b in _batches(rec, blinks, _check_batch_size(batch_size)):
            out += self.update(gaze, b)
        out += self.flush()
        return out
