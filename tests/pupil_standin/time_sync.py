"""Capture's Time Sync as it moves Pupil time (pupil_src/shared_modules/time_sync.py and
network_time_sync.py, v3), without the network: the follower's decisions, applied to ``g_pool``.

From ``Clock_Sync_Follower.run``: every ``interval`` (10 s) plus ``random()`` seconds it measures
the offset to the master; an offset within ``max(jitter, tolerance)`` (0.1 ms) is left alone; one
beyond ``min_jump`` (10 ms) is jumped (``jump_time``: refused while the Recorder runs); anything
between is slewed in steps of at most ``max_slew`` (0.5 ms), ``slew_interval`` (0.1 s) apart.
``Time_Sync.slew_time`` and ``jump_time`` both do ``g_pool.timebase.value += offset``: Pupil time
(monotonic - timebase) moves by ``-offset``. Nothing is notified."""

from __future__ import annotations

from typing import Any

MS = 1e-3
TOLERANCE = 0.1 * MS
MAX_SLEW = 0.5 * MS
MIN_JUMP = 10 * MS
SLEW_INTERVAL = 0.1
INTERVAL = 10.0


def slew_time(g_pool: Any, offset: float) -> None:
    g_pool.timebase.value += offset


def jump_time(g_pool: Any, offset: float) -> bool:
    if any(p.class_name == "Recorder" and getattr(p, "running", False) for p in g_pool.plugins):
        return False  # "Request to change timebase during recording ignored"
    slew_time(g_pool, offset)
    return True


def adjustments(offset: float, jitter: float = 0.0) -> list[tuple[float, float]]:
    """What the follower does about one measured ``offset``: ``(seconds after the measurement,
    amount added to the timebase)`` for each step; the amount of a jump is the whole offset."""
    if abs(offset) <= max(jitter, TOLERANCE):
        return []
    if abs(offset) > MIN_JUMP:
        return [(0.0, offset)]
    steps, at = [], 0.0
    while offset:
        step = max(-MAX_SLEW, min(MAX_SLEW, offset))
        steps.append((at, step))
        offset -= step
        at += SLEW_INTERVAL
        if abs(offset) < 1e-12:
            break
    return steps
