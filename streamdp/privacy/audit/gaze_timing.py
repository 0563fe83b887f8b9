"""When the gaze channel's ticks leave: the publish-time check, and the gaze channel's whole audit.

A tick's release time is public only if it is a function of public times alone. A live
:class:`~streamdp.session.Session` (``reorder=True``) is driven as a live shell drives it: the
gaze arrives in ~30 Hz bursts at the source time of each burst's last sample, and whenever the
session's :attr:`~streamdp.session.Session.next_deadline` comes first the shell's timer calls
:meth:`~streamdp.session.Session.advance_to` at it. A sink notes the source clock of the call that
handed it each tick. For a stream, its neighbour (``distance`` degrees away over ``w`` ticks) and
the stream with a gap and a blink, the tick times and their release clocks must be identical, and
each tick must leave at its public time: the tick + the reorder window + the slack.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from ...config import SessionConfig
from ...gaze import GazeBatch, GazeColumns
from ...gaze_channel import GazeChannel
from ...kernels.geometry import degrees_to_norm
from ...session import Session
from ...sinks import CollectingSink
from ..release import PrivateRelease
from .gaze import GazeAuditReport, audit_gaze_mechanism
from .gaze_wire import GazeChannelFactory

_F64 = NDArray[np.float64]
#: the source time at which the audited streams start (Pupil time: seconds since some boot)
START = 5000.0
#: gaze samples per tick, and bursts a second (Capture sends a world frame's gaze at once)
SAMPLES_PER_TICK = 2
BURSTS_PER_SECOND = 30.0


class ClockedSink(CollectingSink):
    """Takes the gaze ticks, noting for each the source clock of the call that published it."""

    def __init__(self) -> None:
        super().__init__(accepts_gaze=True)
        self.now = -math.inf
        self.at: list[float] = []

    def publish(self, release: PrivateRelease) -> None:
        super().publish(release)
        if release.ledger.get("channel") == "gaze":
            self.at.append(self.now)


@dataclass(frozen=True)
class PublishTimes:
    """The release schedule of each audited stream: ``t`` tick times, ``at`` the source clock each
    tick was handed to the sinks at."""

    streams: dict[str, tuple[_F64, _F64]]
    offset: float

    @property
    def identical(self) -> bool:
        """Every stream had the same ticks released at the same clocks."""
        (t0, a0), *rest = self.streams.values()
        return all(np.array_equal(t, t0) and np.array_equal(a, a0) for t, a in rest)

    @property
    def on_schedule(self) -> bool:
        """Every tick of every stream left at its public time, the tick + the hold."""
        return all(len(t) > 0 and np.array_equal(a, t + self.offset) for t, a in self.streams.values())

    @property
    def passed(self) -> bool:
        return self.identical and self.on_schedule

    def describe(self) -> str:
        counts = ", ".join(f"{name} {len(t)}" for name, (t, _) in self.streams.items())
        if self.passed:
            return f"identical, each tick at its time + {self.offset:g} s (ticks: {counts})"
        first, *_ = self.streams.values()
        diff = [
            name
            for name, (t, a) in self.streams.items()
            if not (np.array_equal(t, first[0]) and np.array_equal(a, first[1]))
        ]
        what = f"DIFFER for {', '.join(diff)}" if diff else "identical"
        late = "" if self.on_schedule else f"; not every tick at its time + {self.offset:g} s"
        return f"{what}{late} (ticks: {counts})"


def _streams(config: SessionConfig, distance: float, duration: float) -> dict[str, GazeBatch]:
    """A fixation with a little jitter; the same displaced by ``distance`` degrees over ``w``
    ticks (a neighbour); the same with a gap without samples and a blink (confidence 0)."""
    rate = config.gaze_rate
    fov = config.event_config(None).fov_deg
    step = 1.0 / (SAMPLES_PER_TICK * rate)
    # the first sample inside a tick, never on the grid: the grid starts with it all the same
    t = START + 0.3 * step + step * np.arange(round(duration / step))
    rel = t - t[0]
    deg = np.stack([2.0 + 0.05 * np.sin(7.0 * rel), -1.0 + 0.05 * np.cos(5.0 * rel)], axis=1)
    moved = deg.copy()
    window = (rel >= 0.25 * duration) & (rel < 0.25 * duration + config.gaze_w / rate)
    moved[window, 0] += distance
    gap = (rel >= 0.3 * duration) & (rel < 0.5 * duration)
    blink = (rel >= 0.6 * duration) & (rel < 0.7 * duration)

    def batch(d: _F64, keep: NDArray[np.bool_] | None = None, conf: _F64 | None = None) -> GazeBatch:
        nx, ny = degrees_to_norm(d[:, 0], d[:, 1], fov)
        k = np.ones(len(t), dtype=bool) if keep is None else keep
        c = np.ones(len(t)) if conf is None else conf
        return GazeBatch.from_arrays(
            t=t[k], x=nx[k], y=ny[k], confidence=c[k], diameter=np.full(int(k.sum()), 3.0), diameter_unit="mm"
        )

    return {
        "fixation": batch(deg),
        "neighbour": batch(moved),
        "gap and blink": batch(deg, keep=~gap, conf=np.where(blink, 0.0, 1.0)),
    }


def _drive(
    config: SessionConfig, gaze: GazeBatch, *, until: float, seed: int, patch: Callable[[Session], None] | None
) -> tuple[_F64, _F64]:
    """Deliver ``gaze`` in bursts and call ``advance_to`` at each deadline that comes first, until
    the source clock reaches ``until``; the released ticks' times and release clocks."""
    sink = ClockedSink()
    session = Session(config, sinks=[sink], seed=seed, source="audit", reorder=True)
    if patch is not None:
        patch(session)
    cols = GazeColumns.from_batch(gaze)
    burst = np.floor((gaze.t - START) * BURSTS_PER_SECOND)
    ends = np.flatnonzero(np.append(burst[1:] != burst[:-1], True)) + 1
    starts = np.concatenate(([0], ends[:-1]))
    i, last_due, stuck = 0, None, 0
    while True:
        due = session.next_deadline
        arrives = float(gaze.t[ends[i] - 1]) if i < len(ends) else math.inf
        if due is not None and due <= arrives and due <= until:
            stuck = stuck + 1 if due == last_due else 0
            if stuck > 3:
                break  # advance_to releases nothing at its own deadline: what was released is compared
            last_due = due
            sink.now = due
            session.advance_to(due)
        elif arrives <= until:
            sink.now = arrives
            session.update(cols.take(slice(int(starts[i]), int(ends[i]))))
            i += 1
        else:
            break
    return np.array([float(r.t[0]) for r in sink.ticks]), np.array(sink.at, dtype=np.float64)


def publish_times(
    config: SessionConfig,
    *,
    distance: float = 1.0,
    duration: float = 1.0,
    seed: int = 0,
    patch: Callable[[Session], None] | None = None,
) -> PublishTimes:
    """The release schedule of the gaze channel of ``config`` (its channel switched on) for a
    fixation, its neighbour and the stream with a gap and a blink, ``duration`` seconds of gaze
    each, followed until the last tick's public time has passed. ``patch`` may alter each session
    before it runs (a test's broken variant).

    Examples
    --------
    >>> result = publish_times(SessionConfig(gaze_rate=30.0), duration=0.5)
    >>> result.identical, result.on_schedule
    (True, True)
    """
    live = replace(config, gaze_channel=True)
    streams = _streams(live, distance, duration)
    offset = live.tick_offset
    until = START + duration + offset + 2.0 / live.gaze_rate
    out = {name: _drive(live, g, until=until, seed=seed, patch=patch) for name, g in streams.items()}
    return PublishTimes(out, offset)


def audit_distance(config: SessionConfig) -> float:
    """A displacement the gaze audit can test at the configured ε: the power of two at most
    ``1/ε_tick,max`` (so a single tick's claim lies in (0.5, 1]), within [2⁻¹⁰°, 1°]."""
    mech = replace(config, gaze_channel=True).gaze_mechanism_instance()
    assert mech is not None
    tick_max = float(mech.describe()["epsilon_tick_max_per_degree"])
    d = 2.0 ** math.floor(math.log2(1.0 / tick_max))
    return float(min(1.0, max(2.0**-10, d), min(mech.field)))


def audit_gaze_channel(
    config: SessionConfig,
    *,
    distance: float | None = None,
    trials: int = 2000,
    alpha: float = 0.01,
    seed: int = 0,
    channel: GazeChannelFactory = GazeChannel,
    patch: Callable[[Session], None] | None = None,
) -> GazeAuditReport:
    """The gaze channel of ``config`` audited end to end: its mechanism
    (:func:`~streamdp.privacy.audit.gaze.audit_gaze_mechanism` at the configured rate, field of
    view and confidence threshold; ``distance`` default :func:`audit_distance`) and its publish
    times (:func:`publish_times`).

    Raises
    ------
    ValueError
        A gaze parameter the mechanism refuses; as :func:`~streamdp.privacy.audit.gaze.audit_gaze_mechanism`.
    """
    live = replace(config, gaze_channel=True)
    mech = live.gaze_mechanism_instance()
    assert mech is not None
    d = audit_distance(live) if distance is None else distance
    report = audit_gaze_mechanism(
        mech,
        distance=d,
        trials=trials,
        alpha=alpha,
        seed=seed,
        rate=live.gaze_rate,
        min_confidence=live.min_confidence,
        channel=channel,
    )
    times = publish_times(live, distance=d, seed=seed, patch=patch)
    return replace(report, publish_times_ok=times.passed, publish_times=times.describe())


__all__ = ["ClockedSink", "PublishTimes", "audit_distance", "audit_gaze_channel", "publish_times"]
