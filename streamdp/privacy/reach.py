"""How far raw gaze reaches into the released chunks, from the public schedule alone.

A raw sample at time ``s`` lies in the public block ``j`` (``j·M ≤ s < (j+1)·M``, ``M`` the
maximum event duration). Event detection restarts at every block boundary, so the sample can
change only

- the events of block ``j`` (their ends lie in ``[j·M, (j+1)·M)``), and
- the saccade from block ``j``'s last fixation to block ``j+1``'s first (it ends before
  ``(j+1)·M + I``, ``I`` the longest saccade interval), and
- when an event becomes known only after the deadline of the chunk its end falls in, where it
  is counted: just after that chunk's last step ``T_c``. Events of block ``j`` are known once
  the clock passes ``(j+1)·M``, the link saccade once it passes ``(j+2)·M``; so the moved end is
  below ``T_c + step`` for a chunk with ``T_c ≥ (j+1)·M`` and deadline ``T_c + slack < (j+2)·M``.

An event whose end moves from ``x`` to ``x'`` changes the steps ``t`` with ``x ≤ t < x + W`` or
``x' ≤ t < x' + W`` (rates, means, maxima and wordbooks alike: an n-gram is counted in a window
only while every saccade of it is). The steps one sample reaches are therefore the grid steps in
``[j·M, hi_j + W)``; this module counts them, and the chunks they fall in, over every block phase.
A stretch of ``L > 0`` seconds of gaze overlaps up to ``⌈L/M⌉ + 1`` consecutive blocks (one second
can straddle a boundary), and reaches the union of their steps.

The count holds bit for bit, not only to rounding: every bit of a step's features is a function
of the events in its window and of public times alone (counts and wordbooks are integers; means
and variances are merged from the window's own events over public groups,
:mod:`streamdp.stages._window_stats`, never from float running sums that would carry the
rounding of every earlier event along). ``tests/test_raw_gaze_reach.py`` compares the published
bytes and each chunk's feature rows of seeded releases with one sample, or one second, nudged,
deleted or inserted.

These are the only figures of the raw-gaze guarantee: the ledger's statement
(:class:`streamdp.privacy.guarantee.RawGazeReach`, made by the privatizer) comes from here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ..schedule_defaults import DEFAULT_DEADLINE_SLACK, DEFAULT_MAX_EVENT_DURATION, DEFAULT_MAX_SACCADE_INTERVAL

#: the public timing defaults are the schedule's (:mod:`streamdp.schedule_defaults`), importable here too
__all__ = [
    "DEFAULT_DEADLINE_SLACK",
    "DEFAULT_MAX_EVENT_DURATION",
    "DEFAULT_MAX_SACCADE_INTERVAL",
    "GazeReach",
    "raw_gaze_reach",
    "stretch_reach",
]

_EPS = 1e-9
_MAX_PERIOD = 4096


@dataclass(frozen=True)
class GazeReach:
    """What raw gaze can change in the released output (worst case over where it lies).

    Attributes
    ----------
    steps_per_sample, chunks_per_sample : int
        Steps and chunks one raw sample (its position, confidence, presence) can change.
    chunks_per_second : int
        Chunks one second of gaze can change.
    """

    steps_per_sample: int
    chunks_per_sample: int
    chunks_per_second: int


def _steps(
    j1: int, j2: int, *, window: float, step: float, n: int, m: float, link: float, slack: float
) -> tuple[int, int]:
    """First and last step gaze in blocks ``j1..j2`` can change."""
    k_lo = math.ceil(j1 * m / step - _EPS)
    hi = (j2 + 1) * m + link  # ends are below it
    k_hi = math.ceil((hi + window) / step - _EPS) - 1
    # chunks whose last step a late link saccade may be moved past
    c = max(0, math.floor((j2 + 1) * m / (n * step)) - 1)
    while True:
        k_last = (c + 1) * n - 1
        t_last = k_last * step
        if t_last + slack >= (j2 + 2) * m:
            break
        if t_last >= (j2 + 1) * m - _EPS:
            k_hi = max(k_hi, k_last + math.floor(window / step + _EPS))
        c += 1
    return k_lo, k_hi


def _period_blocks(m: float, chunk_seconds: float) -> int | None:
    """Blocks after which the phase of blocks against chunks (and so against the step grid)
    repeats; None when that is more than ``_MAX_PERIOD`` blocks (or not rational enough)."""
    a, b = Fraction(m).limit_denominator(10**6), Fraction(chunk_seconds).limit_denominator(10**6)
    if abs(float(a) - m) > 1e-9 * m or abs(float(b) - chunk_seconds) > 1e-9 * chunk_seconds:
        return None
    lcm = Fraction(math.lcm(a.numerator * b.denominator, b.numerator * a.denominator), a.denominator * b.denominator)
    blocks = lcm / a
    return int(blocks) if blocks <= _MAX_PERIOD else None


def _blocks_in(stretch: float, m: float) -> int:
    """The most public blocks a stretch of ``stretch`` seconds can overlap."""
    return 1 if stretch == 0 else math.ceil(stretch / m - _EPS) + 1


def _number(name: str, value: object, *, zero_ok: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (v == 0 and not zero_ok):
        raise ValueError(f"{name} must be finite and {'≥' if zero_ok else '>'} 0, got {value!r}")
    return v


def stretch_reach(
    *,
    stretch: float,
    window: float,
    step: float,
    chunk_length: int,
    max_event_duration: float,
    max_saccade_interval: float = DEFAULT_MAX_SACCADE_INTERVAL,
    deadline_slack: float = DEFAULT_DEADLINE_SLACK,
) -> tuple[int, int]:
    """Steps and chunks a stretch of ``stretch`` seconds of gaze (0: one sample) can change,
    worst case over where it lies against the public blocks and chunks.

    Exact (a maximum over every phase) when the block length and the chunk duration have a
    common period of at most 4096 blocks, as every configuration with decimal times does;
    otherwise a bound from the length of the reached interval alone.

    Raises
    ------
    TypeError
        A parameter that is not a number (``chunk_length``: not an int), named.
    ValueError
        ``window``, ``step`` or ``max_event_duration`` not finite and > 0, ``stretch``,
        ``max_saccade_interval`` or ``deadline_slack`` not finite and ≥ 0, or ``chunk_length``
        < 1, named with its value.

    Examples
    --------
    >>> stretch_reach(stretch=60.0, window=30.0, step=0.5, chunk_length=64, max_event_duration=8.0)
    (220, 4)
    """
    w = _number("window", window, zero_ok=False)
    s = _number("step", step, zero_ok=False)
    m = _number("max_event_duration", max_event_duration, zero_ok=False)
    length = _number("stretch", stretch, zero_ok=True)
    link = _number("max_saccade_interval", max_saccade_interval, zero_ok=True)
    slack = _number("deadline_slack", deadline_slack, zero_ok=True)
    n = chunk_length
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"chunk_length must be an int, got {n!r}")
    if n < 1:
        raise ValueError(f"chunk_length must be ≥ 1, got {n!r}")
    blocks = _blocks_in(length, m)
    period = _period_blocks(m, n * s)
    if period is None:
        # any phase: the reached steps lie in [j1·M, (j2 + 2)·M + W], late link saccades included
        span = (blocks + 1) * m + link + w
        steps = math.floor(span / s + _EPS) + 1
        return steps, math.ceil((steps - 1) / n) + 1
    steps = chunks = 0
    for j in range(period, 2 * period):  # away from 0, where the search for late chunks starts
        k_lo, k_hi = _steps(j, j + blocks - 1, window=w, step=s, n=n, m=m, link=link, slack=slack)
        steps = max(steps, k_hi - k_lo + 1)
        chunks = max(chunks, k_hi // n - k_lo // n + 1)
    return steps, chunks


def raw_gaze_reach(
    *,
    window: float,
    step: float,
    chunk_length: int,
    max_event_duration: float,
    max_saccade_interval: float = DEFAULT_MAX_SACCADE_INTERVAL,
    deadline_slack: float = DEFAULT_DEADLINE_SLACK,
) -> GazeReach:
    """How many steps and chunks one raw sample and one second of gaze can change
    (:func:`stretch_reach` at 0 and 1 s).

    Raises
    ------
    TypeError, ValueError
        As :func:`stretch_reach`.

    Examples
    --------
    >>> r = raw_gaze_reach(window=30.0, step=0.5, chunk_length=64, max_event_duration=8.0)
    >>> r.chunks_per_sample, r.chunks_per_second, r.steps_per_sample
    (2, 3, 92)
    >>> raw_gaze_reach(window=30.0, step=0.5, chunk_length=32, max_event_duration=8.0).chunks_per_sample
    3
    """
    def reach(stretch: float) -> tuple[int, int]:
        return stretch_reach(
            stretch=stretch,
            window=window,
            step=step,
            chunk_length=chunk_length,
            max_event_duration=max_event_duration,
            max_saccade_interval=max_saccade_interval,
            deadline_slack=deadline_slack,
        )

    steps, chunks = reach(0.0)
    _, chunks_second = reach(1.0)
    return GazeReach(steps, chunks, chunks_second)
