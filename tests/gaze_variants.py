"""Broken variants of the real-time gaze mechanisms and channel: each must be caught by a test or
by the audit.

The mechanisms keep their parent's description (the claim), and change only what they do; the
channels change only what their name says (a ledger entry, which ticks leave, when they leave).
"""

from __future__ import annotations

import numpy as np

from streamdp.gaze_channel import GazeChannel
from streamdp.privacy.gaze_base import metric_calibration
from streamdp.privacy.gaze_mechanisms import GAZE_MECHANISMS, GazeBudgetDistribution, GazeUniform
from streamdp.privacy.randomness import as_random_source
from streamdp.stages.gaze_ticks import Ticks


class UniformHalfNoise(GazeUniform):
    """Half the per-axis scale: twice the claimed ε per tick."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._set(noise_scale=self.noise_scale / 2)


class UniformWindowOnce(GazeUniform):
    """The window charged once: each tick's scale computed from ε_w instead of ε_w/w (w times the claim)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        scale, gamma = metric_calibration(self.epsilon)
        self._set(noise_scale=scale, lattice=gamma)


class UniformNoClip(GazeUniform):
    """Noise on the raw position: the field is not applied."""

    def _check_positions(self, positions):
        super()._check_positions(positions)  # the shape and finiteness checks only
        return np.asarray(positions, dtype=np.float64), 0.0


class UniformFloatPolar(GazeUniform):
    """The textbook planar Laplace in floating point (Andrés et al. 2013): radius Gamma(2, 1/ε) as a
    sum of two float exponentials, a float angle, added to the float position. At ε_w/w per degree
    of Euclidean distance it satisfies the L1 claim in distribution, but its outputs are arbitrary
    doubles whose set depends on the input's low bits (Mironov 2012)."""

    def release(self, positions, state, rng):
        src = as_random_source(rng)
        x, clipped_fraction = self._check_positions(positions)
        m = x.shape[0]
        u = src.random((m, 3))
        radius = -(np.log1p(-u[:, 0]) + np.log1p(-u[:, 1])) / self.epsilon_tick
        angle = 2.0 * np.pi * u[:, 2]
        values = x + np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
        state.ticks += m
        return self._output(values, np.full(m, self.epsilon_tick), clipped_fraction)


class BudgetHalfNoise(GazeBudgetDistribution):
    """Publications with half the per-axis scale their budget calls for."""

    def _publication(self, units):
        calibration = super()._publication(units)
        return None if calibration is None else (calibration[0] / 2, calibration[1])


class UniformMiscounted(GazeUniform):
    """Reports ε_w for every tick: any window of w > 1 ticks adds up to more than ε_w."""

    def release(self, positions, state, rng):
        out = super().release(positions, state, rng)
        return self._output(out.values, np.full(out.epsilon.shape, self.epsilon), out.clipped_fraction)


class UniformCentreDiscount(GazeUniform):
    """Reports half its ε for a tick at the public centre (as if a tick without gaze cost less):
    the ε keys then tell a gap from gaze, which the noised positions do not."""

    def release(self, positions, state, rng):
        out = super().release(positions, state, rng)
        centre = np.all(np.asarray(positions) == 0.0, axis=1)
        return self._output(out.values, np.where(centre, out.epsilon / 2, out.epsilon), out.clipped_fraction)


# ---------------------------------------------------------------- whole channels, end to end
#
# The channel's privatizer takes only registered mechanisms (a subclass is refused), so a broken
# mechanism reaches the published bytes through a channel built for its registered parent, whose
# mechanism and state are then swapped for the variant's: everything else (ticks, clipping of the
# input, sealing, the message) is the real channel's.


def variant_channel(mechanism, **kw):
    """A :class:`GazeChannel` (``GazeChannel``'s keywords) whose privatizer runs ``mechanism``, a
    broken variant of a registered gaze mechanism: a channel factory for the audit."""
    twin = GAZE_MECHANISMS[mechanism.name](epsilon=mechanism.epsilon, w=mechanism.w, field=mechanism.field)
    channel = GazeChannel(twin, **kw)
    channel.privatizer._mechanism = mechanism
    channel.privatizer._state = mechanism.new_state()
    return channel


class _TickByTick(GazeChannel):
    """Sanitizes one tick at a time, setting ledger entries of its own on the privatizer's ledger
    first (what a careless change to the privatizer's ledger would do)."""

    def entries(self, ticks: Ticks, i: int) -> dict:
        raise NotImplementedError

    def _release(self, ticks):
        out = []
        for i in range(len(ticks)):
            for ledger in (self.privatizer._public, self.privatizer._brief):
                ledger.update(self.entries(ticks, i))
            out += super()._release(Ticks(ticks.t[i : i + 1], ticks.deg[i : i + 1], ticks.has_gaze[i : i + 1]))
        return out


class HasGazeLedgerChannel(_TickByTick):
    """The ledger says whether the tick had gaze: a blink or a gap shows in the message."""

    def entries(self, ticks, i):
        return {"has_gaze": bool(ticks.has_gaze[i])}


class ClippedLedgerChannel(_TickByTick):
    """The ledger carries the tick's clipped fraction under a nested key, where the message's
    filter of local entries (top-level ``clipped_fraction`` only) does not look."""

    def entries(self, ticks, i):
        fx, fy = self.privatizer.mechanism.field
        x, y = ticks.deg[i]
        return {"status": {"clipped_fraction": float(abs(x) > fx or abs(y) > fy)}}


class GazeOnlyChannel(GazeChannel):
    """Releases a tick only when it had gaze: a blink or a gap leaves a hole in the ticks."""

    def _release(self, ticks):
        keep = ticks.has_gaze
        return super()._release(Ticks(ticks.t[keep], ticks.deg[keep], keep[keep]))


class LateWhenMovedChannel(GazeChannel):
    """Holds a tick whose raw gaze moved more than half a degree (L1) from the tick before for one
    more tick period: its release time shows the movement."""

    def __init__(self, mechanism, **kw):
        super().__init__(mechanism, **kw)
        self._previous = None
        self._moved: set[float] = set()
        self._late: list = []

    def _release(self, ticks):
        for t, deg in zip(ticks.t, ticks.deg, strict=True):
            if self._previous is not None and np.abs(deg - self._previous).sum() > 0.5:
                self._moved.add(float(t))
            self._previous = deg
        return super()._release(ticks)

    def _delayed(self, release) -> float:
        return float(release.t[0]) + self._hold.offset + 1.0 / self.rate

    @property
    def next_due(self):
        due = super().next_due
        late = min((self._delayed(r) for r in self._late), default=None)
        return due if late is None else late if due is None else min(due, late)

    def due(self, clock):
        out = []
        for r in super().due(clock):
            (self._late if float(r.t[0]) in self._moved else out).append(r)
        ready = [r for r in self._late if self._delayed(r) <= clock]
        self._late = [r for r in self._late if self._delayed(r) > clock]
        return sorted(out + ready, key=lambda r: float(r.t[0]))


def swap_session_channel(cls):
    """A patch for :func:`streamdp.privacy.audit.gaze_timing.publish_times`: the session's gaze
    channel replaced by one of class ``cls`` with the same mechanism, rate, field of view,
    threshold, noise and hold."""

    def patch(session):
        old = session.gaze
        session.gaze = cls(
            old.privatizer.mechanism,
            rate=old.rate,
            fov_deg=old.ticks.fov_deg,
            min_confidence=old.ticks.min_confidence,
            rng=old.privatizer.rng,
            hold=old.hold,
            reorder=old.reorder,
        )

    return patch
