"""Differentially private mechanisms on a chunk of feature vectors, shape (n steps, F features).

Unit of privacy of every mechanism here: **one chunk of one feature** — two inputs are neighbours
when they are any two chunks inside the public bounds (after clipping). ε is per feature per
chunk; the F features of a chunk compose sequentially to ``F·ε`` (see
:mod:`streamdp.privacy.accountant` for chunks, w-events, sessions and raw gaze).

All noise is discrete Laplace on a power-of-two lattice from :mod:`streamdp.privacy.noise`, with
the rounding charged to the sensitivity. Mechanisms are immutable and validate every parameter
at construction: a wrong type raises ``TypeError``, a value out of range ``ValueError``, both
naming the parameter and the value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from .bounds import BoundsProfile
from .noise import lattice_laplace, lattice_step
from .transforms import l1_sensitivity, make_transform

_F64 = NDArray[np.float64]

#: public default number of coefficients per chunk length, chosen on synthetic (public) data
#: only: the k of lowest mean NMSE for DCFPA-DFT at ε = 1 per feature (docs/privacy.md)
DEFAULT_K: dict[int, int] = {16: 1, 32: 1, 64: 1, 128: 1, 256: 1}


def _check_epsilon(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if math.isnan(v) or not (0.0 < v < math.inf):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return v


def _check_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


def check_chunk_length(value: object) -> int:
    n = _check_int("chunk_length", value)
    if n < 2 or n & (n - 1):
        raise ValueError(f"chunk_length must be a power of two ≥ 2, got {n}")
    return n


def default_k(n: int) -> int:
    """The documented public k for a chunk length (1 beyond the table)."""
    return DEFAULT_K.get(n, 1)


@dataclass(frozen=True, eq=False)
class MechanismOutput:
    """A perturbed chunk and what it took: values (n, F), fraction of inputs clipped, k per feature."""

    values: _F64
    clipped_fraction: float
    k: NDArray[np.int64]


class Mechanism:
    """Base class: keyword-only validated parameters, immutable after construction."""

    name: ClassVar[str] = "mechanism"
    _frozen = False

    def __init__(self, *, epsilon: float, bounds: BoundsProfile, chunk_length: int) -> None:
        self.epsilon = _check_epsilon("epsilon", epsilon)
        if not isinstance(bounds, BoundsProfile):
            raise TypeError(f"bounds must be a BoundsProfile, got {type(bounds).__name__}")
        self.bounds = bounds
        self.chunk_length = check_chunk_length(chunk_length)

    def __setattr__(self, key: str, value: Any) -> None:
        if self._frozen:
            raise AttributeError(f"{type(self).__name__} is immutable: cannot set {key}")
        object.__setattr__(self, key, value)

    def _freeze(self) -> None:
        object.__setattr__(self, "_frozen", True)

    @property
    def n_features(self) -> int:
        return len(self.bounds.names)

    @property
    def epsilon_chunk(self) -> float:
        """ε of one chunk: the features compose sequentially."""
        return self.epsilon * self.n_features

    def _check_input(self, x: _F64) -> _F64:
        arr = np.asarray(x, dtype=np.float64)
        want = (self.chunk_length, self.n_features)
        if arr.shape != want:
            raise InputError(f"{self.name}: chunk has shape {arr.shape}, expected {want}")
        if not np.all(np.isfinite(arr)):
            r, c = np.argwhere(~np.isfinite(arr))[0]
            raise InputError(f"{self.name}: chunk value at step {r}, feature {self.bounds.names[c]} is not finite")
        return arr

    def _clip(self, x: _F64) -> tuple[_F64, int]:
        clipped = np.clip(x, self.bounds.lo, self.bounds.hi)
        return clipped, int(np.count_nonzero(clipped != x))

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """The public parameters, for the ledger."""
        return {"mechanism": self.name, "epsilon_per_feature": self.epsilon, "chunk_length": self.chunk_length}


def _laplace_columns(rng: np.random.Generator, c: _F64, scale: _F64, mask: NDArray[np.bool_] | None = None) -> _F64:
    """Lattice Laplace noise on every column at its own scale; rows outside ``mask`` (coefficients
    not released) are zero."""
    out = lattice_laplace(rng, c, scale)
    return out if mask is None else np.where(mask, out, 0.0)


class LaplacePerturbation(Mechanism):
    """LPA: discrete Laplace noise on every value of the chunk.

    Guarantee: ε-DP per feature per chunk. Neighbouring chunks may differ anywhere inside the
    bounds, so the L1 sensitivity of a feature's n values is ``n·(hi - lo)`` (plus the lattice
    charge ``n·γ``) and the noise scale ``λ = (n·(hi-lo) + n·γ)/ε``.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> m = LaplacePerturbation(epsilon=1.0, bounds=default_profile(), chunk_length=32)
    >>> out = m.privatize(np.zeros((32, 52)) + default_profile().lo, secure_generator(0))
    >>> out.values.shape
    (32, 52)
    """

    name = "lpa"

    def __init__(self, *, epsilon: float, bounds: BoundsProfile, chunk_length: int) -> None:
        super().__init__(epsilon=epsilon, bounds=bounds, chunk_length=chunk_length)
        n = self.chunk_length
        self.sensitivity = n * bounds.width
        gamma = np.array([lattice_step(s / self.epsilon) for s in self.sensitivity])
        self.noise_scale = (self.sensitivity + n * gamma) / self.epsilon
        self._freeze()

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = self._check_input(x)
        clipped, n_clip = self._clip(arr)
        out = _laplace_columns(rng, clipped, self.noise_scale)
        return MechanismOutput(out, n_clip / arr.size, np.full(arr.shape[1], self.chunk_length))


class FourierPerturbation(Mechanism):
    """The Fourier perturbation family on chunks: CFPA (``differences=False``) and DCFPA
    (``differences=True``, Bozkir et al. Algorithm 1: differences inside the chunk with the first
    value kept, FPA on them, cumulative sum).

    Guarantee: ε-DP per feature per chunk for any two chunks inside the bounds: values clipped to
    ``[lo, hi]`` and, for DCFPA, differences clipped to ``[-r, r]``, so the perturbed signal's first
    value may change by ``hi - lo`` and every other by ``2r``. Noise is discrete Laplace of scale
    ``λ = (Δ₁ + m·γ)/ε`` on each of the ``m`` released coefficients, where
    ``Δ₁ = √n·√k·Δ₂`` (DFT, Bozkir's corrected proof), ``√k·Δ₂`` (orthonormal DCT), or the exact
    L1 sensitivity of the released coefficients over the bounds box (``sensitivity="tight"``).

    Parameters
    ----------
    epsilon : float
        ε per feature per chunk (> 0).
    bounds : BoundsProfile
        Public bounds.
    chunk_length : int
        n, a power of two.
    transform : {"dft", "dct"}
    k : int or "private"
        Number of lowest coefficients kept: 1 ≤ k ≤ n/2 (DFT) or n (DCT). Default: the public
        default of the chunk length. "private" chooses k per feature and chunk with the
        exponential mechanism, spending ``k_epsilon_share`` of ε on the choice.
    sensitivity : {"bound", "tight"}
    k_epsilon_share : float
        Share of ε spent choosing k privately, in (0, 1).

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value.
    """

    name = "dcfpa"

    def __init__(
        self,
        *,
        epsilon: float,
        bounds: BoundsProfile,
        chunk_length: int,
        transform: str = "dft",
        k: int | str | None = None,
        sensitivity: str = "bound",
        differences: bool = True,
        k_epsilon_share: float = 0.1,
    ) -> None:
        super().__init__(epsilon=epsilon, bounds=bounds, chunk_length=chunk_length)
        if transform not in ("dft", "dct"):
            raise ValueError(f"transform must be 'dft' or 'dct', got {transform!r}")
        if sensitivity not in ("bound", "tight"):
            raise ValueError(f"sensitivity must be 'bound' or 'tight', got {sensitivity!r}")
        if not isinstance(differences, bool):
            raise TypeError(f"differences must be a bool, got {differences!r}")
        n = self.chunk_length
        k_max = n // 2 if transform == "dft" else n
        self.transform = transform
        self.sensitivity_mode = sensitivity
        self.differences = differences
        object.__setattr__(self, "name", "dcfpa" if differences else "cfpa")
        first_w = bounds.width
        rest_w = 2.0 * bounds.step_bound if differences else bounds.width
        if k == "private":
            share = _check_epsilon("k_epsilon_share", k_epsilon_share)
            if not share < 1.0:
                raise ValueError(f"k_epsilon_share must be in (0, 1), got {k_epsilon_share!r}")
            self.k_private = True
            self.k_epsilon_share = share
            self.k_candidates = np.arange(1, k_max + 1)
            eps_fpa = self.epsilon * (1.0 - share)
        else:
            kk = default_k(n) if k is None else _check_int("k", k)
            if not 1 <= kk <= k_max:
                raise ValueError(f"k must be in [1, {k_max}] for transform {transform!r} and n = {n}, got {kk}")
            self.k_private = False
            self.k_epsilon_share = 0.0
            self.k_candidates = np.array([kk])
            eps_fpa = self.epsilon
        self.k = None if self.k_private else int(self.k_candidates[0])
        self._transform = make_transform(transform, n, int(self.k_candidates.max()))
        # per candidate k: sensitivity (rows) per feature (columns), and the noise scale at eps_fpa
        sens = []
        exact = True
        for cand in self.k_candidates.tolist():
            s_k, ex = l1_sensitivity(transform, n, cand, first_w, rest_w, sensitivity)
            sens.append(s_k)
            exact &= ex
        self.sensitivities = np.array(sens)  # (K, F)
        self.sensitivity_exact = bool(exact and sensitivity == "tight")
        m_of_k = 2 * self.k_candidates - 1 if transform == "dft" else self.k_candidates
        gamma = np.vectorize(lattice_step)(self.sensitivities / eps_fpa)
        self.noise_scales = (self.sensitivities + m_of_k[:, None] * gamma) / eps_fpa  # (K, F)
        self.delta2 = np.sqrt(first_w**2 + (n - 1) * rest_w**2)
        self._freeze()

    @property
    def sensitivity(self) -> _F64:
        """L1 sensitivity per feature of the released coefficients (fixed k)."""
        return np.asarray(self.sensitivities[0])

    @property
    def noise_scale(self) -> _F64:
        """Laplace scale λ per feature on every released coefficient (fixed k)."""
        return np.asarray(self.noise_scales[0])

    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        clipped, n_clip = self._clip(x)
        if not self.differences:
            return clipped, n_clip
        d = np.diff(clipped, axis=0)
        r = self.bounds.step_bound
        dc = np.clip(d, -r, r)
        n_clip += int(np.count_nonzero(dc != d))
        return np.concatenate((clipped[:1], dc), axis=0), n_clip

    def _choose_k(self, xh: _F64, rng: np.random.Generator) -> NDArray[np.int64]:
        """Exponential mechanism over the candidates: utility −(residual L2 norm + expected noise
        L2 norm), sensitivity Δ₂ (the truncation is an orthogonal projection), ε·share."""
        n = self.chunk_length
        total = np.sum(xh * xh, axis=0)
        if self.transform == "dft":
            f = np.fft.rfft(xh, axis=0)
            e = np.abs(f) ** 2 / n
            e[1:] *= 2.0
            if n % 2 == 0:
                e[-1] /= 2.0  # the Nyquist bin appears once in the full spectrum
            kept = np.cumsum(e, axis=0)[: self.k_candidates.size]
            m = 2 * self.k_candidates - 1
            noise_energy = (2.0 * self.noise_scales**2) * (1 + 2 * (m[:, None] - 1)) / n
        else:
            import scipy.fft

            c = scipy.fft.dct(xh, type=2, norm="ortho", axis=0)
            kept = np.cumsum(c * c, axis=0)[: self.k_candidates.size]
            noise_energy = 2.0 * self.noise_scales**2 * self.k_candidates[:, None]
        residual = np.sqrt(np.maximum(total[None, :] - kept, 0.0))
        utility = -(residual + np.sqrt(noise_energy))  # (K, F)
        eps_k = self.epsilon * self.k_epsilon_share
        logits = eps_k * utility / (2.0 * self.delta2[None, :])
        gumbel = rng.gumbel(size=logits.shape)
        return np.asarray(self.k_candidates[np.argmax(logits + gumbel, axis=0)], dtype=np.int64)

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = self._check_input(x)
        xh, n_clip = self._prepare(arr)
        n_vals = arr.size + (arr.size - arr.shape[1] if self.differences else 0)
        y, ks = self.perturb(xh, rng)
        return MechanismOutput(y, n_clip / n_vals, ks)

    def perturb(self, xh: _F64, rng: np.random.Generator) -> tuple[_F64, NDArray[np.int64]]:
        """The perturbation proper, on an already clipped (and, for DCFPA, differenced) chunk ``x̂``:
        the guarantee is stated for any two such chunks inside the box. Returns the output chunk
        (after the inverse transform and, for DCFPA, the cumulative sum) and k per feature."""
        t = self._transform
        c = t.forward(xh)
        n_feat = xh.shape[1]
        if self.k_private:
            ks = self._choose_k(xh, rng)
            scale = self.noise_scales[ks - 1, np.arange(n_feat)]
            kmax = t.k
            rows = np.arange(t.m)[:, None]
            if self.transform == "dft":
                mask = (rows < ks[None, :]) | ((rows >= kmax) & (rows - kmax + 1 < ks[None, :]))
            else:
                mask = rows < ks[None, :]
        else:
            ks = np.full(n_feat, t.k, dtype=np.int64)
            scale = self.noise_scale
            mask = None
        y = t.inverse(_laplace_columns(rng, c, scale, mask))
        if self.differences:
            y = np.cumsum(y, axis=0)
        return y, ks

    def noiseless(self, xh: _F64) -> _F64:
        """What :meth:`perturb` would output without noise: truncation and reconstruction only."""
        t = self._transform
        y = t.inverse(t.forward(xh))
        return np.cumsum(y, axis=0) if self.differences else y

    def coefficients(self, values: _F64) -> _F64:
        """The released coefficients recovered from a perturbed chunk (post-processing is
        invertible on them): used by the audit to look at exactly what carries the noise."""
        y = np.asarray(values, dtype=np.float64)
        if self.differences:
            y = np.concatenate((y[:1], np.diff(y, axis=0)), axis=0)
        return self._transform.forward(y)

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "transform": self.transform,
            "k": "private" if self.k_private else self.k,
            "k_epsilon_share": self.k_epsilon_share,
            "sensitivity": self.sensitivity_mode
            + ("" if self.sensitivity_mode == "bound" or self.sensitivity_exact else "-upper"),
        }


def cfpa(**kwargs: Any) -> FourierPerturbation:
    """Chunk-based FPA on the values themselves (Bozkir et al.)."""
    return FourierPerturbation(differences=False, **kwargs)


def dcfpa(**kwargs: Any) -> FourierPerturbation:
    """Difference- and chunk-based FPA (Bozkir et al. Algorithm 1), streamdp's default."""
    return FourierPerturbation(differences=True, **kwargs)


class WholeSignalFPA:
    """FPA on a whole signal (Rastogi & Nath; Bozkir et al.'s corrected scale). Offline only: it
    needs the whole recording before releasing anything.

    Guarantee: ε-DP per feature for two whole signals of length N inside the box bounds:
    ``λ = √N·√k·Δ₂/ε`` (DFT) with ``Δ₂ = √N·(hi - lo)``, plus the lattice charge.
    """

    name = "fpa"

    def __init__(self, *, epsilon: float, bounds: BoundsProfile, transform: str = "dft", k: int = 20) -> None:
        self.epsilon = _check_epsilon("epsilon", epsilon)
        if not isinstance(bounds, BoundsProfile):
            raise TypeError(f"bounds must be a BoundsProfile, got {type(bounds).__name__}")
        if transform not in ("dft", "dct"):
            raise ValueError(f"transform must be 'dft' or 'dct', got {transform!r}")
        self.bounds = bounds
        self.transform = transform
        self.k = _check_int("k", k)
        if self.k < 1:
            raise ValueError(f"k must be ≥ 1, got {self.k}")

    def noise_scale(self, length: int) -> _F64:
        t = make_transform(self.transform, length, min(self.k, length // 2 if self.transform == "dft" else length))
        sens = t.l2_gain() * math.sqrt(length) * self.bounds.width
        gamma = np.array([lattice_step(s / self.epsilon) for s in sens])
        return (sens + t.m * gamma) / self.epsilon

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim != 2 or arr.shape[1] != len(self.bounds.names) or arr.shape[0] < 2:
            raise InputError(f"fpa: signal has shape {arr.shape}, expected (N ≥ 2, {len(self.bounds.names)})")
        if not np.all(np.isfinite(arr)):
            raise InputError("fpa: signal holds a non-finite value")
        n = arr.shape[0]
        k = min(self.k, n // 2 if self.transform == "dft" else n)
        t = make_transform(self.transform, n, k)
        clipped = np.clip(arr, self.bounds.lo, self.bounds.hi)
        noisy = _laplace_columns(rng, t.forward(clipped), self.noise_scale(n))
        return MechanismOutput(t.inverse(noisy), float(np.mean(clipped != arr)), np.full(arr.shape[1], k))


class SteilSubsampling(Mechanism):
    """Steil et al. 2019's mechanism with its subsampling window, as a baseline.

    Per feature and chunk, one step is drawn at random from each of the ``n/w`` non-overlapping
    windows of ``w`` steps, and the drawn values get the exponential mechanism with utility
    ``-‖p − r‖₁`` and sensitivity ``Δu = (n/w)·(hi − lo)``. The density of that mechanism is
    ``∝ exp(−ε‖p − r‖₁ / (2Δu))``: independent Laplace noise of scale ``2Δu/ε`` on each drawn value,
    which is how streamdp samples it. (The paper draws one exponential scalar and spreads it with
    random signs over all entries; that output has equal magnitudes everywhere, which is not the
    stated density and is not differentially private, since its support depends on the input.)
    The released chunk holds each drawn value over its window.

    Guarantee: ε-DP per feature per chunk (the exponential mechanism's), for chunks in the bounds.
    """

    name = "steil"

    def __init__(self, *, epsilon: float, bounds: BoundsProfile, chunk_length: int, window: int = 8) -> None:
        super().__init__(epsilon=epsilon, bounds=bounds, chunk_length=chunk_length)
        w = _check_int("window", window)
        if w < 1 or self.chunk_length % w:
            raise ValueError(f"window must divide chunk_length {self.chunk_length}, got {w}")
        self.window = w
        n_draw = self.chunk_length // w
        self.sensitivity = n_draw * bounds.width
        gamma = np.array([lattice_step(2 * s / self.epsilon) for s in self.sensitivity])
        self.noise_scale = (2.0 * (self.sensitivity + n_draw * gamma)) / self.epsilon
        self._freeze()

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = self._check_input(x)
        clipped, n_clip = self._clip(arr)
        n, f = arr.shape
        n_draw = n // self.window
        pick = rng.integers(0, self.window, size=(n_draw, f)) + (np.arange(n_draw) * self.window)[:, None]
        drawn = np.take_along_axis(clipped, pick, axis=0)
        noisy = _laplace_columns(rng, drawn, self.noise_scale)
        return MechanismOutput(np.repeat(noisy, self.window, axis=0), n_clip / arr.size, np.full(f, n_draw))

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "subsampling_window": self.window}


MECHANISMS = ("lpa", "cfpa", "dcfpa", "steil")


def make_mechanism(name: str, **kwargs: Any) -> Mechanism:
    """A chunk mechanism by name (``lpa``, ``cfpa``, ``dcfpa``, ``steil``)."""
    if name == "lpa":
        kwargs.pop("transform", None)
        kwargs.pop("k", None)
        kwargs.pop("sensitivity", None)
        return LaplacePerturbation(**kwargs)
    if name == "cfpa":
        return cfpa(**kwargs)
    if name == "dcfpa":
        return dcfpa(**kwargs)
    if name == "steil":
        for key in ("transform", "k", "sensitivity"):
            kwargs.pop(key, None)
        return SteilSubsampling(**kwargs)
    raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {name!r}")
