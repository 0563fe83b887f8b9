"""Budget Distribution for real-time gaze: publish a new position only when the gaze moved.

Kellaris et al. 2014 (VLDB, "Differentially private event sequences over infinite streams"),
Budget Distribution, adapted to metric privacy (ε per degree of L1 displacement). Per tick ``i``:

- M1 (every tick but the first) spends ``ε₁ = ε_w/(2w)`` per degree on a noisy dissimilarity: the
  L1 distance between the (clipped) position and the last published output, in integer lattice
  units, plus exact discrete Laplace noise. Two positions ``d`` apart move that distance by at most
  ``d`` (triangle inequality), plus two lattice steps for the rounding of each axis, so it is
  ``ε₁``-metric private with the rounding charged as in :mod:`streamdp.privacy.gaze_base`.
- M2: ``ε_rm = ε_w/2 − Σ ε_{j,2}`` over the previous ``w − 1`` ticks; the candidate is
  ``ε_{i,2} = ε_rm/2``. If the noisy dissimilarity exceeds the expected L1 error of publishing at
  ``ε_{i,2}`` (``2b``, ``b`` the per-axis scale), the tick publishes the position plus per-axis
  discrete Laplace noise of scale ``b`` and spends ``ε_{i,2}``; else it repeats the last output and
  spends nothing on M2. The first tick always publishes, at ``ε_w/4``.

The comparison is exact: the noisy dissimilarity is an integer and the threshold is compared as
the floor of ``2b/γ₁`` (an integer exceeds a real number exactly when it exceeds its floor). The
decision is post-processing of the metric-private dissimilarity whatever the threshold, so the
threshold only affects utility. Budgets are counted in integers, in units of ``ε_w·2⁻⁴¹``, each
share rounded down (spending less never weakens privacy), so no float sum can overrun ``ε_w``: over
any ``w`` consecutive ticks M1 spends at most ``w·⌊2⁴⁰/w⌋`` units and M2 at most ``2⁴⁰`` (each
publication takes at most half of what the window has left).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .gaze_base import (
    MAX_SCALE_DEG,
    GazeMechanism,
    GazeOutput,
    GazeState,
    lattice_noise,
    metric_calibration,
    pooled_laplace,
)
from .randomness import RandomSource, as_random_source

_F64 = NDArray[np.float64]

#: ε_w/2 (the window's publication budget, and M1's) is 2**UNIT_BITS units of ε_w·2**-(UNIT_BITS + 1)
UNIT_BITS = 40
_HALF = 1 << UNIT_BITS


class GazeBudgetDistribution(GazeMechanism):
    """Budget Distribution (Kellaris et al. 2014) for gaze positions under metric privacy.

    Every tick after the first spends ``ε_w/(2w)`` per degree testing, with exact discrete Laplace
    noise, whether the gaze moved (L1) further from the last published position than a new
    publication's expected error; only then does it publish, at half of the publication budget
    ``ε_w/2`` the window has left, else it repeats the last position. A steady fixation is
    published once and repeated while the budget recovers; a saccade is published at once.

    Guarantee: ε_w-metric privacy per degree of L1 displacement over any ``w`` consecutive ticks:
    two streams whose positions, clipped to the public field, differ only within ``w``
    consecutive ticks, each by at most ``d`` degrees (``|Δx| + |Δy|``), give any set of outputs
    probabilities within a factor ``exp(ε_w·d)`` (``ε_w·√2`` per degree of Euclidean distance).
    A tick spends at most ``ε_w/(2w) + ε_w/4`` per degree and any ``w`` consecutive ticks at most
    ``ε_w`` (counted exactly in integers); the spend of each tick is public (a function of the
    parameters and of earlier private outputs). The lattice rounding is charged by inflating each
    scale: the stated ε holds for displacements ≥ 2⁻¹⁰° (smaller non-zero ones cost what 2⁻¹⁰°
    does). A candidate publication whose scale would exceed 1000° is skipped (spending nothing).

    Attributes
    ----------
    epsilon_test : float
        ε₁, per degree, of the noisy dissimilarity (M1), ``⌊2⁴⁰/w⌋·ε_w·2⁻⁴¹ ≤ ε_w/(2w)``.
    test_noise_scale : float
        Its discrete Laplace scale, degrees of L1 distance.
    test_lattice : float
        The lattice (degrees) the dissimilarity is counted on.
    epsilon_publish_max : float
        The most one publication spends, per degree: ``ε_w/4`` (the first tick's).
    lattice : float
        The finest lattice a published position is on (degrees, a power of two).

    Examples
    --------
    >>> from streamdp.privacy import secure_generator
    >>> m = GazeBudgetDistribution(epsilon=60.0, w=60)
    >>> m.epsilon_publish_max, round(m.epsilon_test, 6)
    (15.0, 0.5)
    >>> steady = np.tile([[5.0, -3.0]], (120, 1))
    >>> out = m.release(steady, m.new_state(), secure_generator(0))
    >>> out.values.shape, float(out.epsilon[0])
    ((120, 2), 15.0)
    >>> windows = np.convolve(out.epsilon, np.ones(60), mode="valid")
    >>> bool(windows.max() <= 60.0 * (1 + 1e-12))
    True
    >>> bool(np.all(out.values / m.lattice % 1 == 0))
    True
    """

    name: ClassVar[str] = "geo-bd"

    unit: float
    test_units: int
    epsilon_test: float
    test_noise_scale: float
    test_lattice: float
    epsilon_publish_max: float

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        unit = math.ldexp(self.epsilon, -UNIT_BITS - 1)
        test_units = _HALF // self.w
        epsilon_test = test_units * unit
        publish_max = (_HALF // 2) * unit  # ε_w/4 exactly
        test, publish = metric_calibration(epsilon_test), metric_calibration(publish_max)
        if test is None or publish is None:
            raise ValueError(
                f"epsilon={self.epsilon!r} over w={self.w} ticks is too small for {self.name}: its test spends "
                f"{epsilon_test:.3g} per degree per tick, below 1/{MAX_SCALE_DEG:g} (noise wider than any field)"
            )
        self._check_finest(*test)
        self._check_finest(*publish)
        self._set(
            unit=unit,
            test_units=test_units,
            epsilon_test=epsilon_test,
            test_noise_scale=test[0],
            test_lattice=test[1],
            epsilon_publish_max=publish_max,
            lattice=publish[1],
            epsilon_tick_max=(test_units + _HALF // 2) * unit,  # as the ticks compute it
        )

    def new_state(self) -> GazeState:
        """A fresh stream's state: nothing published, the window's budget whole."""
        return GazeState(spent=deque(maxlen=self.w - 1))

    def _check_state(self, state: object) -> GazeState:
        st = super()._check_state(state)
        if st.spent.maxlen != self.w - 1:
            raise ValueError(f"state was not made by this {type(self).__name__}(w={self.w}).new_state()")
        return st

    def _publication(self, units: int) -> tuple[float, float] | None:
        """``(b, γ)`` of a publication spending ``units`` (None: too small to publish, skipped)."""
        return metric_calibration(units * self.unit) if units > 0 else None

    def release(self, positions: _F64, state: GazeState, rng: RandomSource) -> GazeOutput:
        """The sanitized positions of ``m`` consecutive ticks; ``state`` is updated in place.

        The test noise is drawn in blocks of ticks (:func:`~streamdp.privacy.gaze_base.pooled_laplace`),
        each publication's in one call: the draws follow the ticks, not the batches.
        """
        src = as_random_source(rng)
        x, clipped_fraction = self._check_positions(positions)
        st = self._check_state(state)
        m = x.shape[0]
        g1 = self.test_lattice
        here = np.rint(x / g1).astype(np.int64).tolist()  # positions on the test lattice, exact
        values = np.empty((m, 2))
        units = np.zeros(m, dtype=np.int64)
        last = st.last
        last_units = None if last is None else (round(last[0] / g1), round(last[1] / g1))
        for i in range(m):
            candidate = (_HALF - sum(st.spent)) // 2
            calibration = self._publication(candidate)
            if last_units is None:
                publish = calibration is not None  # the first tick (ε_w/4, always calibrated)
            else:
                units[i] = self.test_units
                if calibration is None:
                    publish = False
                else:
                    (hx, hy), (lx, ly) = here[i], last_units
                    noise = int(pooled_laplace(src, st, "test", self.test_noise_scale / g1, 1, 1)[0, 0])
                    dissimilarity = abs(hx - lx) + abs(hy - ly) + noise
                    publish = dissimilarity > math.floor(2.0 * calibration[0] / g1)
            if publish:
                assert calibration is not None
                scale, gamma = calibration
                k = lattice_noise(src, x[i : i + 1], scale, gamma)[0]
                last = (float(k[0]) * gamma, float(k[1]) * gamma)
                last_units = (round(last[0] / g1), round(last[1] / g1))
                units[i] += candidate
            st.spent.append(candidate if publish else 0)
            assert last is not None
            values[i] = last
        st.last = last
        st.ticks += m
        return self._output(values, units * self.unit, clipped_fraction)

    @property
    def _spend_sentence(self) -> str:
        return (
            f"Budget Distribution (Kellaris et al. 2014, adapted to metric privacy): every tick after the first "
            f"spends ε_w/(2w) = {self.epsilon_test:.4g} per degree on a noisy L1 distance between the position and "
            f"the last published one; a tick publishes a new position (per-axis discrete Laplace noise at half of "
            f"what remains of ε_w/2 in the window) only when that distance exceeds the new position's expected "
            f"error, else it repeats the last one; the first tick always publishes, at ε_w/4 = "
            f"{self.epsilon_publish_max:.4g}. A tick spends at most {self.epsilon_tick_max:.4g} per degree, any "
            f"{self.w} consecutive ticks at most ε_w, and the spend of each tick is public."
        )

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "epsilon_test_per_degree": self.epsilon_test,
            "epsilon_publish_max_per_degree": self.epsilon_publish_max,
            "test_noise_scale_deg": self.test_noise_scale,
            "budget_unit_per_degree": self.unit,
        }


__all__ = ["UNIT_BITS", "GazeBudgetDistribution"]
