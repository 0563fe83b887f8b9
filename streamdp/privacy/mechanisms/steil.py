"""Steil et al. 2019's mechanism with its subsampling window."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..noise import lattice_step
from ..randomness import RandomSource
from .base import MechanismOutput, laplace_columns
from .budget import ChunkMechanism
from .parameters import Parameter
from .validation import check_int

_F64 = NDArray[np.float64]


class Steil(ChunkMechanism):
    """Steil et al. 2019's mechanism with its subsampling window, as a baseline.

    Per feature and chunk, one step is drawn at random from each of the ``n/w`` non-overlapping
    windows of ``w`` steps, and the drawn values get the exponential mechanism with utility
    ``-‖p − r‖₁``, whose sensitivity is ``Δu = (n/w)·(hi − lo)`` (the drawn values may all move by
    the range). The paper samples the density ``∝ exp(−ε‖p − r‖₁ / (2Δu))``: Laplace noise of scale
    ``2Δu/ε`` on each drawn value. For this utility the exponential mechanism's factor 2 is not
    needed: the density ratio between two inputs is at most ``exp(ε‖r − r'‖₁/(2Δu)) ≤ exp(ε/2)``,
    so that scale is ε/2-DP, twice the noise. streamdp uses the exact scale, ``Δu/ε_f`` (the
    Laplace mechanism on the drawn values, plus the lattice charge), which is ε_f-DP: half the
    paper's noise at the same guarantee. (The paper also draws one exponential scalar and spreads
    it with random signs over all entries; that output has equal magnitudes everywhere, which is
    not the stated density and is not differentially private, since its support depends on the
    input.) The released chunk holds each drawn value over its window. The random subsampling
    gives no amplification here: neighbouring inputs may differ in every step.

    Guarantee: ε_f-DP per feature per chunk (unit of privacy: one chunk of one feature), the
    chunk's features composing to the total ``epsilon``, for any two chunks (values are clipped
    to the bounds first).

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> m = Steil(epsilon=52.0, bounds=default_profile(), chunk_length=32, window=4)
    >>> m
    Steil(epsilon=52.0, chunk_length=32, window=4, bounds=<'default', 52 features>)
    >>> float(m.noise_scale[0] / m.sensitivity[0]).__round__(4)  # Δu/ε_f, ε_f = 1
    1.0
    """

    name: ClassVar[str] = "steil"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        *ChunkMechanism.parameter_table,
        Parameter("window", "int", "w, the subsampling window: 1 ≤ w and w divides n.", default=8, check=check_int),
    )

    window: int
    sensitivity: _F64
    noise_scale: _F64

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        w = checked["window"]
        if w < 1 or self.chunk_length % w:
            raise ValueError(f"window must divide chunk_length {self.chunk_length}, got {w}")
        n_draw = self.chunk_length // w
        eps = self._noise_epsilons
        sensitivity = n_draw * self.bounds.width
        gamma = np.array([lattice_step(s / e) for s, e in zip(sensitivity, eps, strict=True)])
        self._set(window=w, sensitivity=sensitivity, noise_scale=(sensitivity + n_draw * gamma) / eps)

    def privatize(self, x: _F64, rng: RandomSource) -> MechanismOutput:
        arr = self._check_input(x)
        clipped, n_clip = self._clip(arr)
        n, f = arr.shape
        n_draw = n // self.window
        pick = rng.integers(0, self.window, size=(n_draw, f)) + (np.arange(n_draw) * self.window)[:, None]
        drawn = np.take_along_axis(clipped, pick, axis=0)
        noisy = laplace_columns(rng, drawn, self.noise_scale)
        out = self._public_constants(np.repeat(noisy, self.window, axis=0))
        return MechanismOutput(out, n_clip / arr.size, np.full(f, n_draw))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "subsampling_window": self.window}


#: the former name
SteilSubsampling = Steil
