"""Steil et al. 2019's mechanism with its subsampling window."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..bounds import BoundsProfile
from ..noise import lattice_step
from .base import Mechanism, MechanismOutput, laplace_columns
from .validation import check_int

_F64 = NDArray[np.float64]


class Steil(Mechanism):
    """Steil et al. 2019's mechanism with its subsampling window, as a baseline.

    Per feature and chunk, one step is drawn at random from each of the ``n/w`` non-overlapping
    windows of ``w`` steps, and the drawn values get the exponential mechanism with utility
    ``-‖p − r‖₁`` and sensitivity ``Δu = (n/w)·(hi − lo)``. The density of that mechanism is
    ``∝ exp(−ε‖p − r‖₁ / (2Δu))``: independent Laplace noise of scale ``2Δu/ε`` on each drawn value,
    which is how streamdp samples it. (The paper draws one exponential scalar and spreads it with
    random signs over all entries; that output has equal magnitudes everywhere, which is not the
    stated density and is not differentially private, since its support depends on the input.)
    The released chunk holds each drawn value over its window.

    Guarantee: ε-DP per feature per chunk (the exponential mechanism's; unit of privacy: one chunk
    of one feature), for chunks in the bounds.

    Parameters
    ----------
    epsilon : float
        ε per feature per chunk, finite and > 0.
    bounds : BoundsProfile
        The public bounds.
    chunk_length : int
        n, a power of two ≥ 2.
    window : int
        w, the subsampling window: ``1 ≤ w`` and w divides n. Default 8.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> Steil(epsilon=1.0, bounds=default_profile(), chunk_length=32, window=4)
    Steil(epsilon=1.0, chunk_length=32, window=4, bounds=<'default', 52 features>)
    """

    name: ClassVar[str] = "steil"
    parameters: ClassVar[tuple[str, ...]] = ("epsilon", "bounds", "chunk_length", "window")

    window: int
    sensitivity: _F64
    noise_scale: _F64

    def __init__(self, *, epsilon: float, bounds: BoundsProfile, chunk_length: int, window: int = 8) -> None:
        super().__init__(epsilon=epsilon, bounds=bounds, chunk_length=chunk_length)
        w = check_int("window", window)
        if w < 1 or self.chunk_length % w:
            raise ValueError(f"window must divide chunk_length {self.chunk_length}, got {w}")
        n_draw = self.chunk_length // w
        sensitivity = n_draw * self.bounds.width
        gamma = np.array([lattice_step(2 * s / self.epsilon) for s in sensitivity])
        self._set(
            window=w,
            sensitivity=sensitivity,
            noise_scale=(2.0 * (sensitivity + n_draw * gamma)) / self.epsilon,
        )

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = self._check_input(x)
        clipped, n_clip = self._clip(arr)
        n, f = arr.shape
        n_draw = n // self.window
        pick = rng.integers(0, self.window, size=(n_draw, f)) + (np.arange(n_draw) * self.window)[:, None]
        drawn = np.take_along_axis(clipped, pick, axis=0)
        noisy = laplace_columns(rng, drawn, self.noise_scale)
        return MechanismOutput(np.repeat(noisy, self.window, axis=0), n_clip / arr.size, np.full(f, n_draw))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "subsampling_window": self.window}


#: the former name
SteilSubsampling = Steil
