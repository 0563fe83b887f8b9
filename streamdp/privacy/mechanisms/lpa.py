"""LPA: the Laplace perturbation algorithm on every value of a chunk."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
from numpy.typing import NDArray

from ..bounds import BoundsProfile
from ..noise import lattice_step
from .base import Mechanism, MechanismOutput, laplace_columns

_F64 = NDArray[np.float64]


class LPA(Mechanism):
    """LPA: discrete Laplace noise on every value of the chunk.

    Guarantee: ε-DP per feature per chunk (unit of privacy: one chunk of one feature). Neighbouring
    chunks may differ anywhere inside the bounds, so the L1 sensitivity of a feature's n values is
    ``n·(hi - lo)`` (plus the lattice charge ``n·γ``) and the noise scale
    ``λ = (n·(hi-lo) + n·γ)/ε``.

    Parameters
    ----------
    epsilon : float
        ε per feature per chunk, finite and > 0.
    bounds : BoundsProfile
        The public bounds.
    chunk_length : int
        n, a power of two ≥ 2.

    Attributes
    ----------
    sensitivity : ndarray
        L1 sensitivity per feature (read-only).
    noise_scale : ndarray
        Laplace scale λ per feature (read-only).

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> m = LPA(epsilon=1.0, bounds=default_profile(), chunk_length=32)
    >>> m
    LPA(epsilon=1.0, chunk_length=32, bounds=<'default', 52 features>)
    >>> out = m.privatize(np.zeros((32, 52)) + default_profile().lo, secure_generator(0))
    >>> out.values.shape
    (32, 52)
    """

    name: ClassVar[str] = "lpa"
    parameters: ClassVar[tuple[str, ...]] = ("epsilon", "bounds", "chunk_length")

    sensitivity: _F64
    noise_scale: _F64

    def __init__(self, *, epsilon: float, bounds: BoundsProfile, chunk_length: int) -> None:
        super().__init__(epsilon=epsilon, bounds=bounds, chunk_length=chunk_length)
        n = self.chunk_length
        sensitivity = n * self.bounds.width
        gamma = np.array([lattice_step(s / self.epsilon) for s in sensitivity])
        self._set(sensitivity=sensitivity, noise_scale=(sensitivity + n * gamma) / self.epsilon)

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = self._check_input(x)
        clipped, n_clip = self._clip(arr)
        out = laplace_columns(rng, clipped, self.noise_scale)
        return MechanismOutput(out, n_clip / arr.size, np.full(arr.shape[1], self.chunk_length))


#: the former name
LaplacePerturbation = LPA
