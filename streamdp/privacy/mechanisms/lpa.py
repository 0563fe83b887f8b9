"""LPA: the Laplace perturbation algorithm on every value of a chunk."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..noise import lattice_step
from ..randomness import RandomSource
from .base import MechanismOutput, laplace_columns
from .budget import ChunkMechanism

_F64 = NDArray[np.float64]


class LPA(ChunkMechanism):
    """LPA: discrete Laplace noise on every value of the chunk.

    Guarantee: ε_f-DP per feature per chunk (unit of privacy: one chunk of one feature), the
    chunk's features composing to the total ``epsilon``. Neighbouring chunks may differ anywhere
    inside the bounds, so the L1 sensitivity of a feature's n values is ``n·(hi - lo)`` (plus the
    lattice charge ``n·γ``) and the noise scale ``λ = (n·(hi-lo) + n·γ)/ε_f``.

    Attributes
    ----------
    sensitivity : ndarray
        L1 sensitivity per feature (read-only).
    noise_scale : ndarray
        Laplace scale λ per feature (read-only).

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> m = LPA(epsilon=52.0, bounds=default_profile(), chunk_length=32)
    >>> m
    LPA(epsilon=52.0, chunk_length=32, bounds=<'default', 52 features>)
    >>> float(m.feature_epsilons[0])
    1.0
    >>> out = m.privatize(np.zeros((32, 52)) + default_profile().lo, secure_generator(0))
    >>> out.values.shape
    (32, 52)
    """

    name: ClassVar[str] = "lpa"
    sensitivity: _F64
    noise_scale: _F64

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        n = self.chunk_length
        eps = self._noise_epsilons
        sensitivity = n * self.bounds.width
        gamma = np.array([lattice_step(s / e) for s, e in zip(sensitivity, eps, strict=True)])
        self._set(sensitivity=sensitivity, noise_scale=(sensitivity + n * gamma) / eps)

    def privatize(self, x: _F64, rng: RandomSource) -> MechanismOutput:
        arr = self._check_input(x)
        clipped, n_clip = self._clip(arr)
        out = self._public_constants(laplace_columns(rng, clipped, self.noise_scale))
        return MechanismOutput(out, n_clip / arr.size, np.full(arr.shape[1], self.chunk_length))


#: the former name
LaplacePerturbation = LPA
