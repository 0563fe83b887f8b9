"""FPA on a whole signal: the offline mechanism (Rastogi & Nath; Bozkir et al.'s corrected scale)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ...errors import InputError
from ..bounds import BoundsProfile
from ..noise import lattice_step
from ..randomness import RandomSource
from ..transforms import TRANSFORMS, make_transform
from .base import BaseMechanism, MechanismOutput, laplace_columns
from .parameters import BOUNDS, TRANSFORM, Parameter
from .validation import check_epsilon, check_int, check_positive_int

_F64 = NDArray[np.float64]


class FPA(BaseMechanism):
    """FPA on a whole signal. Offline only: it needs the whole recording before releasing anything.

    The ``k`` lowest coefficients of the whole signal (of length N) get discrete Laplace noise; k
    is capped at N/2 (DFT) or N (DCT) for a short signal.

    Guarantee: ε-DP per feature for two whole signals of length N inside the box bounds (unit of
    privacy: the whole signal of one feature, i.e. the whole recording): ``λ = √N·√k·Δ₂/ε`` (DFT)
    or ``√k·Δ₂/ε`` (DCT) with ``Δ₂ = √N·(hi - lo)``, plus the lattice charge.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> f = FPA(epsilon=1.0, bounds=default_profile(), k=5)
    >>> f
    FPA(epsilon=1.0, transform='dft', k=5, bounds=<'default', 52 features>)
    >>> f.privatize(np.tile(default_profile().lo, (100, 1)), secure_generator(0)).values.shape
    (100, 52)
    """

    name: ClassVar[str] = "fpa"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        Parameter("epsilon", "float", "ε per feature for the whole signal, finite and > 0.", check=check_epsilon),
        BOUNDS,
        TRANSFORM,
        Parameter("k", "int", "Number of lowest coefficients kept, ≥ 1.", default=20, check=check_positive_int),
    )

    epsilon: float
    bounds: BoundsProfile
    transform: str
    k: int

    @property
    def n_features(self) -> int:
        return len(self.bounds.names)

    def _k_for(self, length: int) -> int:
        return min(self.k, TRANSFORMS[self.transform].max_k(length))

    def noise_scale(self, length: int) -> _F64:
        """Laplace scale λ per feature on every released coefficient of a signal of ``length`` steps.

        Raises
        ------
        TypeError, ValueError
            ``length`` is not an int ≥ 2.
        """
        n = check_int("length", length)
        if n < 2:
            raise ValueError(f"length must be ≥ 2, got {n}")
        t = make_transform(self.transform, n, self._k_for(n))
        sens = t.l2_gain() * math.sqrt(n) * self.bounds.width
        gamma = np.array([lattice_step(s / self.epsilon) for s in sens])
        return np.asarray((sens + t.m * gamma) / self.epsilon)

    def privatize(self, x: _F64, rng: RandomSource) -> MechanismOutput:
        """The perturbed signal.

        Raises
        ------
        InputError
            ``x`` is not a finite (N ≥ 2, F) array.
        """
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != self.n_features or arr.shape[0] < 2:
            raise InputError(f"fpa: signal has shape {arr.shape}, expected (N ≥ 2, {self.n_features})")
        if not np.all(np.isfinite(arr)):
            raise InputError("fpa: signal holds a non-finite value")
        n = arr.shape[0]
        k = self._k_for(n)
        t = make_transform(self.transform, n, k)
        clipped = np.clip(arr, self.bounds.lo, self.bounds.hi)
        noisy = laplace_columns(rng, t.forward(clipped), self.noise_scale(n))
        return MechanismOutput(t.inverse(noisy), float(np.mean(clipped != arr)), np.full(arr.shape[1], k))

    def describe(self) -> dict[str, Any]:
        """The public parameters, for the ledger."""
        return {"mechanism": self.name, "epsilon_per_feature": self.epsilon, "transform": self.transform, "k": self.k}


#: the former name
WholeSignalFPA = FPA
