"""The session core: the one object between a gaze source and the sinks.

A :class:`Session` owns decode → reorder → blink pairing → diameter unit → feature pipeline →
chunker → privatizer → sinks, with its counters, :meth:`~Session.restart` and
:meth:`~Session.status`. The relay, the Capture plugin, the Neon relay, ``replay``, ``demo``,
``evaluate`` and ``features`` are thin I/O shells around it: they move bytes, dicts or files in and
call one of

- :meth:`Session.receive_frames` — Pupil backbone messages (the relay);
- :meth:`Session.receive_datums` — Capture's ``events`` lists (the plugin);
- :meth:`Session.update` — decoded columns from any other source (Neon);
- :meth:`Session.run` — a whole recording (replay, evaluate, the offline demo).

so that the same gaze gives the same releases whichever way it arrives.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .config import SessionConfig
from .errors import BudgetExhausted, InputError
from .gaze import BlinkEvents, DiameterUnit, GazeBatch, GazeColumns, Recording, choose_diameter_unit
from .pipeline import FeaturePipeline, RecordingSource, as_recording
from .privacy.release import PrivateRelease
from .pupil_wire import GazeDecoder
from .sinks import ReleaseSink
from .stages.base import Stage
from .stages.features import FeatureRows
from .stages.hold import ReleaseHold
from .stages.reorder import ReorderBuffer
from .status import SessionStatus, StatusEvent

log = logging.getLogger(__name__)


@dataclass
class SessionCounters:
    """What happened to the input and the output; local to the device (raw functions of the
    gaze). The budget's state is the accountant's, read by :meth:`Session.status`."""

    received: int = 0
    malformed: int = 0
    invalid: int = 0
    late: int = 0
    #: messages a live shell discarded undecoded because it fell behind (a flood)
    shed: int = 0
    released: int = 0
    #: steps dropped in streams already reset (the chunker counts the current one)
    dropped_before: int = 0
    reconnects: int = 0
    restarts: int = 0


def _concat_blinks(parts: list[BlinkEvents]) -> BlinkEvents | None:
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return BlinkEvents.from_arrays(np.concatenate([p.start for p in parts]), np.concatenate([p.end for p in parts]))


class Session(Stage[GazeColumns, "list[PrivateRelease]"]):
    """A private session: gaze in, sealed releases out to every sink.

    Parameters
    ----------
    config : SessionConfig
        Everything that decides the output.
    sinks : sequence of ReleaseSink
        Where releases and status go (ZeroMQ, Capture events, files, memory).
    seed : int, optional
        Noise seed (default: the configuration's; None there: OS entropy).
    camera : str, optional
        The source's scene camera, used when the configuration says ``camera="auto"``.
    source : str
        Named in error messages and logs.
    reorder : bool
        Hold back ``config.reorder_window`` s of live gaze to put it in order (live sources);
        recordings are already ordered.

    Raises
    ------
    TypeError
        ``config`` is not a :class:`SessionConfig`, ``sinks`` not a sequence of
        :class:`~streamdp.sinks.ReleaseSink`, ``seed`` not an int; or a parameter the mechanism
        refuses.
    ValueError
        A parameter the mechanism, the unit or the bounds refuse, named with its value.

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> from streamdp.sinks import CollectingSink
    >>> sink = CollectingSink()
    >>> session = Session(SessionConfig(chunk_length=32, seed=0), sinks=[sink])
    >>> releases = session.run(generate(duration=60.0, seed=1).recording)
    >>> len(releases), len(sink.releases), releases[0].values.shape
    (1, 1, (32, 52))
    """

    def __init__(
        self,
        config: SessionConfig,
        *,
        sinks: Sequence[ReleaseSink] = (),
        seed: int | None = None,
        camera: str | None = None,
        source: str = "gaze",
        reorder: bool = True,
    ) -> None:
        if not isinstance(config, SessionConfig):
            hint = " (SessionConfig.from_mapping turns a dict into one)" if isinstance(config, Mapping) else ""
            raise TypeError(f"config must be a SessionConfig, got {type(config).__name__}{hint}")
        if isinstance(sinks, ReleaseSink):
            raise TypeError(f"sinks must be a sequence of sinks, got one sink: pass sinks=[{type(sinks).__name__}(…)]")
        self.config = config.check()
        self.source = source
        self.camera = config.camera_for(camera)
        self.pipeline = config.private_pipeline(seed, camera)
        for sink in sinks:
            if not isinstance(sink, ReleaseSink):
                raise TypeError(f"sinks must implement ReleaseSink (publish, publish_status, close), got {sink!r}")
        self.sinks = list(sinks)
        self.counters = SessionCounters()
        self.decoder = GazeDecoder()
        self._said_exhausted = False
        self._last_clipped = 0.0
        self._order = ReorderBuffer(config.reorder_window) if reorder else None
        #: live: computed at a chunk's last step, published after the reorder window and the slack
        self._hold = ReleaseHold(config.reorder_window + config.deadline_slack)
        self._given = config.blinks == "given"
        #: called with each release before the sinks get it (latency measurements)
        self.on_release: Callable[[PrivateRelease], None] | None = None
        self.reset()

    @classmethod
    def for_recording(
        cls, config: SessionConfig, recording: Recording, *, sinks: Sequence[ReleaseSink] = (), seed: int | None = None
    ) -> Session:
        """A session for an ordered recording: its camera, its name, no reorder window."""
        return cls(config, sinks=sinks, seed=seed, camera=recording.camera, source=recording.name, reorder=False)

    # ------------------------------------------------------------- stage contract

    def update(self, item: GazeColumns, /, blinks: BlinkEvents | None = None) -> list[PrivateRelease]:
        """Decoded gaze (any order within the reorder window) and blinks finished since the last
        call; returns the releases this made (already handed to the sinks)."""
        out: list[PrivateRelease] = []
        if self._order is not None and self._order.clock_went_back(item):
            log.warning("%s: the clock went back (the source restarted): new segment", self.source)
            out += self.restart(StatusEvent.CAPTURE_RESTARTED)
        # after the restart: blinks on the new clock belong to the new segment
        if blinks is not None and self._given:
            self._blinks.append(blinks)
        if self._order is None:
            return self._feed(item)
        late = self._order.late
        self._order.hold(item)
        self.counters.late += self._order.late - late
        if not self._before_next_feed(self._order.clock):
            out += self._feed(self._order.release()) + self._advance_pipeline()
        return out + self._publish_due(self._order.clock)

    def advance_to(self, t_source: float) -> list[PrivateRelease]:
        """The source's clock reached ``t_source`` (Pupil time), with or without gaze: every
        chunk whose deadline (last step + reorder window + slack) has passed is released now with
        what is known, whatever the gaze did. Live shells call it from a wall-clock timer mapped
        to the source's clock; a recording needs no call (its samples move the clock). Returns
        the releases it made (already handed to the sinks).

        Raises
        ------
        TypeError
            ``t_source`` is not a number.
        """
        if isinstance(t_source, bool) or not isinstance(t_source, (int, float, np.integer, np.floating)):
            raise TypeError(f"t_source must be a number, got {t_source!r}")
        t = float(t_source)
        out = self._decoded()  # what the decoder holds comes first
        if self._order is None:
            return out + self._after(self._guarded(lambda: self.pipeline.advance(t)))
        return out + self._feed(self._order.advance(t)) + self._advance_pipeline() + self._publish_due(t)

    @property
    def newest_gaze(self) -> float | None:
        """Source time of the newest gaze received live (None before any, or for a recording)."""
        if self._order is None:
            return None
        newest = max(self._order.clock, self.decoder.pending_newest)  # decoded, maybe not yet fed
        return newest if math.isfinite(newest) else None

    @property
    def next_deadline(self) -> float | None:
        """Source time (Pupil time) at which the next chunk is due: its last step + the reorder
        window + the slack; None before the first gaze. A live shell calls :meth:`advance_to`
        once its clock passes it, so the release happens at this public time whatever the gaze
        did."""
        held = self._hold.next_due
        if held is not None:
            return held
        due = self.pipeline.features.next_deadline
        if due is None or self._order is None:
            return due
        return due + self._hold.offset

    def _advance_pipeline(self) -> list[PrivateRelease]:
        assert self._order is not None
        clock = self._order.released_until
        out = self._after(self._guarded(lambda: self.pipeline.advance(clock)))
        # the next time the stages run: the next multiple of FEED_STEPS grid steps after the
        # clock, or the next chunk's last step if sooner
        every = self.config.step * self.FEED_STEPS
        self._feed_at = (math.floor(clock / every) + 1) * every if math.isfinite(clock) else -math.inf
        due = self.pipeline.features.next_deadline
        if due is not None:
            self._feed_at = min(self._feed_at, due)
        return out

    def flush(self) -> list[PrivateRelease]:
        """End of stream: everything held is fed, the windows finish; a partial chunk is dropped."""
        self.decoder.flush_blinks()  # the blink held for a later offset is final
        out = self._decoded() + self._drain()  # each already handed to the sinks by _feed
        tail = self._after(self._guarded(self.pipeline.flush))
        self._feed_at = -math.inf  # the pipeline starts afresh: the next gaze goes straight in
        done = self._hold.take_all()
        self._publish(done)
        return out + tail + done

    def reset(self) -> None:
        """Forget the stream (windows, partial chunk, held gaze, half-paired blinks, the diameter
        unit); the budget spent and the counters are kept."""
        self.counters.dropped_before = self.dropped_steps
        self.pipeline.reset()
        self.decoder.reset()
        if self._order is not None:
            self._order.reset()
        self._blinks: list[BlinkEvents] = []
        self._feed_at = -math.inf  # the ordered gaze's time at which the stages next run
        self._hold.reset()  # computed, not yet due: forgotten with the stream (already charged)
        self._unit: DiameterUnit | None = None if self.config.diameter_unit == "auto" else self.config.diameter_unit  # type: ignore[assignment]

    # ------------------------------------------------------------- shells' entry points

    def receive_frames(self, messages: Iterable[Sequence[bytes]]) -> list[PrivateRelease]:
        """Backbone messages ``[topic, msgpack payload, …]`` of gaze and blinks (the relay)."""
        n, dec, hold = 0, self.decoder, self._hold
        add = dec.add_frames
        due = hold.next_due
        early: list[PrivateRelease] = []
        for frames in messages:
            add(frames)
            n += 1
            if due is not None and dec.pending_newest >= due:
                # a chunk computed during its hold goes out as soon as the gaze reaches its
                # public time, before the rest of the batch is read: the datum that makes it
                # due costs a decode and a send, nothing else
                early += self._publish_due(dec.pending_newest)
                due = hold.next_due
        self.counters.received += n
        self._count_bad()
        if self._can_wait():
            return early + self._publish_due(dec.pending_newest)
        return early + self._decoded()

    #: decoded gaze held at most before it goes to the reorder buffer (bounds memory)
    MAX_PENDING = 4096
    #: live, the stages run once per this many steps (and at each chunk's last step): their
    #: output is split-invariant, so this changes when rows are computed, never which, and a
    #: chunk is still computed as soon as the gaze passes its last step. Their cost is mostly
    #: per call: at 200 Hz, every 4 steps costs ~40 % of every step.
    FEED_STEPS = 4

    def _can_wait(self) -> bool:
        """Whether decoded gaze may stay in the decoder's columns: the stages could emit nothing
        from it yet (it does not reach the next step or deadline), the clock did not go back,
        and no blink came. Per burst the relay then only decodes."""
        dec, order = self.decoder, self._order
        if order is None or dec.pending_blinks or dec.pending >= self.MAX_PENDING:
            return False
        if dec.pending_oldest < order.released_until - order.restart_after:
            return False  # a clock that went back: a new segment, now
        return self._before_next_feed(max(order.clock, dec.pending_newest))

    def _before_next_feed(self, newest: float) -> bool:
        """Whether gaze up to ``newest`` leaves the ordered gaze short of the stages' next run
        (every :attr:`FEED_STEPS` steps, and each chunk's last step): they run a few times a
        chunk, not once per burst (their output is split-invariant: this changes when, not
        what)."""
        assert self._order is not None
        return newest - self._order.window < self._feed_at

    def receive(
        self, gaze: GazeColumns, blinks: BlinkEvents | None = None, *, invalid: int = 0
    ) -> list[PrivateRelease]:
        """Gaze a shell decoded itself (Neon), with the number of datums it could not decode."""
        self.counters.received += len(gaze) + invalid
        self.counters.invalid += invalid
        return self.update(gaze, blinks)

    def receive_datums(self, gaze: Sequence[object] = (), blinks: Sequence[object] = ()) -> list[PrivateRelease]:
        """Capture's ``events["gaze"]`` and ``events["blinks"]`` lists (the plugin)."""
        for i, datum in enumerate(gaze):
            self.decoder.add_gaze(datum, f"events['gaze'][{i}]")
        if self._given:
            for i, datum in enumerate(blinks):
                self.decoder.add_blink(datum, f"events['blinks'][{i}]")
        self.counters.received += len(gaze)
        return self._decoded()

    def run(self, recording: RecordingSource) -> list[PrivateRelease]:
        """A whole recording (or a gaze batch, or the recording at a path), then the end of the
        stream.

        Raises
        ------
        TypeError
            ``recording`` is not a Recording, a GazeBatch or a path.
        InputError
            ``blinks="given"`` and the recording has no blink events; a path holds no recording.
        """
        rec = as_recording(recording)
        self._check_blinks(rec)
        self.counters.received += len(rec.gaze)
        out = self.update(GazeColumns.from_batch(rec.gaze), rec.blinks if self._given else None)
        return out + self.flush()

    def restart(self, event: StatusEvent = StatusEvent.CAPTURE_RESTARTED) -> list[PrivateRelease]:
        """The source restarted or was lost: finish what the held data allow, then start a new
        segment with the next gaze. Nothing is computed across the gap; the budget is kept."""
        if event is StatusEvent.RECONNECTING:
            self.counters.reconnects += 1
        else:
            self.counters.restarts += 1
        out = self.flush()
        self.decoder.reset()
        if self._order is not None:
            self._order.reset()
        return out

    # ------------------------------------------------------------- status

    @property
    def dropped_steps(self) -> int:
        """Feature steps never released because they did not fill a chunk (gaps, restarts, ends)."""
        return self.counters.dropped_before + self.pipeline.chunker.dropped_steps

    @property
    def exhausted(self) -> bool:
        return self.pipeline.privatizer.exhausted

    def status(self, event: StatusEvent = StatusEvent.RUNNING, subscribers: int = 0) -> SessionStatus:
        c = self.counters
        return SessionStatus(
            received=c.received,
            malformed=c.malformed,
            invalid=c.invalid,
            late=c.late,
            shed=c.shed,
            released=c.released,
            dropped_steps=self.dropped_steps,
            reconnects=c.reconnects,
            restarts=c.restarts,
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

    def continue_budget(self, previous: Session) -> None:
        """Carry the ε spent, the chunk count and the w-event history of ``previous`` (a session
        this one replaces after a settings change): a new configuration never resets a budget."""
        self.pipeline.privatizer.accountant.carry_from(previous.pipeline.privatizer.accountant)
        self.counters = previous.counters

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
        rec = as_recording(recording, "feature_rows()")
        self._check_blinks(rec)
        unit = self._unit
        try:
            batch = self._to_batch(GazeColumns.from_batch(rec.gaze))
        finally:
            self._unit = unit
        # the session's own schedule, so that the rows are those its releases were made of
        window = replace(self.config.window_config(), chunk_length=self.config.chunk_length)
        pipeline = FeaturePipeline(self.config.event_config(self.camera), window)
        rows = pipeline.update(batch, rec.blinks if self._given else None)
        return FeatureRows.concat([rows, pipeline.flush()])

    def keep_feature_rows(self) -> list[FeatureRows]:
        """Collect the unsanitized feature rows locally (research only; never a network sink)."""
        return self.pipeline.keep_rows()

    # ------------------------------------------------------------- internals

    def _check_blinks(self, recording: Recording) -> None:
        if self._given and recording.blinks is None:
            raise InputError(f"{recording.name}: blinks 'given', but the recording has no blink events")

    def _count_bad(self) -> None:
        dec, c = self.decoder, self.counters
        c.malformed, dec.malformed = c.malformed + dec.malformed, 0
        c.invalid, dec.invalid = c.invalid + dec.invalid, 0

    def _decoded(self) -> list[PrivateRelease]:
        self._count_bad()
        cols, blinks = self.decoder.take()
        if not len(cols) and blinks is None:
            return []
        return self.update(cols, blinks)

    def _drain(self) -> list[PrivateRelease]:
        if self._order is None:
            return []
        return self._feed(self._order.flush())

    def _feed(self, cols: GazeColumns) -> list[PrivateRelease]:
        if self.exhausted:
            return []  # the budget is spent: nothing more is computed, let alone released
        blinks = _concat_blinks(self._blinks) if self._given else None
        if not len(cols) and blinks is None:
            return []
        try:
            batch = self._to_batch(cols)
        except InputError as exc:
            if self._order is None:
                raise  # a recording: refuse, never guess
            self.counters.invalid += len(cols)
            log.warning("%s: skipped a batch of %d samples: %s", self.source, len(cols), exc)
            return []
        self._blinks = []
        return self._after(self._guarded(lambda: self.pipeline.update(batch, blinks)))

    def _to_batch(self, cols: GazeColumns) -> GazeBatch:
        if self._unit is None:
            self._unit = self.decoder.detector_unit or choose_diameter_unit(cols.diameter_mm, cols.diameter_px)
        return cols.to_batch(self._unit or "none", self.source)

    def _guarded(self, step: Callable[[], list[PrivateRelease]]) -> list[PrivateRelease]:
        try:
            return step()
        except BudgetExhausted:
            return []  # already said once, when it happened (see _after)

    def _publish_due(self, clock: float) -> list[PrivateRelease]:
        """The source's clock reached ``clock``: the held releases now due go to the sinks."""
        out = self._hold.due(clock)
        self._publish(out)
        return out

    def _after(self, releases: list[PrivateRelease]) -> list[PrivateRelease]:
        """Publish what was computed, or (live) hold it until its public deadline; returns what
        was published."""
        if self._order is not None and releases:
            self._hold.add(releases)  # computed at the last step, published at the deadline
            releases = []
        self._publish(releases)
        return releases

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

    def describe(self) -> dict[str, Any]:
        return {"source": self.source, "camera": self.camera, **self.config.describe()}
