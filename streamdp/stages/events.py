"""Streaming eye-movement event detection: fixations (I-DT), saccades and blinks.

:class:`EventDetector` is a :class:`~streamdp.stages.base.Stage`: ``update`` takes a gaze batch and
returns the events it finished, ``flush`` finishes what the end of the stream allows, ``reset``
forgets everything. Feeding a recording in one batch or in any split gives identical events. The
fixation and blink detectors inside it are private parts with array-level signatures, in
:mod:`streamdp.stages._fixations` and :mod:`streamdp.stages._blinks`; the thresholds they share,
:class:`EventConfig`, in :mod:`streamdp.stages.event_config`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError, TimestampOrderError
from ..events import EventBatch, Fixations, Saccades, concat_blinks
from ..gaze import BlinkEvents, GazeBatch
from ..kernels.geometry import norm_to_degrees
from ..kernels.wordbook import encode_saccades
from ..schedule_defaults import DEFAULT_MAX_EVENT_DURATION
from ._blinks import _BlinkDetector
from ._fixations import _FixationDetector
from .base import Stage
from .event_config import EventConfig

_F64 = NDArray[np.float64]


@dataclass
class _SegmentState:
    #: the last fixation: end t, x, y, gap id, and whether a block boundary cut it
    prev_fix: tuple[float, float, float, int, bool] | None = None
    given_blinks: list[BlinkEvents] = field(default_factory=list)


def block_of(t: float, block: float) -> int:
    """The public block holding time ``t``: ``j`` with ``j * block <= t < (j + 1) * block``."""
    j = math.floor(t / block)
    if t < j * block:
        j -= 1
    elif t >= (j + 1) * block:
        j += 1
    return j


class EventDetector(Stage[GazeBatch, EventBatch]):
    """Gaze batches in, :class:`~streamdp.events.EventBatch` out.

    Converts positions to the configured units, drops samples below ``min_confidence`` from
    fixation detection, pairs consecutive fixations into saccades and detects blinks (or passes
    the source's through).

    **Public blocks.** Time is cut into blocks ``[j·M, (j+1)·M)`` of the source clock, ``M =
    max_event_duration``. Fixation and blink detection start afresh in every block: an event
    never spans a block boundary (a fixation open at the boundary ends at its last sample; a
    blink whose onset and offset lie on either side is dropped; a source's blink crossing one is
    dropped too). The only link between blocks is the saccade from a block's last fixation to the
    next block's first (none when the boundary cut that fixation). So one raw sample changes only
    the events of its block and that one saccade: a public, bounded reach
    (:func:`streamdp.privacy.reach.raw_gaze_reach`), instead of one that grows with the
    fixation or shifts every later I-DT boundary. None: no blocks (research only).

    **Watermark.** ``final_before`` of every batch says that every event ending before it has
    been emitted. :meth:`advance` tells the detector that no sample up to a time remains to come:
    a block that ended is closed, an open fixation whose next usable sample is overdue is
    emitted, blink responses whose future half-window has passed are final.

    Raises
    ------
    TimestampOrderError
        A batch starts before the previous one ended. The batch is rejected whole and the
        detector's state is unchanged, so nothing already accepted is lost.
    InputError
        ``blinks`` were given while ``EventConfig.blink_source`` is "confidence".
    TypeError, ValueError
        ``max_event_duration`` is not None nor a finite number > 0.

    Examples
    --------
    >>> from streamdp.synthetic import generate
    >>> gaze = generate(duration=10.0, rate=120.0, seed=1).recording.gaze
    >>> detector = EventDetector()
    >>> first, rest = gaze.split([600])
    >>> events = EventBatch.concat([detector.update(first), detector.update(rest), detector.flush()])
    >>> len(events.fixations) > 10, len(detector.flush().fixations)
    (True, 0)
    >>> bool(np.all(events.fixations.duration <= DEFAULT_MAX_EVENT_DURATION))
    True
    """

    def __init__(
        self, config: EventConfig | None = None, *, max_event_duration: float | None = DEFAULT_MAX_EVENT_DURATION
    ) -> None:
        m = max_event_duration
        if m is not None:
            if isinstance(m, bool) or not isinstance(m, (int, float)):
                raise TypeError(f"max_event_duration must be a number or None, got {m!r}")
            if not (math.isfinite(m) and m > 0):
                raise ValueError(f"max_event_duration must be finite and > 0, got {m!r}")
        self.config = config or EventConfig()
        self.block = None if m is None else float(m)
        self._fixations = _FixationDetector(self.config)
        self._blinks = _BlinkDetector(self.config)
        self.reset()

    def reset(self) -> None:
        """Forget the stream: the next batch starts a new one."""
        self._fixations.reset()
        self._blinks.reset()
        self._seg = _SegmentState()
        self._last_t = -np.inf
        self._clock = -np.inf
        self._started = False
        self._block = 0  # the block being detected (when blocks are on)

    def update(self, batch: GazeBatch, blinks: BlinkEvents | None = None) -> EventBatch:
        """Take the next gaze batch (and the source's blinks, when they are given); return the
        events it finished. The first batch's ``restarts`` holds the stream's first sample."""
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
        if len(batch) and not self._started:
            self._started = True
            restarts.append(float(batch.t[0]))
            if self.block is not None:
                self._block = block_of(float(batch.t[0]), self.block)
        while len(batch):
            if self.block is not None:
                end = (self._block + 1) * self.block
                cut = int(np.searchsorted(batch.t, end, side="left"))
                if cut < len(batch):
                    if cut:
                        parts.append(self._update_segment(batch.slice(0, cut)))
                        self._last_t = float(batch.t[cut - 1])
                    parts.append(self._close_block(block_of(float(batch.t[cut]), self.block)))
                    batch = batch.slice(cut, len(batch))
                    continue
            parts.append(self._update_segment(batch))
            self._last_t = float(batch.t[-1])
            break
        if not parts:
            parts.append(self._update_segment(batch))
        self._clock = max(self._clock, self._last_t)
        fx, gid = self._fixations.close_idle(self._clock)
        parts.append(EventBatch(fx, self._saccades(fx, gid), BlinkEvents(np.empty(0), np.empty(0)), -np.inf))
        return self._batch(parts, restarts)

    def advance(self, clock: float) -> EventBatch:
        """No sample up to ``clock`` remains to come: finish what that allows (blocks that ended,
        overdue fixations, final blink responses) and return it."""
        parts: list[EventBatch] = []
        if self._started and clock > self._clock:
            self._clock = float(clock)
            if self.block is not None and clock >= (self._block + 1) * self.block:
                parts.append(self._close_block(block_of(float(clock), self.block)))
            fx, gid = self._fixations.close_idle(self._clock)
            blinks = self._blinks.advance(self._clock) if self.config.blink_source == "confidence" else None
            if blinks is None:
                blinks = self._given_blinks(self.final_before)
            parts.append(EventBatch(fx, self._saccades(fx, gid), blinks, -np.inf))
        return self._batch(parts, [])

    def _batch(self, parts: list[EventBatch], restarts: list[float]) -> EventBatch:
        out = EventBatch.concat(parts) if parts else EventBatch(Fixations(), Saccades(), concat_blinks([]), -np.inf)
        return EventBatch(
            out.fixations, out.saccades, out.blinks, self.final_before, np.asarray(restarts, dtype=np.float64)
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
        out = self._flush_segment(cut=False)
        last = self._last_t
        self.reset()
        return EventBatch(out.fixations, out.saccades, out.blinks, float(np.nextafter(last, np.inf)))

    def _close_block(self, next_block: int) -> EventBatch:
        out = self._flush_segment(cut=True)
        self._block = next_block
        return out

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

    def _flush_segment(self, cut: bool) -> EventBatch:
        """Close the block (``cut``) or the stream: open events end, the detectors start afresh."""
        fx, gid = self._fixations.flush()
        saccades = self._saccades(fx, gid)
        if cut and self._seg.prev_fix is not None and len(fx):
            self._seg.prev_fix = (*self._seg.prev_fix[:4], True)
        if self.config.blink_source == "confidence":
            blinks = self._blinks.flush()
        else:
            block_end = (self._block + 1) * self.block if cut and self.block is not None else None
            until = block_end if block_end is not None else float(np.nextafter(self._last_t, np.inf))
            blinks = self._given_blinks(until)
        return EventBatch(fx, saccades, blinks, -np.inf)

    def _given_blinks(self, before: float) -> BlinkEvents:
        held = concat_blinks(self._seg.given_blinks)
        done = held.end < before
        self._seg.given_blinks = [BlinkEvents(held.start[~done], held.end[~done])] if np.any(~done) else []
        start, end = held.start[done], held.end[done]
        if self.block is not None and start.shape[0]:
            # a source's blink counts only inside one public block, as the detector's own do
            inside = np.floor(start / self.block) == np.floor(end / self.block)
            start, end = start[inside], end[inside]
        return BlinkEvents(start, end)

    def _saccades(self, fx: Fixations, gid: NDArray[np.int64]) -> Saccades:
        """Saccades into each new fixation from the one before it, when nothing was lost between
        and no block boundary cut the one before."""
        if len(fx) == 0:
            return Saccades()
        prev = self._seg.prev_fix
        p_end = np.concatenate(([prev[0] if prev else np.nan], fx.end[:-1]))
        p_x = np.concatenate(([prev[1] if prev else np.nan], fx.x[:-1]))
        p_y = np.concatenate(([prev[2] if prev else np.nan], fx.y[:-1]))
        p_gid = np.concatenate(([prev[3] if prev and not prev[4] else -1], gid[:-1]))
        self._seg.prev_fix = (float(fx.end[-1]), float(fx.x[-1]), float(fx.y[-1]), int(gid[-1]), False)
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
