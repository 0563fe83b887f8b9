"""How often a live shell runs its session's stages: :class:`FeedPacing`.

The relay, the Capture plugin and the Neon relay hand their session gaze in bursts of a few
milliseconds. The stages (events → windows → chunk → mechanism) cost mostly per call (many small
NumPy calls per step), so running them with every burst, or at every step, costs several times
what running them every few steps does: at 200 Hz, every 4 steps costs ~40 % of every step
(docs/performance.md). Each shell gives its :class:`~streamdp.session.Session` a pacing
(``pacing=``; the relays set one on the session they are given); a session without one — replay,
evaluate, the offline demo — runs its stages with every batch.

Pacing changes when rows are computed, never which: the stages' output is split-invariant (any
batching gives bit-identical output), so the releases and their public schedule are the same for
every path (``tests/test_integrations_agree.py``). A chunk is still computed as soon as the ordered
gaze passes its last step, and held to its public deadline by
:class:`~streamdp.stages.hold.ReleaseHold`.
"""

from __future__ import annotations

import math

__all__ = ["FeedPacing"]


class FeedPacing:
    """Runs a live session's stages once per ``steps`` grid steps and at each chunk's last step.

    The session asks it about the ordered gaze's time (the newest gaze less the reorder window:
    what the reorder buffer would hand on): :meth:`may_wait`, whether decoded gaze may stay in the
    decoder's columns (a burst then costs its decoding only), and :meth:`due`, whether the stages
    run now. It tells it :meth:`ran` after each run and :meth:`restart` when its pipeline starts
    afresh. It keeps one session's next run: one pacing per session.

    Parameters
    ----------
    steps : int
        The stages run when the ordered gaze reaches the next multiple of this many grid steps
        (≥ 1), or the next chunk's last step if sooner.
    max_pending : int
        Decoded samples that may wait at most, whatever their time (bounds memory; ≥ 1).

    Raises
    ------
    TypeError
        ``steps`` or ``max_pending`` is not an int.
    ValueError
        ``steps`` or ``max_pending`` is < 1, named with its value.

    Examples
    --------
    >>> pacing = FeedPacing(steps=4)
    >>> pacing.due(0.1)  # nothing ran yet: the first gaze goes straight in
    True
    >>> pacing.ran(8.2, step=0.5, next_deadline=12.0)  # the next multiple of 2 s comes first
    >>> pacing.due(9.9), pacing.due(10.0), pacing.may_wait(pending=5, ordered=9.9)
    (False, True, True)
    >>> pacing.ran(10.0, step=0.5, next_deadline=11.0)  # the chunk's last step comes first
    >>> pacing.due(10.9), pacing.due(11.0)
    (False, True)
    """

    #: the live shells' pacing: at 200 Hz, running the stages every 4 steps costs ~40 % of running
    #: them at every step
    STEPS = 4
    #: decoded samples that may wait at most before they go to the reorder buffer (bounds memory)
    MAX_PENDING = 4096

    def __init__(self, steps: int = STEPS, max_pending: int = MAX_PENDING) -> None:
        for name, value in (("steps", steps), ("max_pending", max_pending)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value!r}")
        self.steps = steps
        self.max_pending = max_pending
        self.restart()

    def __repr__(self) -> str:
        return f"FeedPacing(steps={self.steps}, max_pending={self.max_pending})"

    def restart(self) -> None:
        """The session's pipeline starts afresh (a new stream or segment): the next gaze goes
        straight in."""
        #: the ordered gaze's time at which the stages next run
        self.run_at = -math.inf

    def due(self, ordered: float) -> bool:
        """Whether the stages run now, the ordered gaze having reached ``ordered`` (source time)."""
        return ordered >= self.run_at

    def may_wait(self, pending: int, ordered: float) -> bool:
        """Whether ``pending`` decoded samples, which would bring the ordered gaze to ``ordered``,
        may stay in the decoder's columns: the stages could emit nothing from them yet."""
        return pending < self.max_pending and not self.due(ordered)

    def ran(self, ordered: float, step: float, next_deadline: float | None) -> None:
        """The stages ran with the ordered gaze up to ``ordered`` (-inf: none yet); ``step`` is the
        grid's step and ``next_deadline`` the next chunk's last step (None: not known yet)."""
        every = step * self.steps
        self.run_at = (math.floor(ordered / every) + 1) * every if math.isfinite(ordered) else -math.inf
        if next_deadline is not None:
            self.run_at = min(self.run_at, next_deadline)
