"""What a guarantee means for raw gaze, in numbers and in plain words.

A step's features come from the window of ``W`` seconds ending at the step, and an event (a
fixation, a saccade, a blink) counts in the window in which it ends. Events are cut at public
blocks of ``M = max_event_duration`` seconds, so one gaze sample reaches a public, bounded set of
steps, hence of chunks of ``n`` steps; :func:`streamdp.privacy.reach.stretch_reach` counts them
(worst case over where the gaze lies). :class:`RawGazeReach` holds the public parameters that
bound it; each chunk costs ``ε_chunk``, and what that adds up to depends on the unit of privacy.

Examples
--------
>>> reach = RawGazeReach(window=30.0, step=0.5, chunk_length=64)
>>> reach.chunks(), reach.chunks(1.0), reach.chunks(60.0)
(2, 3, 4)
>>> for part in raw_gaze_sentence(reach, epsilon_chunk=10.0, unit="session", budget=1000.0).split("; "):
...     print(part)
raw gaze: one sample changes at most 2 chunks (ε ≤ 20)
one second of gaze at most 3 chunks (ε ≤ 30)
a whole session ε ≤ 1000 (the budget)
"""

from __future__ import annotations

from dataclasses import dataclass

from .reach import DEFAULT_DEADLINE_SLACK, DEFAULT_MAX_EVENT_DURATION, DEFAULT_MAX_SACCADE_INTERVAL, stretch_reach


@dataclass(frozen=True)
class RawGazeReach:
    """The public parameters that bound how far raw gaze reaches: window and step (s), chunk
    length (steps), the public maximum event duration (s; events never span a multiple of it),
    the longest saccade interval (s) and the deadline slack (s).

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value
        (:func:`~streamdp.privacy.reach.stretch_reach`).

    Examples
    --------
    >>> RawGazeReach(window=30.0, step=0.5, chunk_length=32).chunks()
    3
    >>> RawGazeReach(window=30.0, step=0.5, chunk_length=32, max_event_duration=0.0)
    Traceback (most recent call last):
    ...
    ValueError: max_event_duration must be finite and > 0, got 0.0
    """

    window: float
    step: float
    chunk_length: int
    max_event_duration: float = DEFAULT_MAX_EVENT_DURATION
    max_saccade_interval: float = DEFAULT_MAX_SACCADE_INTERVAL
    deadline_slack: float = DEFAULT_DEADLINE_SLACK

    def __post_init__(self) -> None:
        self.chunks()  # validates every parameter

    def chunks(self, stretch: float = 0.0) -> int:
        """Chunks a stretch of ``stretch`` seconds of gaze (0: one sample) can change.

        Raises
        ------
        TypeError, ValueError
            ``stretch`` is not a number, or negative or not finite.
        """
        return stretch_reach(
            stretch=stretch,
            window=self.window,
            step=self.step,
            chunk_length=self.chunk_length,
            max_event_duration=self.max_event_duration,
            max_saccade_interval=self.max_saccade_interval,
            deadline_slack=self.deadline_slack,
        )[1]


def raw_gaze_sentence(
    reach: RawGazeReach,
    *,
    epsilon_chunk: float,
    unit: str,
    w: int | None = None,
    budget: float | None = None,
) -> str:
    """One sentence: what one sample, one second, and a whole session of raw gaze cost.

    Under the ``chunk`` unit the per-sample figures are the guarantee for raw gaze (not the
    unit's own, which is one chunk); under ``w-event`` a stretch within ``w`` chunks is covered
    by ``ε_w``; only the ``session`` unit bounds a whole session.

    Examples
    --------
    >>> reach = RawGazeReach(window=30.0, step=0.5, chunk_length=32)
    >>> print(raw_gaze_sentence(reach, epsilon_chunk=1.0, unit="chunk").split("; ")[-1])
    a whole session is not bounded (each chunk adds ε 1)
    >>> reach.chunks(), reach.chunks(1.0)
    (3, 4)
    """
    one, second = reach.chunks(), reach.chunks(1.0)
    sample_eps, second_eps = one * epsilon_chunk, second * epsilon_chunk
    head = (
        f"raw gaze: one sample changes at most {_chunks(one)} (ε ≤ {sample_eps:g}); "
        f"one second of gaze at most {_chunks(second)} (ε ≤ {second_eps:g}); "
    )
    if unit == "session" and budget is not None:
        return head + f"a whole session ε ≤ {budget:g} (the budget)"
    if unit == "w-event" and budget is not None:
        return head + f"any {w} consecutive chunks ε ≤ {budget:g}; a whole session is not bounded"
    return head + f"a whole session is not bounded (each chunk adds ε {epsilon_chunk:g})"


def _chunks(n: int) -> str:
    return f"{n} chunk" if n == 1 else f"{n} chunks"
