"""Put nearly-ordered gaze in time order: Capture publishes monocular and binocular gaze
interleaved and out of order (DESIGN.md §2)."""

from __future__ import annotations

import numpy as np

from ..gaze import GazeColumns
from .base import Stage


class ReorderBuffer(Stage[GazeColumns, GazeColumns]):
    """Holds the newest ``window`` seconds of gaze; releases older gaze sorted by time.

    A sample older than what was already released is late and dropped (counted in ``late``):
    feeding it would send time backwards. A jump back by more than ``restart_after`` seconds is
    not lateness but a clock that restarted: :meth:`clock_went_back` tells the caller, which
    starts a new segment (after :meth:`flush`).

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

    def __init__(self, window: float = 0.05, restart_after: float = 1.0) -> None:
        self.window = float(window)
        self.restart_after = float(restart_after)
        self.reset()

    def reset(self) -> None:
        self._held = GazeColumns.empty()
        self.released_until = -np.inf
        self.late = 0

    def clock_went_back(self, gaze: GazeColumns) -> bool:
        """Whether ``gaze`` starts more than ``restart_after`` s before what was released."""
        return bool(len(gaze)) and float(np.min(gaze.t)) < self.released_until - self.restart_after

    def update(self, item: GazeColumns, /) -> GazeColumns:
        """Add gaze; return what is now older than the newest sample by more than the window."""
        if not len(item):
            return GazeColumns.empty()
        held = GazeColumns.concat([self._held, item])
        order = np.argsort(held.t, kind="stable")
        t_sorted = held.t[order]
        split = int(np.searchsorted(t_sorted, t_sorted[-1] - self.window, side="right"))
        self._held = held.take(order[split:])
        return self._fresh(held.take(order[:split]))

    def flush(self) -> GazeColumns:
        """Everything held, in order; the next stream may start at any time (the stream ended,
        or the source restarted its clock)."""
        held, self._held = self._held, GazeColumns.empty()
        if len(held):
            held = held.take(np.argsort(held.t, kind="stable"))
        out = self._fresh(held)
        self.released_until = -np.inf
        return out

    def _fresh(self, ready: GazeColumns) -> GazeColumns:
        if not len(ready):
            return ready
        keep = ready.t >= self.released_until
        if not keep.all():
            self.late += int(np.count_nonzero(~keep))
            ready = ready.take(np.flatnonzero(keep))
        if len(ready):
            self.released_until = float(ready.t[-1])
        return ready
