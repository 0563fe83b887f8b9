"""The Fourier perturbation family on chunks: CFPA and DCFPA (Bozkir et al. 2021)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..bounds import BoundsProfile
from ..noise import lattice_step
from ..transforms import TRANSFORMS, LowPassTransform, l1_sensitivity
from .base import Mechanism, MechanismOutput, laplace_columns
from .validation import check_choice, check_fraction, check_int

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]

#: public default number of coefficients per chunk length, chosen on synthetic (public) data
#: only: the k of lowest mean NMSE for DCFPA-DFT at ε = 1 per feature (docs/privacy.md)
DEFAULT_K: Mapping[int, int] = MappingProxyType({16: 1, 32: 1, 64: 1, 128: 1, 256: 1})

#: how the sensitivity of the released coefficients is computed
SENSITIVITY_MODES = ("bound", "tight")

#: the share of ε spent choosing k privately, unless set
DEFAULT_K_EPSILON_SHARE = 0.1


def default_k(n: int) -> int:
    """The documented public k for a chunk length (1 beyond the table)."""
    return DEFAULT_K.get(n, 1)


def _check_k(k: object, k_max: int, transform: str, n: int) -> int | None:
    """An int in ``[1, k_max]``, or None for "private"."""
    if isinstance(k, str):
        if k != "private":
            raise ValueError(f"k must be an int or 'private', got {k!r}")
        return None
    kk = default_k(n) if k is None else check_int("k", k)
    if not 1 <= kk <= k_max:
        raise ValueError(f"k must be in [1, {k_max}] for transform {transform!r} and n = {n}, got {kk}")
    return kk


class FourierPerturbation(Mechanism):
    """The shared base of CFPA and DCFPA: FPA on each chunk, with the noise on the ``k`` lowest
    coefficients of a DFT or DCT. Build :class:`CFPA` or :class:`DCFPA`; this class is abstract.

    Guarantee: ε-DP per feature per chunk (unit of privacy: one chunk of one feature) for any two
    chunks inside the bounds: values clipped to ``[lo, hi]`` and, for DCFPA, differences clipped to
    ``[-r, r]``, so the perturbed signal's first value may change by ``hi - lo`` and every other
    by ``2r`` (DCFPA) or ``hi - lo`` (CFPA). Noise is discrete Laplace of scale
    ``λ = (Δ₁ + m·γ)/ε`` on each of the ``m`` released coefficients, where ``Δ₁ = √n·√k·Δ₂`` (DFT,
    Bozkir's corrected proof), ``√k·Δ₂`` (orthonormal DCT), or the exact L1 sensitivity of the
    released coefficients over the bounds box (``sensitivity="tight"``). With ``k="private"``
    the choice of k spends ``k_epsilon_share·ε`` and the perturbation the rest: ε in total.

    Parameters
    ----------
    epsilon : float
        ε per feature per chunk, finite and > 0.
    bounds : BoundsProfile
        The public bounds.
    chunk_length : int
        n, a power of two ≥ 2.
    transform : {"dft", "dct"}
        The transform, default "dft".
    k : int or "private", optional
        Number of lowest coefficients kept: 1 ≤ k ≤ n/2 (DFT) or n (DCT). Default: the public
        default of the chunk length (:data:`DEFAULT_K`). "private" chooses k per feature and
        chunk with the exponential mechanism, spending ``k_epsilon_share`` of ε on the choice.
    sensitivity : {"bound", "tight"}
        The closed-form bound (default) or the exact L1 sensitivity over the bounds box.
    k_epsilon_share : float, optional
        Share of ε spent choosing k privately, in (0, 1); default 0.1. Only with ``k="private"``.

    Raises
    ------
    TypeError, ValueError
        A parameter of the wrong type or out of range, named with its value; ``k_epsilon_share``
        with a fixed k.
    """

    parameters: ClassVar[tuple[str, ...]] = (
        "epsilon",
        "bounds",
        "chunk_length",
        "transform",
        "k",
        "sensitivity",
        "k_epsilon_share",
    )
    #: whether the chunk is differenced before the transform (DCFPA) or not (CFPA)
    differences: ClassVar[bool]

    transform: str
    sensitivity_mode: str
    k_private: bool
    k_epsilon_share: float
    k_candidates: _I64
    k: int | None
    sensitivities: _F64
    sensitivity_exact: bool
    noise_scales: _F64
    delta2: _F64
    _transform: LowPassTransform

    def __init__(
        self,
        *,
        epsilon: float,
        bounds: BoundsProfile,
        chunk_length: int,
        transform: str = "dft",
        k: int | str | None = None,
        sensitivity: str = "bound",
        k_epsilon_share: float | None = None,
    ) -> None:
        super().__init__(epsilon=epsilon, bounds=bounds, chunk_length=chunk_length)
        kind = TRANSFORMS[check_choice("transform", transform, tuple(TRANSFORMS))]
        mode = check_choice("sensitivity", sensitivity, SENSITIVITY_MODES)
        n = self.chunk_length
        k_max = kind.max_k(n)
        fixed_k = _check_k(k, k_max, transform, n)
        if fixed_k is None:
            share = DEFAULT_K_EPSILON_SHARE
            if k_epsilon_share is not None:
                share = check_fraction("k_epsilon_share", k_epsilon_share)
            k_candidates = np.arange(1, k_max + 1)
            eps_fpa = self.epsilon * (1.0 - share)
        else:
            if k_epsilon_share is not None:
                raise ValueError(f"k_epsilon_share applies only with k='private', got {k_epsilon_share!r} with k={k!r}")
            share = 0.0
            k_candidates = np.array([fixed_k])
            eps_fpa = self.epsilon
        first_w = self.bounds.width
        rest_w = self._rest_width()
        # per candidate k: sensitivity (rows) per feature (columns), and the noise scale at eps_fpa
        sens = []
        exact = True
        for cand in k_candidates.tolist():
            s_k, ex = l1_sensitivity(transform, n, cand, first_w, rest_w, mode)
            sens.append(s_k)
            exact &= ex
        sensitivities = np.array(sens)  # (K, F)
        gamma = np.vectorize(lattice_step)(sensitivities / eps_fpa)
        noise_scales = (sensitivities + kind.released(k_candidates)[:, None] * gamma) / eps_fpa  # (K, F)
        self._set(
            transform=transform,
            sensitivity_mode=mode,
            k_private=fixed_k is None,
            k_epsilon_share=share,
            k_candidates=k_candidates,
            k=fixed_k,
            _transform=kind(n, int(k_candidates.max())),
            sensitivities=sensitivities,
            sensitivity_exact=bool(exact and mode == "tight"),
            noise_scales=noise_scales,
            delta2=np.sqrt(first_w**2 + (n - 1) * rest_w**2),
        )

    @abstractmethod
    def _rest_width(self) -> _F64:
        """How far every value of the perturbed chunk but the first may move between neighbours."""

    @abstractmethod
    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        """The chunk ``x̂`` the guarantee is stated on: the clipped chunk (and, for DCFPA, its
        clipped differences), and the number of values clipped."""

    @abstractmethod
    def _checked(self, x: _F64) -> int:
        """How many values :meth:`_prepare` checks against the bounds (the clipped fraction's
        denominator)."""

    @abstractmethod
    def _reconstruct(self, y: _F64) -> _F64:
        """``x̂`` back to a chunk of values (the inverse of the differencing in :meth:`_prepare`)."""

    @abstractmethod
    def _deconstruct(self, values: _F64) -> _F64:
        """A chunk of values to ``x̂`` (the differencing of :meth:`_prepare`, without clipping)."""

    def arguments(self) -> dict[str, Any]:
        args: dict[str, Any] = {
            "epsilon": self.epsilon,
            "bounds": self.bounds,
            "chunk_length": self.chunk_length,
            "transform": self.transform,
            "k": "private" if self.k_private else self.k,
            "sensitivity": self.sensitivity_mode,
        }
        if self.k_private:
            args["k_epsilon_share"] = self.k_epsilon_share
        return args

    @property
    def sensitivity(self) -> _F64:
        """L1 sensitivity per feature of the released coefficients (fixed k)."""
        return np.asarray(self.sensitivities[0])

    @property
    def noise_scale(self) -> _F64:
        """Laplace scale λ per feature on every released coefficient (fixed k)."""
        return np.asarray(self.noise_scales[0])

    def _choose_k(self, xh: _F64, rng: np.random.Generator) -> _I64:
        """Exponential mechanism over the candidates: utility −(residual L2 norm + expected noise
        L2 norm), sensitivity Δ₂ (the truncation is an orthogonal projection), ε·share."""
        t = self._transform
        total = np.sum(xh * xh, axis=0)
        kept = t.kept_energy(xh, self.k_candidates.size)
        noise_energy = t.noise_energy(self.noise_scales, self.k_candidates)
        residual = np.sqrt(np.maximum(total[None, :] - kept, 0.0))
        utility = -(residual + np.sqrt(noise_energy))  # (K, F)
        eps_k = self.epsilon * self.k_epsilon_share
        logits = eps_k * utility / (2.0 * self.delta2[None, :])
        gumbel = rng.gumbel(size=logits.shape)
        return np.asarray(self.k_candidates[np.argmax(logits + gumbel, axis=0)], dtype=np.int64)

    def privatize(self, x: _F64, rng: np.random.Generator) -> MechanismOutput:
        arr = self._check_input(x)
        xh, n_clip = self._prepare(arr)
        y, ks = self.perturb(xh, rng)
        return MechanismOutput(y, n_clip / self._checked(arr), ks)

    def perturb(self, xh: _F64, rng: np.random.Generator) -> tuple[_F64, _I64]:
        """The perturbation proper, on an already clipped (and, for DCFPA, differenced) chunk ``x̂``:
        the guarantee is stated for any two such chunks inside the box. Returns the output chunk
        (after the inverse transform and, for DCFPA, the cumulative sum) and k per feature."""
        t = self._transform
        c = t.forward(xh)
        n_feat = xh.shape[1]
        if self.k_private:
            ks = self._choose_k(xh, rng)
            scale = self.noise_scales[ks - 1, np.arange(n_feat)]
            mask: NDArray[np.bool_] | None = t.release_mask(ks)
        else:
            ks = np.full(n_feat, t.k, dtype=np.int64)
            scale = self.noise_scale
            mask = None
        return self._reconstruct(t.inverse(laplace_columns(rng, c, scale, mask))), ks

    def noiseless(self, xh: _F64) -> _F64:
        """What :meth:`perturb` would output without noise: truncation and reconstruction only."""
        t = self._transform
        return self._reconstruct(t.inverse(t.forward(xh)))

    def coefficients(self, values: _F64) -> _F64:
        """The released coefficients recovered from a perturbed chunk (post-processing is
        invertible on them): used by the audit to look at exactly what carries the noise."""
        return self._transform.forward(self._deconstruct(np.asarray(values, dtype=np.float64)))

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "transform": self.transform,
            "k": "private" if self.k_private else self.k,
            "k_epsilon_share": self.k_epsilon_share,
            "sensitivity": self.sensitivity_mode
            + ("" if self.sensitivity_mode == "bound" or self.sensitivity_exact else "-upper"),
        }


class CFPA(FourierPerturbation):
    """CFPA: chunk-based FPA on the values themselves (Bozkir et al.).

    Guarantee: ε-DP per feature per chunk (unit of privacy: one chunk of one feature); every value
    may move by ``hi - lo`` between neighbours, so ``Δ₂ = √n·(hi - lo)``. Parameters, noise and
    ``k`` as in :class:`FourierPerturbation`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> CFPA(epsilon=1.0, bounds=default_profile(), chunk_length=32, transform="dct", k=4)
    CFPA(epsilon=1.0, chunk_length=32, transform='dct', k=4, sensitivity='bound', bounds=<'default', 52 features>)
    """

    name: ClassVar[str] = "cfpa"
    differences: ClassVar[bool] = False

    def _rest_width(self) -> _F64:
        return self.bounds.width

    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        return self._clip(x)

    def _checked(self, x: _F64) -> int:
        return x.size

    def _reconstruct(self, y: _F64) -> _F64:
        return y

    def _deconstruct(self, values: _F64) -> _F64:
        return values


class DCFPA(FourierPerturbation):
    """DCFPA: difference- and chunk-based FPA (Bozkir et al. Algorithm 1), streamdp's default:
    differences inside the chunk with the first value kept, FPA on them, cumulative sum.

    Guarantee: ε-DP per feature per chunk (unit of privacy: one chunk of one feature); values are
    clipped to ``[lo, hi]`` and differences to ``[-r, r]``, so the first value may move by
    ``hi - lo`` and every difference by ``2r``: ``Δ₂ = √((hi - lo)² + (n - 1)(2r)²)``. Parameters,
    noise and ``k`` as in :class:`FourierPerturbation`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> m = DCFPA(epsilon=1.0, bounds=default_profile(), chunk_length=64)
    >>> m
    DCFPA(epsilon=1.0, chunk_length=64, transform='dft', k=1, sensitivity='bound', bounds=<'default', 52 features>)
    >>> m.privatize(np.tile(default_profile().lo, (64, 1)), secure_generator(0)).values.shape
    (64, 52)
    """

    name: ClassVar[str] = "dcfpa"
    differences: ClassVar[bool] = True

    def _rest_width(self) -> _F64:
        return 2.0 * self.bounds.step_bound

    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        clipped, n_clip = self._clip(x)
        d = np.diff(clipped, axis=0)
        r = self.bounds.step_bound
        dc = np.clip(d, -r, r)
        n_clip += int(np.count_nonzero(dc != d))
        return np.concatenate((clipped[:1], dc), axis=0), n_clip

    def _checked(self, x: _F64) -> int:
        return x.size + (x.size - x.shape[1])  # the values, and the differences

    def _reconstruct(self, y: _F64) -> _F64:
        return np.cumsum(y, axis=0)

    def _deconstruct(self, values: _F64) -> _F64:
        return np.concatenate((values[:1], np.diff(values, axis=0)), axis=0)
