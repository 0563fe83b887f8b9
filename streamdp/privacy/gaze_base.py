"""Real-time gaze positions under metric privacy: what every gaze mechanism shares.

The feature chunks are released every 16–32 s; interactive apps (dwell selection, pursuit) need
positions *now*, at a public tick rate (60 Hz by default). Pure differential privacy is useless
there (a tick that may move anywhere in the field needs noise of the field's size), so the gaze
mechanisms give **metric privacy** (geo-indistinguishability, Andrés et al. 2013) with the L1
distance in degrees, over a window of ``w`` ticks (Kellaris et al. 2014's w-event privacy):

    Two gaze streams are neighbours when their positions, clipped to the public field, differ only
    within ``w`` consecutive ticks, each by at most ``d`` degrees of L1 distance ``|Δx| + |Δy|``.
    For any such pair and any set ``S`` of outputs, ``P(S | one) ≤ exp(ε_w·d)·P(S | other)``.

A per-axis Laplace density of scale ``b`` gives ``exp(-(|Δx| + |Δy|)/b)``: ``1/b`` per degree of L1
distance, hence ``√2/b`` per degree of Euclidean distance (the L1 distance is at most ``√2`` times
the Euclidean one).

Exactness (Mironov 2012): a position is rounded to a power-of-two lattice ``γℤ`` and gets exact
integer discrete Laplace noise on that lattice (:mod:`streamdp.privacy.exact_samplers`), so the
outputs are multiples of ``γ`` whatever the input's low bits. Rounding moves each axis by at most
``γ/2``, so two inputs ``d`` apart are at most ``d + 2γ`` apart after it. That charge is paid by
inflating the scale: ``b = (1 + 2γ/d_min)/ε``, which makes the stated ε per degree hold for every
displacement ``d ≥ d_min`` (:data:`MIN_DISPLACEMENT` = 2⁻¹⁰° ≈ 0.001°, far below any tracker's
precision); a smaller non-zero displacement costs what ``d_min`` costs. The lattice is at most
``2⁻³⁰·b`` and at most 2⁻³⁰°, so the inflation is at most 2⁻¹⁹ of the scale. The few
floating-point roundings of the calibration (each at most 2⁻⁵³ relative) are covered by a further
factor ``1 + 2⁻⁴⁰``; the sampler itself only ever rounds the scale up.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections import deque
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from .exact_samplers import discrete_laplace
from .mechanisms.base import BaseMechanism
from .mechanisms.parameters import Parameter
from .mechanisms.validation import check_epsilon, check_positive_int, frozen_array
from .noise import lattice_step
from .randomness import RandomSource

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]

#: displacements (degrees, L1) below this, but not zero, cost what this one costs (the lattice's charge)
MIN_DISPLACEMENT = 2.0**-10
#: the lattice is 2**GAZE_LATTICE_BITS times finer than the noise scale (and never coarser than 2⁻³⁰°)
GAZE_LATTICE_BITS = 30
#: the largest noise scale (degrees per axis) a gaze mechanism draws: ε per tick below 1/1000 per
#: degree is refused (noise wider than any field)
MAX_SCALE_DEG = 1000.0
#: the public field's default half-extents (degrees): ±60° horizontally, ±45° vertically
DEFAULT_FIELD = (60.0, 45.0)
#: the calibration's margin for its floating-point roundings
_FLOAT_MARGIN = 1.0 + 2.0**-40


def check_field(name: str, value: object) -> tuple[float, float]:
    """Two finite half-extents ``> 0`` (degrees), as a tuple of floats.

    Examples
    --------
    >>> check_field("field", [40, 30.5])
    (40.0, 30.5)
    >>> check_field("field", (40.0, 0.0))
    Traceback (most recent call last):
    ...
    ValueError: field[1] must be finite and > 0, got 0.0
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)):
        raise TypeError(f"{name} must be a pair of half-extents in degrees (fx, fy), got {value!r}")
    if len(value) != 2:
        raise ValueError(f"{name} must hold two half-extents (fx, fy), got {len(value)}: {value!r}")
    return check_epsilon(f"{name}[0]", value[0]), check_epsilon(f"{name}[1]", value[1])


@functools.lru_cache(maxsize=4096)
def metric_calibration(epsilon: float) -> tuple[float, float] | None:
    """``(b, γ)``: the per-axis discrete Laplace scale ``b`` (degrees) and the lattice ``γ`` (a power
    of two) that give ``epsilon`` per degree of L1 displacement for two rounded axes,
    ``b = (1 + 2γ/d_min)·(1 + 2⁻⁴⁰)/ε``; None when ``1/ε`` exceeds :data:`MAX_SCALE_DEG`.

    Examples
    --------
    >>> b, gamma = metric_calibration(1.0)
    >>> gamma == 2.0**-30, 1.0 < b < 1.0 + 2.0**-18
    (True, True)
    >>> metric_calibration(1e-4) is None
    True
    """
    base = 1.0 / epsilon
    if not (math.isfinite(base) and 0.0 < base <= MAX_SCALE_DEG):
        return None
    gamma = lattice_step(min(base, 1.0), GAZE_LATTICE_BITS)
    return base * (1.0 + 2.0 * gamma / MIN_DISPLACEMENT) * _FLOAT_MARGIN, gamma


#: up to this many ticks, positions are checked and clipped in Python
_FEW_TICKS = 8


#: ticks of noise drawn from the generator at a time: the draws follow the tick count (public), so a
#: seeded stream gets the same noise however its ticks are batched
NOISE_BLOCK = 64


def pooled_laplace(rng: RandomSource, state: GazeState, key: str, t: float, count: int, width: int) -> _I64:
    """``count`` rows of ``width`` exact discrete Laplace integers of scale ``t`` (lattice units),
    taken from ``state``'s pool ``key``, refilled :data:`NOISE_BLOCK` ticks at a time."""
    pool = state.pools.get(key)
    if pool is None:
        pool = np.empty((0, width), dtype=np.int64)
    while pool.shape[0] < count:
        pool = np.concatenate([pool, discrete_laplace(rng, t, (NOISE_BLOCK, width))])
    state.pools[key] = pool[count:]
    return pool[:count]


def pooled_laplace_row(rng: RandomSource, state: GazeState, key: str, t: float, width: int) -> list[int]:
    """:func:`pooled_laplace` of one row, as Python ints: the same draw from the same pool."""
    pool = state.pools.get(key)
    if pool is None or not pool.shape[0]:
        pool = discrete_laplace(rng, t, (NOISE_BLOCK, width))
    state.pools[key] = pool[1:]
    row: list[int] = pool[0].tolist()
    return row


def lattice_noise(rng: RandomSource, x: _F64, scale: float, gamma: float) -> _I64:
    """``round(x/γ) + Z`` per element, ``Z`` exact discrete Laplace of scale ``scale/γ`` (lattice units)."""
    z = discrete_laplace(rng, scale / gamma, x.shape)
    return np.asarray(np.rint(x / gamma).astype(np.int64) + z, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class GazeOutput:
    """What one :meth:`GazeMechanism.release` call gives, for ``m`` ticks (arrays read-only).

    ``values`` (m, 2): released positions in degrees, on the mechanism's lattice. ``epsilon`` (m,):
    ε per degree each tick spent, public (a function of the public parameters and of earlier
    private outputs only). ``clipped_fraction``: the fraction of ticks the field clipped, for the
    device only (it is a function of the raw gaze).
    """

    values: _F64
    epsilon: _F64
    clipped_fraction: float


@dataclass
class GazeState:
    """A stream's mutable state between :meth:`GazeMechanism.release` calls, made by ``new_state()``.

    ``ticks``: ticks released so far. ``last``: the last published position (None before the
    first). ``spent``: ε spent by the last ``w - 1`` publications, in the mechanism's integer units
    (a stateless mechanism leaves ``last`` and ``spent`` alone). ``pools``: noise drawn ahead, in
    blocks that follow the tick count, so that the noise does not depend on how ticks are batched.
    """

    ticks: int = 0
    last: tuple[float, float] | None = None
    spent: deque[int] = dataclass_field(default_factory=deque)
    #: noise drawn ahead in public blocks (:func:`pooled_laplace`), by purpose
    pools: dict[str, _I64] = dataclass_field(default_factory=dict)


GAZE_PARAMETERS: tuple[Parameter, ...] = (
    Parameter(
        "epsilon",
        "float",
        "ε_w: ε per degree of L1 displacement over any w consecutive ticks, finite and > 0.",
        check=check_epsilon,
    ),
    Parameter("w", "int", "The window in ticks, ≥ 1 (at 60 Hz, w = 60 is one second).", check=check_positive_int),
    Parameter(
        "field",
        "tuple[float, float]",
        "Public half-extents (fx, fy) of the scene in degrees, finite and > 0: positions are clipped to "
        "[-fx, fx] × [-fy, fy] before any noise.",
        default=DEFAULT_FIELD,
        check=check_field,
    ),
)


class GazeMechanism(BaseMechanism):
    """Base of the real-time gaze mechanisms: gaze positions (m, 2) in degrees in, sanitized
    positions out, under ε_w-metric privacy per degree of L1 displacement over any ``w``
    consecutive ticks (see :mod:`streamdp.privacy.gaze_base`).

    A tick with no valid gaze is given the public centre (0, 0) by the caller; the mechanism does
    not know. Subclasses set ``lattice`` (the finest lattice an output is on) and
    ``epsilon_tick_max`` (the most one tick spends, per degree) and implement :meth:`release`.
    """

    name: ClassVar[str]
    parameter_table: ClassVar[tuple[Parameter, ...]] = GAZE_PARAMETERS

    epsilon: float
    w: int
    field: tuple[float, float]
    lattice: float
    epsilon_tick_max: float

    def _check_finest(self, scale: float, gamma: float) -> None:
        """Refuse an ε so large that the field on its lattice overflows 62-bit integers."""
        if max(self.field) / gamma > 2.0**61:
            raise ValueError(
                f"epsilon={self.epsilon!r} is too large for {self.name}: on its lattice γ = {gamma!r}° the field "
                "spans more than 2⁶¹ steps"
            )

    def new_state(self) -> GazeState:
        """A fresh stream's state."""
        return GazeState()

    def _check_positions(self, positions: object) -> tuple[_F64, float]:
        """``positions`` as a finite (m, 2) float array clipped to the field, and the fraction of
        ticks clipping moved."""
        arr = np.asarray(positions, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != 2:
            raise InputError(f"{self.name}: positions have shape {arr.shape}, expected (m, 2) degrees")
        if arr.shape[0] <= _FEW_TICKS:  # a live wake's tick or two: clipped in Python floats
            rows, moved = arr.tolist(), 0
            for tick, (x, y) in enumerate(rows):
                rows[tick] = list(self._clip_one(x, y, tick))
                moved += rows[tick] != [x, y]
            return np.array(rows, dtype=np.float64).reshape(arr.shape), moved / len(rows) if rows else 0.0
        if not np.isfinite(arr).all():
            raise self._not_finite(int(np.argwhere(~np.isfinite(arr))[0, 0]))
        fx, fy = self.field
        clipped = np.clip(arr, (-fx, -fy), (fx, fy))
        moved = int(np.count_nonzero(np.any(clipped != arr, axis=1)))
        return clipped, moved / arr.shape[0]

    def _clip_one(self, x: float, y: float, tick: int = 0) -> tuple[float, float]:
        """One position clipped to the field: Python's ``min`` and ``max`` pick the very floats NumPy's
        ``clip`` would, at a tenth of its per-call cost.

        Raises
        ------
        InputError
            ``x`` or ``y`` is not finite (``tick`` named).
        """
        if not (math.isfinite(x) and math.isfinite(y)):
            raise self._not_finite(tick)
        fx, fy = self.field
        return min(max(x, -fx), fx), min(max(y, -fy), fy)

    def _not_finite(self, tick: int) -> InputError:
        return InputError(f"{self.name}: position at tick {tick} is not finite (give the public centre (0, 0))")

    def _check_state(self, state: object) -> GazeState:
        if not isinstance(state, GazeState):
            raise TypeError(f"state must be a GazeState from {type(self).__name__}.new_state(), got {state!r}")
        return state

    def release_one(self, x: float, y: float, state: GazeState, rng: RandomSource) -> tuple[float, float, float, bool]:
        """One tick's :meth:`release` in Python floats (a live wake's): the released position, the ε per degree it
        spent and whether the field clipped it; the very bits and draws :meth:`release` of ``[[x, y]]`` gives.

        Raises
        ------
        InputError
            ``x`` or ``y`` is not finite.
        TypeError
            ``state`` is not a :class:`GazeState`, or ``rng`` not a random source.
        """
        out = self.release(np.array([[x, y]], dtype=np.float64), state, rng)
        vx, vy = out.values[0].tolist()
        return vx, vy, float(out.epsilon[0]), out.clipped_fraction > 0.0

    @staticmethod
    def _output(values: NDArray[Any], epsilon: NDArray[Any], clipped_fraction: float) -> GazeOutput:
        return GazeOutput(frozen_array(values, np.float64), frozen_array(epsilon, np.float64), clipped_fraction)

    @abstractmethod
    def release(self, positions: _F64, state: GazeState, rng: RandomSource) -> GazeOutput:
        """The sanitized positions of ``m`` consecutive ticks, continuing the stream in ``state``
        (updated in place), the noise drawn from ``rng``.

        Raises
        ------
        InputError
            ``positions`` is not a finite (m, 2) array.
        TypeError
            ``state`` is not a :class:`GazeState`, or ``rng`` not a random source.
        """

    @property
    def _spend_sentence(self) -> str:
        """How the mechanism spends ε_w, for :attr:`guarantee`."""
        return ""

    @property
    def guarantee(self) -> str:
        """The guarantee in words: what neighbouring streams differ in, over which window, at what
        ε, per what distance."""
        fx, fy = self.field
        eps, w = self.epsilon, self.w
        return (
            f"Metric privacy (geo-indistinguishability) for gaze positions, over any {w} consecutive ticks: two "
            f"gaze streams are neighbours when their positions, clipped to the public field [-{fx:g}°, {fx:g}°] x "
            f"[-{fy:g}°, {fy:g}°], differ only within {w} consecutive ticks, each by at most d degrees of L1 "
            f"distance (|dx| + |dy|); for any such pair and any set of outputs, the probabilities under the two "
            f"differ by a factor of at most exp({eps:g}·d): ε_w = {eps:g} per degree of L1 displacement "
            f"({eps * math.sqrt(2):.4g} per degree of Euclidean displacement). Each further window of {w} ticks in "
            f"which the streams differ adds at most ε_w·d. A non-zero displacement below 2^-10° (about 0.001°) "
            f"counts as 2^-10° (the rounding to the noise lattice). It hides small displacements at a few ticks "
            f"(a 0.1° difference held for all {w} ticks costs ε {eps * 0.1:.3g}), not where in the scene the user "
            "looks, nor, at a large ε_w, detail held for long. "
            f"{self._spend_sentence}"
        ).rstrip()

    def describe(self) -> dict[str, Any]:
        """The public parameters and the guarantee, for the ledger."""
        return {
            "mechanism": self.name,
            "epsilon_w_per_degree": self.epsilon,
            "w": self.w,
            "metric": "L1 degrees",
            "field": list(self.field),
            "epsilon_w_per_euclidean_degree": self.epsilon * math.sqrt(2),
            "epsilon_tick_max_per_degree": self.epsilon_tick_max,
            "min_displacement_deg": MIN_DISPLACEMENT,
            "lattice_deg": self.lattice,
            "noise": "exact discrete Laplace per axis on a power-of-two lattice",
            "guarantee": self.guarantee,
        }


__all__ = [
    "DEFAULT_FIELD",
    "GAZE_PARAMETERS",
    "MAX_SCALE_DEG",
    "MIN_DISPLACEMENT",
    "GazeMechanism",
    "GazeOutput",
    "GazeState",
    "check_field",
    "lattice_noise",
    "metric_calibration",
    "pooled_laplace_row",
]
