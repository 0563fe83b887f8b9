"""Put nearly-ordered gaze in time order: Capture publishes monocular and binocular gaze
interleaved and out of order (DESIGN.md §2)."""

from __future__ import annotations

import numpy as np

from ..gaze import GazeColumns
from .ahead import CLOCK_JUMP
from .base import Stage


class ReorderBuffer(Stage[GazeColumns, GazeColumns]):
    """Holds the newest ``window`` seconds of gaze; releases older gaze sorted by time.

    The clock is the newest sample seen, or a time given to :meth:`advance` (a live shell's
    timer): :meth:`release` hands over everything older than ``clock − window``. A sample older
    than what was already released is late and dropped (counted in ``late``): feeding it would
    send time backwards or reach a chunk already computed at its deadline. :meth:`update`
    releases at every call; a caller may :meth:`hold` several batches and release once. A jump
    back by more than ``restart_after`` seconds (below :attr:`floor`) is not lateness but a
    clock that restarted, once the next datum confirms it: a live session holds gaze that jumps
    back or ahead by as much until then (:class:`~streamdp.stages.ahead.AheadHold`), and starts
    a new segment (after :meth:`flush`) on a confirmed jump back.

    Examples
    --------
    >>> def cols(t):
    ...     n = len(t)
    ...     return GazeColumns.from_arrays(t=t, x=[0.5] * n, y=[0.5] * n, confidence=[1.0] * n,
    ...         diameter_mm=[3.0] * n, diameter_px=[30.0] * n, eye_id=[2] * n, valid=[True] * n)
    >>> buf = ReorderBuffer(window=0.05)
    >>> buf.update(cols([0.00, 0.02, 0.01])).t.tolist(), buf.update(cols([0.08])).t.tolist()
    ([], [0.0, 0.01, 0.02])
    >>> buf.update(cols([0.015])).t.tolist(), buf.late, buf.flush().t.tolist()
    ([], 1, [0.08])
    """

    def __init__(self, window: float = 0.05, restart_after: float = CLOCK_JUMP) -> None:
        self.window = float(window)
        self.restart_after = float(restart_after)
        self.reset()

    def reset(self) -> None:
        self._held = GazeColumns.empty()
        self._parts: list[GazeColumns] = []
        self.released_until = -np.inf
        self.clock = -np.inf
        self.late = 0

    @property
    def floor(self) -> float:
        """Gaze before this time is more than ``restart_after`` s before what was released: the
        clock went back (-inf before the first release)."""
        return self.released_until - self.restart_after

    def update(self, item: GazeColumns, /) -> GazeColumns:
        """Add gaze; return what is now older than the clock by more than the window."""
        self.hold(item)
        return self.release()

    def hold(self, item: GazeColumns) -> None:
        """Add gaze without releasing any. Late is what is older than the gaze already released:
        releasing less often changes when, never what, the stages get, and drops less."""
        if not len(item):
            return
        late = item.t < self.released_until
        if late.any():
            self.late += int(np.count_nonzero(late))
            item = item.take(np.flatnonzero(~late))
            if not len(item):
                return
        self.clock = max(self.clock, float(np.max(item.t)))
        self._parts.append(item)

    def release(self) -> GazeColumns:
        """What is held and older than ``clock − window``, sorted by time."""
        self.released_until = max(self.released_until, self.clock - self.window)
        if self._parts:
            self._held = GazeColumns.concat([self._held, *self._parts])
            self._parts = []
        if not len(self._held) or float(self._held.t.min()) > self.released_until:
            return GazeColumns.empty()  # nothing old enough: no sort (a live shell asks often)
        order = np.argsort(self._held.t, kind="stable")
        split = int(np.searchsorted(self._held.t[order], self.released_until, side="right"))
        out = self._held.take(order[:split])
        self._held = self._held.take(order[split:])
        return out

    def advance(self, clock: float) -> GazeColumns:
        """No gaze older than ``clock`` is still on its way but by the window: release what is
        older than ``clock − window``."""
        if clock > self.clock:
            self.clock = float(clock)
        return self.release()

    def flush(self) -> GazeColumns:
        """Everything held, in order; the next stream may start at any time (the stream ended,
        or the source restarted its clock)."""
        held = GazeColumns.concat([self._held, *self._parts])
        self._held, self._parts = GazeColumns.empty(), []
        if len(held):
            held = held.take(np.argsort(held.t, kind="stable"))
        self.released_until = -np.inf
        self.clock = -np.inf
        return held
