"""The output half of a session: its counters, its status and its sinks.

:class:`SessionOutput` hands each sealed release to ``on_release`` and every sink and counts it;
it builds the session's status from :class:`SessionCounters` and the privacy budget and publishes
it through the same sinks; it says once, when it happens, that the budget is spent. The counters
and the clip rate are raw functions of the gaze: they stay on the device (the status socket,
never a release). :class:`~streamdp.session.Session` adds the input half: gaze in, the stages,
the public schedule.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from .config import SessionConfig
from .errors import BudgetExhausted
from .pipeline import PrivatePipeline, RecordingSource, as_recording
from .pipeline_input import PipelineInput
from .privacy.release import PrivateRelease
from .pupil_wire import GazeDecoder
from .sinks import ReleaseSink
from .stages.features import FeatureRows
from .stages.reorder import ReorderBuffer
from .status import SessionStatus, StatusEvent

__all__ = ["SessionCounters", "SessionOutput"]

log = logging.getLogger(__name__)


@dataclass
class SessionCounters:
    """What happened to the input and the output; local to the device (raw functions of the
    gaze). The budget's state is the accountant's, read by :meth:`SessionOutput.status`."""

    received: int = 0
    malformed: int = 0
    #: datums with a missing, mistyped or non-finite field or a lone stray timestamp (dropped), and
    #: live positions beyond the public plausibility bounds (:mod:`streamdp.plausibility`: kept without a
    #: position, as a replay of the recording keeps them)
    invalid: int = 0
    late: int = 0
    #: messages a live shell discarded undecoded because it fell behind (a flood)
    shed: int = 0
    released: int = 0
    #: steps dropped in streams already reset (the chunker counts the current one)
    dropped_before: int = 0
    reconnects: int = 0
    restarts: int = 0
    #: apps' requests and notifications streamdp's Pupil Remote refused (its policy)
    refused: int = 0


class SessionOutput:
    """Releases and status of ``pipeline`` to ``sinks``, counted (the base of a
    :class:`~streamdp.session.Session`).

    Parameters
    ----------
    config : SessionConfig
        The configuration the pipeline was built from (its mechanism names the status).
    pipeline : PrivatePipeline
        Whose chunker counts dropped steps and whose privatizer holds the budget.
    sinks : sequence of ReleaseSink
        Where releases and status go (ZeroMQ, Capture events, files, memory).

    Raises
    ------
    TypeError
        ``sinks`` is a single sink, or holds something that is not a
        :class:`~streamdp.sinks.ReleaseSink`.
    """

    # the input half's, set by the Session (feature_rows converts as it does)
    source: str
    camera: str
    _input: PipelineInput
    decoder: GazeDecoder
    _order: ReorderBuffer | None

    def __init__(self, config: SessionConfig, pipeline: PrivatePipeline, sinks: Sequence[ReleaseSink]) -> None:
        if isinstance(sinks, ReleaseSink):
            raise TypeError(f"sinks must be a sequence of sinks, got one sink: pass sinks=[{type(sinks).__name__}(…)]")
        for sink in sinks:
            if not isinstance(sink, ReleaseSink):
                raise TypeError(f"sinks must implement ReleaseSink (publish, publish_status, close), got {sink!r}")
        self.config = config
        self.pipeline = pipeline
        self.sinks = list(sinks)
        self.counters = SessionCounters()
        #: called with each release before the sinks get it (latency measurements)
        self.on_release: Callable[[PrivateRelease], None] | None = None
        self._said_exhausted = False
        self._last_clipped = 0.0

    @property
    def dropped_steps(self) -> int:
        """Feature steps never released because they did not fill a chunk (gaps, restarts, ends)."""
        return self.counters.dropped_before + self.pipeline.chunker.dropped_steps

    @property
    def exhausted(self) -> bool:
        return self.pipeline.privatizer.exhausted

    def status(self, event: StatusEvent = StatusEvent.RUNNING, subscribers: int = 0) -> SessionStatus:
        counts = {name: value for name, value in asdict(self.counters).items() if name != "dropped_before"}
        return SessionStatus(
            **counts,
            dropped_steps=self.dropped_steps,
            epsilon_spent=float(self.pipeline.privatizer.accountant.spent),
            budget_exhausted=self.exhausted,
            clipped_fraction=self._last_clipped,
            mechanism=self.config.mechanism,
            subscribers=subscribers,
            event=event,
        )

    def publish_status(self, event: StatusEvent = StatusEvent.RUNNING, subscribers: int = 0) -> SessionStatus:
        status = self.status(event, subscribers)
        for sink in self.sinks:
            sink.publish_status(status)
        return status

    def continue_budget(self, previous: SessionOutput) -> None:
        """Carry the ε spent, the chunk count and the w-event history of ``previous`` (a session
        this one replaces after a settings change): a new configuration never resets a budget."""
        self.pipeline.privatizer.accountant.carry_from(previous.pipeline.privatizer.accountant)
        self.counters = previous.counters

    def keep_feature_rows(self) -> list[FeatureRows]:
        """Collect the unsanitized feature rows locally (research only; never a network sink)."""
        return self.pipeline.keep_rows()

    def feature_rows(self, recording: RecordingSource) -> FeatureRows:
        """The unsanitized feature rows of a whole recording, converted exactly as :meth:`run`
        converts it (camera, units, diameter unit) but through a pipeline of their own: the
        session's stream and budget are untouched. Local research output (``streamdp
        features``), never released.

        Raises
        ------
        TypeError
            ``recording`` is not a Recording, a GazeBatch or a path.
        InputError
            ``blinks="given"`` and the recording has no blink events.
        """
        cols, blinks = self._input.recording(as_recording(recording, "feature_rows()"))
        batch = cols.to_batch(self._input.unit_for(cols) or "none", self.source)  # the stream's unit stays unchosen
        # the session's own schedule, so that the rows are those its releases were made of
        pipeline = self.config.feature_pipeline(self.camera)
        return FeatureRows.concat([pipeline.update(batch, blinks), pipeline.flush()])

    def _guarded(self, step: Callable[[], list[PrivateRelease]]) -> list[PrivateRelease]:
        try:
            return step()
        except BudgetExhausted:
            return []  # already said once, when it happened (see _publish)

    @property
    def newest_gaze(self) -> float | None:
        """Source time of the newest gaze received live (None before any, or for a recording)."""
        if self._order is None:
            return None
        newest = max(self._order.clock, self.decoder.pending_newest)  # decoded, maybe not yet fed
        return newest if math.isfinite(newest) else None

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "camera": self.camera, **self.config.describe()}

    def _count_bad(self) -> None:
        dec, c = self.decoder, self.counters
        c.malformed, dec.malformed = c.malformed + dec.malformed, 0
        c.invalid, dec.invalid = c.invalid + dec.invalid, 0

    def _publish_gaze(self, ticks: list[PrivateRelease]) -> None:
        """The gaze channel's ticks, to the sinks that take them (``accepts_gaze``): a tick is not
        a chunk, and a sink written for chunks (a CSV of features) never meets one."""
        if not ticks:
            return
        for sink in self.sinks:
            if getattr(sink, "accepts_gaze", False):
                for tick in ticks:
                    sink.publish(tick)

    def _publish(self, releases: list[PrivateRelease]) -> None:
        for rel in releases:
            if self.on_release is not None:
                self.on_release(rel)
            for sink in self.sinks:
                sink.publish(rel)
            self.counters.released += 1
            self._last_clipped = rel.clipped_fraction  # local: the status socket, never a release
        if self.exhausted and not self._said_exhausted:
            self._said_exhausted = True
            log.warning("%s", self.pipeline.privatizer.exhausted_message)
            self.publish_status(StatusEvent.BUDGET_EXHAUSTED)
