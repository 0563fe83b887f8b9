"""Put nearly-ordered datums in time order: Capture publishes monocular and binocular gaze
interleaved, a few milliseconds out of order."""

from __future__ import annotations

from ..pupil_datum import Row


class ReorderBuffer:
    """Holds the newest ``window`` seconds of rows; releases older rows sorted.

    A row older than what was already released is late and dropped (counted in ``late``):
    feeding it would send time backwards. A jump back by more than ``restart_after`` seconds is
    not lateness but a clock that restarted; :meth:`push` reports it so the caller can start a
    new segment (after :meth:`drain`).
    """

    def __init__(self, window: float = 0.05, restart_after: float = 1.0) -> None:
        self.window = window
        self.restart_after = restart_after
        self.late = 0
        self.reset()

    def reset(self) -> None:
        self._held: list[Row] = []
        self.released_until = -float("inf")

    def clock_went_back(self, rows: list[Row]) -> bool:
        """Whether ``rows`` start more than ``restart_after`` before what was released."""
        return bool(rows) and min(r[0] for r in rows) < self.released_until - self.restart_after

    def push(self, rows: list[Row]) -> list[Row]:
        """Add rows; return those now older than the newest by more than the window, in order."""
        if not rows:
            return []
        held = self._held + rows
        held.sort(key=lambda r: r[0])
        cut = held[-1][0] - self.window
        split = next((i for i, r in enumerate(held) if r[0] > cut), len(held))
        ready, self._held = held[:split], held[split:]
        return self._fresh(ready)

    def drain(self) -> list[Row]:
        """Everything held, in order (the stream ends or restarts)."""
        held, self._held = self._held, []
        return self._fresh(held)

    def _fresh(self, ready: list[Row]) -> list[Row]:
        fresh = [r for r in ready if r[0] >= self.released_until]
        self.late += len(ready) - len(fresh)
        if fresh:
            self.released_until = fresh[-1][0]
        return fresh
