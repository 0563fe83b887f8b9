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

so that the same gaze gives the same releases whichever way it arrives. A live shell's own
:class:`~streamdp.live_pacing.FeedPacing` (``pacing=``) says when the stages run (without: every batch).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from .config import SessionConfig
from .errors import InputError
from .gaze import BlinkEvents, GazeColumns, Recording
from .gaze_channel import check_source_rate
from .live_pacing import FeedPacing
from .pipeline import RecordingSource, as_recording
from .pipeline_input import PipelineInput
from .privacy.release import PrivateRelease
from .pupil_wire import GazeDecoder
from .session_output import SessionCounters, SessionOutput
from .sinks import ReleaseSink
from .stages.ahead import AheadHold, leap_past
from .stages.base import Stage
from .stages.hold import ReleaseHold
from .stages.reorder import ReorderBuffer
from .status import StatusEvent

__all__ = ["Session", "SessionCounters"]

log = logging.getLogger(__name__)


class Session(SessionOutput, Stage[GazeColumns, "list[PrivateRelease]"]):
    """A private session: gaze in, sealed releases out to every sink (the counters, the status
    and the sinks: :class:`~streamdp.session_output.SessionOutput`).

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
        Hold back live gaze to put it in order: ``config.chunk_reorder_window`` s for the stages (a
        lagging eye's), ``config.reorder_window`` s for the gaze ticks; recordings are ordered.
    pacing : FeedPacing, optional
        When a live session runs its stages (a live shell's choice, its own to this session:
        :class:`~streamdp.live_pacing.FeedPacing`); None: with every batch. It changes when rows
        are computed, never which, nor when they are released.

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
        pacing: FeedPacing | None = None,
    ) -> None:
        if not isinstance(config, SessionConfig):
            hint = " (SessionConfig.from_mapping turns a dict into one)" if isinstance(config, Mapping) else ""
            raise TypeError(f"config must be a SessionConfig, got {type(config).__name__}{hint}")
        super().__init__(config.check(), config.private_pipeline(seed, camera), sinks)
        self.source = source
        self.camera = config.camera_for(camera)
        self.decoder = GazeDecoder()
        self._input = PipelineInput(config, source, self.decoder)
        self._order = ReorderBuffer(config.chunk_reorder_window) if reorder else None
        #: live: gaze far ahead or back (beyond what a lagging eye sends) waits for the next datum
        self._ahead = AheadHold(window=config.chunk_reorder_window)
        #: live: whether the source's clock was set, read when gaze leaps past a chunk deadline (:func:`leap_past`)
        self.clock_was_set: Callable[[], bool] | None = None
        #: live: computed at a chunk's last step, published after the chunk reorder window and the slack
        self._hold = ReleaseHold(config.chunk_hold)
        #: the real-time gaze channel (config.gaze_channel), live held to each tick's public time
        self.gaze = config.gaze_channel_for(seed, camera, live=reorder)
        self.pacing = pacing
        self._read = 0  # decoded gaze the gaze channel read ahead, still in the decoder (:meth:`_read_ahead`)
        self.reset()

    @classmethod
    def for_recording(
        cls, config: SessionConfig, recording: Recording, *, sinks: Sequence[ReleaseSink] = (), seed: int | None = None
    ) -> Session:
        """A session for an ordered recording: its camera, its name, no reorder window."""
        return cls(config, sinks=sinks, seed=seed, camera=recording.camera, source=recording.name, reorder=False)

    # ------------------------------------------------------------- stage contract

    def update(self, item: GazeColumns, /, blinks: BlinkEvents | None = None) -> list[PrivateRelease]:
        """Decoded gaze (any order within the chunk reorder window) and blinks finished since the
        last call; returns the releases this made (already handed to the sinks)."""
        if self._order is None:
            self._input.add_blinks(blinks)
            return self._feed(item)
        out: list[PrivateRelease] = []
        item, implausible = self._input.within_bounds(item)  # positions beyond the bounds: invalid, as replayed
        self.counters.invalid += implausible
        clock, item = self._ahead.clock, self._ahead.update(item, self._order.floor)
        self.counters.invalid += self._ahead.take_dropped()
        k = self._ahead.went_back  # two data agree: the clock went back (the source restarted)
        if k is None and self.clock_was_set is not None:  # or it leapt past a deadline: was the clock set?
            k = leap_past(item.t, clock, self.next_chunk_deadline, self.config.chunk_leap)
            k = k if k is None or self.clock_was_set() else None
        if k is not None:
            log.warning("%s: the clock went back or leapt ahead (the source restarted, or T): new segment", self.source)
            out += self._live(item.take(slice(0, k))) if k else []  # gaze before it: the old segment
            out += self._restart(StatusEvent.CAPTURE_RESTARTED, lambda: 0)  # the hold is in the new one already
            item = item.take(slice(k, None))
        self._input.add_blinks(blinks)  # after the restart: blinks on the new clock belong to the new segment
        return out + self._live(item)

    def _live(self, item: GazeColumns) -> list[PrivateRelease]:
        """Live gaze the clock accepted: the gaze channel, the reorder buffer, the stages."""
        assert self._order is not None
        out: list[PrivateRelease] = []
        read, self._read = self._read, 0  # the gaze the channel read ahead comes first (:meth:`_read_ahead`)
        if self.gaze is not None and not self.exhausted:  # ticks follow every burst; the stages keep their pacing
            self.gaze.receive(item.take(slice(read, None)) if read else item)
        late = self._order.late
        self._order.hold(item)
        self.counters.late += self._order.late - late
        if self.gaze is not None:  # the ticks now due go out before the feature stages run
            self._publish_gaze(self.gaze.due(self._order.clock))
        if self.pacing is None or self.pacing.due(self._order.clock - self._order.window):
            out += self._feed(self._order.release()) + self._advance_pipeline()
        return out + self._publish_due(self._order.clock)

    def advance_to(self, t_source: float) -> list[PrivateRelease]:
        """The source's clock reached ``t_source`` (Pupil time), with or without gaze: every
        chunk whose deadline (last step + ``config.chunk_hold``) has passed is released now with
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
        t, dec, due = float(t_source), self.decoder, self.next_chunk_deadline
        # what the decoder holds comes first, but at a tick's wake gaze the channel read waits for the stages' pacing
        read = self.gaze is not None and 0 < dec.pending == self._read and (due is None or due > t)
        out = [] if read else self._decoded()
        self._ahead.advance(t)
        if self._order is None:
            self._publish_gaze(self.gaze.advance(t) if self.gaze is not None else [])
            return out + self._after(self._guarded(lambda: self.pipeline.advance(t)))
        if self.gaze is not None:
            self.gaze.advance(t)  # ticks without gaze, held to their time
            if (due := self.next_chunk_deadline) is None or due > t:  # a tick's: the stages keep their pacing
                return out + self._publish_due(t)
        out += self._feed(self._order.advance(t))
        return out + self._advance_pipeline() + self._publish_due(t)

    @property
    def next_deadline(self) -> float | None:
        """Source time at which the next chunk or gaze tick is due (None before the first gaze): a
        live shell calls :meth:`advance_to` once its clock passes it, whatever the gaze did."""
        due, tick = self.next_chunk_deadline, self.gaze.next_due if self.gaze is not None else None
        return due if tick is None else tick if due is None else min(due, tick)

    @property
    def next_chunk_deadline(self) -> float | None:
        """The next chunk's public release time (held, or still to compute; None before any)."""
        due = self._hold.next_due
        if due is not None or (due := self.pipeline.features.next_deadline) is None or self._order is None:
            return due
        return due + self._hold.offset

    def _advance_pipeline(self) -> list[PrivateRelease]:
        assert self._order is not None
        clock = self._order.released_until
        out = self._after(self._guarded(lambda: self.pipeline.advance(clock)))
        if self.pacing is not None:
            self.pacing.ran(clock, self.config.step, self.pipeline.features.next_deadline)
        return out

    def flush(self) -> list[PrivateRelease]:
        """End of stream: everything held is fed, the windows finish; a partial chunk is dropped."""
        return self._end(self._ahead.flush)  # a datum far off that nothing confirmed: dropped

    def _end(self, ahead_end: Callable[[], int]) -> list[PrivateRelease]:
        """:meth:`flush`, with what becomes of a datum the clock holds (``ahead_end``: how many dropped)."""
        self.decoder.flush_blinks()  # the blink held for a later offset is final
        out = self._decoded() + (self._feed(self._order.flush()) if self._order is not None else [])  # published
        self.counters.invalid += ahead_end()
        if self.gaze is not None:  # then a new stream: its ticks held to their own time, not the old clock's
            self._publish_gaze(self.gaze.flush())
            self.gaze.reset()
        tail = self._after(self._guarded(self.pipeline.flush))
        if self.pacing is not None:
            self.pacing.restart()  # the pipeline starts afresh: the next gaze goes straight in
        done = self._hold.take_all()
        self._hold.reset()  # the same for the chunks
        self._publish(done)
        return out + tail + done

    def reset(self) -> None:
        """Forget the stream (windows, partial chunk, held gaze, half-paired blinks, the diameter
        unit); the budget spent and the counters are kept."""
        self.counters.dropped_before = self.dropped_steps
        self.pipeline.reset()
        self.decoder.reset()
        self._read = 0
        if self._order is not None:
            self._order.reset()
        self._ahead.reset()
        self._input.reset()
        if self.pacing is not None:
            self.pacing.restart()
        self._hold.reset()  # computed, not yet due: forgotten with the stream (already charged)
        if self.gaze is not None:
            self.gaze.reset()

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
            if due is not None and due <= dec.pending_newest <= self._ahead.limit:
                # a chunk computed during its hold goes out as soon as the gaze reaches its
                # public time, before the rest of the batch is read: the datum that makes it
                # due costs a decode and a send, nothing else (not a datum far ahead: unconfirmed)
                early += self._publish_due(dec.pending_newest)
                due = hold.next_due
        self.counters.received += n
        self._count_bad()
        if self._may_wait():
            return early + self._publish_due(dec.pending_newest)
        return early + self._decoded()

    def _may_wait(self) -> bool:
        """Whether decoded gaze may stay in the decoder's columns: the pacing says the stages
        would not run on it yet, the clock did not go back and no blink came. Per burst the
        relay then only decodes, and the gaze channel reads the burst (:meth:`_read_ahead`)."""
        dec, order, pacing = self.decoder, self._order, self.pacing
        if pacing is None or order is None or dec.pending_blinks:
            return False
        if dec.pending_oldest < order.floor or dec.pending_newest > self._ahead.limit:
            return False  # a jump back or ahead (to confirm): now
        ordered = max(order.clock, dec.pending_newest) - order.window
        return pacing.may_wait(dec.pending, ordered) and (self.gaze is None or self._read_ahead())

    def _read_ahead(self) -> bool:
        """The gaze channel reads the gaze the stages leave waiting, if the clock is sure to take it as it is (no
        datum held or far back, no leap past a chunk's deadline): what :meth:`update` would give it, per burst."""
        dec, ahead, due = self.decoder, self._ahead, self.next_chunk_deadline
        leap = self.clock_was_set is not None and due is not None and dec.pending_newest > due + self.config.chunk_leap
        if leap or not ahead.settled or dec.pending_oldest < max(ahead.newest, dec.pending_newest) - ahead.behind:
            return False
        if self.gaze is not None and dec.pending > self._read and not self.exhausted:
            self.gaze.receive(dec.peek(self._read))  # its positions held to the bounds there, counted when taken
        self._read = dec.pending
        return True

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
        if self._input.given:
            for i, datum in enumerate(blinks):
                self.decoder.add_blink(datum, f"events['blinks'][{i}]")
        self.counters.received += len(gaze)
        return self._decoded()

    def run(self, recording: RecordingSource) -> list[PrivateRelease]:
        """A whole recording (or a gaze batch, or the recording at a path), then the end of the stream.

        Raises
        ------
        TypeError
            ``recording`` is not a Recording, a GazeBatch or a path.
        InputError
            ``blinks="given"`` and the recording has no blink events; a path holds no recording;
            the gaze channel is on and the recording samples slower than its rate.
        """
        rec = as_recording(recording)
        if self.gaze is not None:
            check_source_rate(rec.gaze, self.gaze.rate, rec.name)
        cols, blinks = self._input.recording(rec)
        self.counters.received += len(cols)
        return self.update(cols, blinks) + self.flush()

    def restart(self, event: StatusEvent = StatusEvent.CAPTURE_RESTARTED) -> list[PrivateRelease]:
        """The source restarted or was lost: finish what the held data allow, then start a new segment with the
        next gaze. Nothing is computed across the gap; the budget is kept. A datum held far from the old clock
        waits on: the next datum near it confirms it as the new segment's first."""
        return self._restart(event, self._ahead.restart)

    def _restart(self, event: StatusEvent, ahead_end: Callable[[], int]) -> list[PrivateRelease]:
        if event is StatusEvent.RECONNECTING:
            self.counters.reconnects += 1
        else:
            self.counters.restarts += 1
        out = self._end(ahead_end)
        self.decoder.reset()
        if self._order is not None:
            self._order.reset()
        return out

    # ------------------------------------------------------------- internals

    def _decoded(self) -> list[PrivateRelease]:
        self._count_bad()
        if not self.decoder.pending and not self.decoder.pending_blinks:
            return []  # a deadline's wake between bursts: nothing decoded since
        cols, blinks = self.decoder.take()
        return self.update(cols, blinks)

    def _feed(self, cols: GazeColumns) -> list[PrivateRelease]:
        if self.exhausted:
            return []  # the budget is spent: nothing more is computed, let alone released
        try:
            taken = self._input.take(cols)
        except InputError as exc:
            if self._order is None:
                raise  # a recording: refuse, never guess
            self.counters.invalid += len(cols)
            log.warning("%s: skipped a batch of %d samples: %s", self.source, len(cols), exc)
            return []
        if taken is None:
            return []
        batch, blinks = taken
        if self.gaze is not None and self._order is None:  # a recording (live: receive() in update)
            self._publish_gaze(self.gaze.update(batch))
        return self._after(self._guarded(lambda: self.pipeline.update(batch, blinks)))

    def _publish_due(self, clock: float) -> list[PrivateRelease]:
        """The source's clock reached ``clock``: the held releases now due go to the sinks."""
        if self.gaze is not None:
            self._publish_gaze(self.gaze.due(clock))
        self._publish(out := self._hold.due(clock))
        return out

    def _after(self, releases: list[PrivateRelease]) -> list[PrivateRelease]:
        """Publish what was computed, or (live) hold it until its public deadline; returns what was published."""
        if self._order is not None and releases:
            self._hold.add(releases)  # computed at the last step, published at the deadline
            releases = []
        self._publish(releases)
        return releases
