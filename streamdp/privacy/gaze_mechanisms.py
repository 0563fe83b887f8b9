"""The real-time gaze mechanisms, by name: sanitized gaze positions at a public tick rate.

Metric privacy (geo-indistinguishability) per degree of L1 displacement over any ``w``
consecutive ticks (see :mod:`streamdp.privacy.gaze_base` for the guarantee, the lattice and the
calibration). Two mechanisms, in :data:`GAZE_MECHANISMS`:

- :class:`GazeUniform` (``"geo-uniform"``): every tick spends ``ε_w/w``, per-axis discrete Laplace.
- :class:`~streamdp.privacy.gaze_budget.GazeBudgetDistribution` (``"geo-bd"``): Kellaris et al.'s
  Budget Distribution: a tick publishes only when the gaze moved, else it repeats.

They are not chunk mechanisms and are not in :data:`~streamdp.privacy.mechanisms.MECHANISMS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .gaze_base import (
    DEFAULT_FIELD,
    MAX_SCALE_DEG,
    MIN_DISPLACEMENT,
    GazeMechanism,
    GazeOutput,
    GazeState,
    metric_calibration,
    pooled_laplace,
    pooled_laplace_row,
)
from .gaze_budget import GazeBudgetDistribution
from .randomness import RandomSource, as_random_source

_F64 = NDArray[np.float64]


class GazeUniform(GazeMechanism):
    """Uniform: every tick spends ``ε_w/w`` per degree, exact discrete Laplace noise per axis.

    Each axis of each tick gets independent noise of scale ``b ≈ w/ε_w`` degrees: the product of
    the two Laplace densities is ``exp(-(|Δx| + |Δy|)/b)``, metric privacy for the L1 distance at
    ``1/b`` per degree per tick, hence ``√2/b`` per degree of Euclidean distance. At ``ε_w/w = 1``
    per degree the median Euclidean error is about 1.35°. Vectorized over the ticks; stateless
    (the state only counts ticks).

    Guarantee: ε_w-metric privacy per degree of L1 displacement over any ``w`` consecutive ticks:
    two streams whose positions, clipped to the public field, differ only within ``w``
    consecutive ticks, each by at most ``d`` degrees (``|Δx| + |Δy|``), give any set of outputs
    probabilities within a factor ``exp(ε_w·d)`` (``ε_w·√2`` per degree of Euclidean distance).
    More precisely each tick spends ``ε_w/w`` per degree, so streams differing by ``d_t`` at ticks
    ``t`` (anywhere) lose at most ``Σ_t (ε_w/w)·d_t``. The lattice rounding (each axis moves by at
    most ``γ/2``) is charged by inflating the scale, ``b = (1 + 2γ/d_min)(1 + 2⁻⁴⁰)·w/ε_w`` with
    ``d_min = 2⁻¹⁰°``: the stated ε per degree holds for every displacement ``≥ d_min``, and a
    smaller non-zero one costs what ``d_min`` does (the inflation is below 2⁻¹⁹ of the scale).

    Attributes
    ----------
    epsilon_tick : float
        ``ε_w/w``, per degree of L1 displacement, spent by every tick.
    noise_scale : float
        The per-axis discrete Laplace scale, degrees.
    lattice : float
        The output lattice, degrees (a power of two): every output is a multiple of it.

    Examples
    --------
    >>> from streamdp.privacy import secure_generator
    >>> m = GazeUniform(epsilon=60.0, w=60)
    >>> m
    GazeUniform(epsilon=60.0, w=60, field=(60.0, 45.0))
    >>> m.epsilon_tick, m.lattice == 2.0**-30
    (1.0, True)
    >>> out = m.release(np.array([[0.0, 0.0], [100.0, 2.5]]), m.new_state(), secure_generator(0))
    >>> out.values.shape, out.epsilon.tolist(), out.clipped_fraction
    ((2, 2), [1.0, 1.0], 0.5)
    >>> bool(np.all(out.values / m.lattice % 1 == 0))
    True
    >>> GazeUniform(epsilon=1.0, w=0)
    Traceback (most recent call last):
    ...
    ValueError: w must be ≥ 1, got 0
    """

    name: ClassVar[str] = "geo-uniform"

    epsilon_tick: float
    noise_scale: float

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        epsilon_tick = self.epsilon / self.w
        calibration = metric_calibration(epsilon_tick)
        if calibration is None:
            raise ValueError(
                f"epsilon={self.epsilon!r} over w={self.w} ticks is too small for {self.name}: "
                f"{epsilon_tick:.3g} per degree per tick, below 1/{MAX_SCALE_DEG:g} (noise wider than any field)"
            )
        self._check_finest(*calibration)
        scale, gamma = calibration
        self._set(epsilon_tick=epsilon_tick, noise_scale=scale, lattice=gamma, epsilon_tick_max=epsilon_tick)

    def release(self, positions: _F64, state: GazeState, rng: RandomSource) -> GazeOutput:
        """The sanitized positions of ``m`` ticks, each independently noised (noise drawn in blocks
        of :data:`~streamdp.privacy.gaze_base.NOISE_BLOCK` ticks)."""
        src = as_random_source(rng)
        x, clipped_fraction = self._check_positions(positions)
        st = self._check_state(state)
        m = x.shape[0]
        z = pooled_laplace(src, st, "position", self.noise_scale / self.lattice, m, 2)
        k = np.rint(x / self.lattice).astype(np.int64) + z
        st.ticks += m
        return self._output(k * self.lattice, np.full(m, self.epsilon_tick), clipped_fraction)

    def release_one(self, x: float, y: float, state: GazeState, rng: RandomSource) -> tuple[float, float, float, bool]:
        """:meth:`release` of one tick in Python floats: ``round`` is NumPy's ``rint`` (both half to even), a
        Python int times a float is the int64 array's product (both round the int to the nearest float first)."""
        if type(self) is not GazeUniform:  # a subclass (the audit's altered variants) releases through its release()
            return super().release_one(x, y, state, rng)
        src = as_random_source(rng)
        cx, cy = self._clip_one(x, y)
        st = self._check_state(state)
        zx, zy = pooled_laplace_row(src, st, "position", self.noise_scale / self.lattice, 2)
        gamma = self.lattice
        st.ticks += 1
        return (round(cx / gamma) + zx) * gamma, (round(cy / gamma) + zy) * gamma, self.epsilon_tick, (cx, cy) != (x, y)

    @property
    def _spend_sentence(self) -> str:
        return (
            f"Uniform: every tick spends ε_w/w = {self.epsilon_tick:.4g} per degree (independent exact discrete "
            f"Laplace noise of scale {self.noise_scale:.4g}° on each axis), so streams differing by d_t at ticks t "
            f"lose at most the sum over t of {self.epsilon_tick:.4g}·d_t."
        )

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "epsilon_tick_per_degree": self.epsilon_tick, "noise_scale_deg": self.noise_scale}


#: the real-time gaze mechanisms, by ledger name (not chunk mechanisms: not in MECHANISMS)
GAZE_MECHANISMS: Mapping[str, type[GazeMechanism]] = MappingProxyType(
    {cls.name: cls for cls in (GazeUniform, GazeBudgetDistribution)}
)

__all__ = [
    "DEFAULT_FIELD",
    "GAZE_MECHANISMS",
    "MIN_DISPLACEMENT",
    "GazeBudgetDistribution",
    "GazeMechanism",
    "GazeOutput",
    "GazeState",
    "GazeUniform",
]
