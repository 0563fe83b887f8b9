"""The real-time gaze channel: ordered gaze → public ticks → sanitized positions, one release a tick.

Beside the 52 features every 16–32 s, interactive apps (dwell selection, scrolling, foveation) need
gaze positions now. :class:`GazeChannel` turns the session's ordered gaze into one position per
tick of a public grid (``k / rate`` of the source's clock: :class:`~streamdp.stages.gaze_ticks.GazeTicks`)
and each tick into a sealed release on ``streamdp.gaze.<mechanism>``
(:class:`~streamdp.stages.gaze_privatizer.GazePrivatizer`), noised by a metric-private mechanism
(:mod:`streamdp.privacy.gaze_mechanisms`). A tick without usable gaze is given the public centre
and noised like any other: the channel never has a gap that would tell a blink.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .errors import InputError
from .gaze import GazeBatch, GazeColumns
from .privacy.gaze_mechanisms import GazeMechanism
from .privacy.ledger_store import LedgerStore
from .privacy.randomness import RandomSource
from .privacy.release import PrivateRelease
from .schedule_defaults import DEFAULT_TICK_REORDER_WINDOW
from .stages.ahead import CLOCK_JUMP
from .stages.base import Stage
from .stages.gaze_privatizer import GazePrivatizer
from .stages.gaze_ticks import GazeTicks, Ticks, TickSamples
from .stages.hold import ReleaseHold

__all__ = ["GazeChannel", "check_source_rate", "tick_offset"]


def check_source_rate(gaze: GazeBatch, rate: float, source: str) -> float:
    """The rate at which ``gaze`` samples (1 / the median step between distinct timestamps), if
    it can feed a channel of ``rate`` ticks a second; a slower source would leave ticks without a
    sample of their own.

    Raises
    ------
    InputError
        The source samples slower than ``rate``, named with both rates.

    Examples
    --------
    >>> check_source_rate(GazeBatch.from_arrays(t=np.arange(0, 1, 1 / 120), x=[0.5] * 120, y=[0.5] * 120), 60.0, "r")
    120.0
    """
    steps = np.diff(np.unique(gaze.t))
    if not len(steps):
        return float("inf")
    measured = float(1.0 / np.median(steps))
    if measured < rate * 0.99:  # the source's own jitter is not a slower source
        raise InputError(
            f"{source}: gaze at {measured:.3g} Hz cannot feed a gaze channel of {rate:g} ticks a second "
            f"(give a gaze rate of at most {measured:.3g})"
        )
    return round(measured, 9)


def tick_offset(rate: float, hold: float) -> float:
    """Source seconds from a live tick's time to its public release time: a tick's interval ends
    half a tick after it, and it is released ``hold`` s after that end.

    Examples
    --------
    >>> round(tick_offset(200.0, 0.034), 9)  # 2.5 ms to the end of a 200 Hz tick's interval, then the hold
    0.0365
    """
    return 0.5 / float(rate) + float(hold)


class GazeChannel(Stage[GazeBatch, "list[PrivateRelease]"]):
    """Ticks and their privatizer, with the stage contract (``update``, ``advance``, ``flush``,
    ``reset``), returning the sealed releases to publish now.

    Parameters
    ----------
    mechanism : GazeMechanism
        A registered gaze mechanism.
    rate : float
        Ticks a second on the source's clock.
    fov_deg : (float, float)
        The scene camera's public field of view.
    min_confidence : float
        Samples below it are not gaze.
    rng : RandomSource
        The noise's source.
    hold : float or None
        Live: source seconds from the end of a tick's interval (half a tick after the tick) to its
        public release time (the session's ``tick_hold``): a tick is computed once the ordered
        gaze passes that and released then, whatever the gaze did. None: released as computed (a
        recording). Live, a step of the source's clock beyond
        :data:`~streamdp.stages.ahead.CLOCK_JUMP` is a jump: the grid starts anew at the new clock
        without covering the interval skipped, and after a restart no tick time repeats
        (:class:`~streamdp.stages.gaze_ticks.GazeTicks`).
    reorder : float
        Live: the seconds of gaze held back to put it in order (the session's reorder window).
        The channel orders its own copy of the gaze, so that its ticks follow every burst while
        the feature stages run every few steps (:class:`~streamdp.live_pacing.FeedPacing`).
    ledger : LedgerStore, optional
        The channel's durable ledger (:class:`~streamdp.stages.gaze_privatizer.GazePrivatizer`).
    smoothing : str
        ``"none"`` or ``"median<k>"``: the public causal median applied to the released positions
        (:class:`~streamdp.stages.gaze_privatizer.GazePrivatizer`).

    Examples
    --------
    >>> import numpy as np
    >>> from streamdp.privacy import secure_generator
    >>> from streamdp.privacy.gaze_mechanisms import GazeUniform
    >>> from streamdp.synthetic import generate
    >>> channel = GazeChannel(GazeUniform(epsilon=60.0, w=60), rate=60.0, fov_deg=(99.0, 53.0),
    ...                       min_confidence=0.6, rng=secure_generator(0))
    >>> releases = channel.update(generate(duration=1.0, seed=1).recording.gaze) + channel.flush()
    >>> len(releases), releases[0].topic, releases[0].names
    (61, 'streamdp.gaze.geo-uniform', ('x_deg', 'y_deg', 'x_norm', 'y_norm'))
    """

    def __init__(
        self,
        mechanism: GazeMechanism,
        *,
        rate: float,
        fov_deg: tuple[float, float],
        min_confidence: float,
        rng: RandomSource,
        hold: float | None = None,
        reorder: float = DEFAULT_TICK_REORDER_WINDOW,
        ledger: LedgerStore | None = None,
        smoothing: str = "none",
    ) -> None:
        live = hold is not None
        self.ticks = GazeTicks(
            rate=rate, fov_deg=fov_deg, min_confidence=min_confidence, jump=CLOCK_JUMP if live else None
        )
        self.privatizer = GazePrivatizer(
            mechanism, fov_deg=fov_deg, rate=rate, rng=rng, ledger=ledger, smoothing=smoothing
        )
        self.rate = float(rate)
        self.hold, self.reorder = hold, float(reorder)
        self._hold = None if hold is None else ReleaseHold(tick_offset(rate, hold))
        self._order = None if hold is None else _TickOrder(reorder)
        #: live: the earliest gaze received before the grid started, which starts it (None before any)
        self._first: float | None = None

    @property
    def next_due(self) -> float | None:
        """Live: the public release time of the next tick, held or still to compute (None before
        the first gaze: the grid starts with it)."""
        if self._hold is None:
            return None
        held = self._hold.next_due
        if held is not None:
            return held
        k = self.ticks.next_tick
        if k is None:
            if self._first is None:
                return None
            k = self.ticks.tick_at(self._first)
        return k / self.rate + self._hold.offset

    def due(self, clock: float) -> list[PrivateRelease]:
        """Live: the held ticks whose public time ``clock`` reached."""
        return [] if self._hold is None else self._hold.due(clock)

    def update(self, batch: GazeBatch) -> list[PrivateRelease]:
        """Ordered gaze: the ticks it closes, sanitized."""
        return self._release(self.ticks.update(batch))

    def receive(self, cols: GazeColumns) -> None:
        """Live: decoded gaze in any order within the reorder window; the ticks it closes are
        computed and held to their public time."""
        assert self._order is not None, "receive() is the live path: give hold="
        if not len(cols):
            return
        if self.ticks.next_tick is None:  # the earliest gaze yet, until the grid starts
            first = float(cols.t.min())
            self._first = first if self._first is None else min(self._first, first)
        # converted once, as it arrives: a tick's wake then only cuts, sums and seals
        self._order.hold(self.ticks.convert(cols, "gaze channel"))
        self._ordered(self._order.release())

    def advance(self, clock: float) -> list[PrivateRelease]:
        """The source's clock reached ``clock`` without more gaze: the ticks it closes (live: held)."""
        if self._order is None:
            return self._release(self.ticks.advance(clock))
        ordered = self._order.advance(clock)
        ticks = self.ticks.update(ordered) if ordered is not None else Ticks.empty()
        return self._release(Ticks.concat([ticks, self.ticks.advance(self._order.released_until)]))

    def flush(self) -> list[PrivateRelease]:
        """End of stream: the ticks up to the last sample's, and every tick held."""
        if self._order is not None:
            self._ordered(self._order.flush())
            self._first = None
        out = self._release(self.ticks.flush())
        return out if self._hold is None else self._hold.take_all()

    def _ordered(self, samples: TickSamples | None) -> None:
        if samples is not None:
            self._release(self.ticks.update(samples))

    def reset(self) -> None:
        """A new stream; the mechanism's spending over the last ``w`` ticks is kept, and live,
        where the ticks stopped (the new stream's never repeat them)."""
        self.ticks.restart()
        self.privatizer.reset()
        self._first = None
        if self._order is not None:
            self._order.reset()
        if self._hold is not None:
            self._hold.reset()  # computed, not yet due: forgotten with the stream

    def _release(self, ticks: Ticks) -> list[PrivateRelease]:
        """Sanitize ``ticks``: returned (a recording) or held to their public time (live)."""
        if not len(ticks):
            return []
        releases = self.privatizer.update(ticks)
        if self._hold is None:
            return releases
        self._hold.add(releases)
        return []


class _TickOrder:
    """The live channel's reorder buffer, over gaze converted as it arrived: the rule of
    :class:`~streamdp.stages.reorder.ReorderBuffer` (gaze older than what was released is late and
    dropped, counted in ``late``; what is older than the clock less ``window`` is released in time
    order, ties in arrival order), with what is held kept sorted as each burst arrives, so that a
    tick's wake only cuts off the part its clock passed."""

    def __init__(self, window: float) -> None:
        self.window = float(window)
        self.reset()

    def reset(self) -> None:
        self._held: TickSamples | None = None
        self.released_until = self.clock = -math.inf
        self.late = 0

    def hold(self, samples: TickSamples) -> None:
        late = samples.t < self.released_until
        if late.any():
            self.late += int(np.count_nonzero(late))
            samples = _take(samples, np.flatnonzero(~late))
            if not len(samples):
                return
        self.clock = max(self.clock, float(samples.t.max()))
        both = samples if self._held is None else _concat(self._held, samples)
        # a stable sort of what is held (sorted) and the burst after it: the order one sort of all would give
        self._held = _take(both, np.argsort(both.t, kind="stable"))

    def release(self) -> TickSamples | None:
        """What is held and older than ``clock − window`` (None: nothing)."""
        self.released_until = max(self.released_until, self.clock - self.window)
        held = self._held
        if held is None or held.t[0] > self.released_until:
            return None
        cut = int(np.searchsorted(held.t, self.released_until, side="right"))
        self._held = held.slice(cut, len(held)) if cut < len(held) else None
        return held.slice(0, cut)

    def advance(self, clock: float) -> TickSamples | None:
        if clock > self.clock:
            self.clock = float(clock)
        return self.release()

    def flush(self) -> TickSamples | None:
        """Everything held, in order; the next stream may start at any time."""
        held, self._held = self._held, None
        self.released_until = self.clock = -math.inf
        return held


def _take(s: TickSamples, index: NDArray[np.intp]) -> TickSamples:
    return TickSamples(s.t[index], s.k[index], s.use[index], s.dx[index], s.dy[index], s.source)


def _concat(a: TickSamples, b: TickSamples) -> TickSamples:
    join = np.concatenate
    return TickSamples(join((a.t, b.t)), join((a.k, b.k)), join((a.use, b.use)), join((a.dx, b.dx)),
                       join((a.dy, b.dy)), a.source)  # fmt: skip
