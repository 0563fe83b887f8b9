"""FourierPerturbation, the shared base of the Fourier chunk mechanisms (Bozkir et al. 2021), and
the parameters it adds: the calibration (sensitivity, noise scale per candidate k), the private
choice of k and the perturbation proper. The three mechanisms themselves, CFPA, the level-keeping
DCFPA (streamdp's default) and the paper's Algorithm 1 (``dcfpa-bozkir``), are in
:mod:`~streamdp.privacy.mechanisms.cfpa_dcfpa`."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..noise import lattice_step
from ..randomness import RandomSource
from ..selection import exponential_select
from ..sensitivity import clamp_to_reachable, reachable_sensitivity
from ..transforms import TRANSFORMS, LowPassTransform, l1_sensitivity
from .base import MechanismOutput, laplace_columns
from .budget import ChunkMechanism
from .parameters import TRANSFORM, Parameter, optional
from .validation import check_choice, check_fraction, check_int

_F64 = NDArray[np.float64]
_I64 = NDArray[np.int64]

#: public default number of coefficients per chunk length for CFPA and Algorithm 1 (the papers'
#: k = 1 is kept for them); the level-keeping DCFPA has its own table, :data:`DCFPA_DEFAULT_K`
DEFAULT_K: Mapping[int, int] = MappingProxyType({16: 1, 32: 1, 64: 1, 128: 1, 256: 1})

#: how the sensitivity of the released coefficients is computed: the closed form over the box,
#: the exact maximum over the box, or the exact maximum over the chunks that can occur
SENSITIVITY_MODES = ("bound", "tight", "reachable")

#: the share of ε spent choosing k privately, unless set
DEFAULT_K_EPSILON_SHARE = 0.1


def default_k(n: int) -> int:
    """The documented public k of CFPA and Algorithm 1 for a chunk length (1 beyond the table)."""
    return DEFAULT_K.get(n, 1)


K = Parameter(
    "k",
    "int | str | None",
    "Number of lowest coefficients kept: 1 ≤ k ≤ n/2 (DFT) or n (DCT). Default: the public default of the "
    'mechanism and chunk length. "private" chooses k per feature and chunk with the exponential mechanism, '
    "spending ``k_epsilon_share`` of ε on the choice.",
    default=None,
    doc_type='int or "private", optional',
)

SENSITIVITY = Parameter(
    "sensitivity",
    "str | None",
    'How the sensitivity is computed: "bound", "tight" or "reachable" (see :class:`FourierPerturbation`); '
    "the default depends on the mechanism.",
    default=None,
    check=optional(lambda name, value: check_choice(name, value, SENSITIVITY_MODES)),
    doc_type='{"bound", "tight", "reachable"}, optional',
)

K_EPSILON_SHARE = Parameter(
    "k_epsilon_share",
    "float | None",
    f"Share of ε spent choosing k privately, in (0, 1); default {DEFAULT_K_EPSILON_SHARE}. Only with "
    '``k="private"``: with a fixed k it raises ValueError.',
    default=None,
    check=optional(check_fraction),
    doc_type="float, optional",
)


def _check_k(k: object, k_max: int, transform: str, n: int, default: int) -> int | None:
    """An int in ``[1, k_max]``, or None for "private"."""
    if isinstance(k, str):
        if k != "private":
            raise ValueError(f"k must be an int or 'private', got {k!r}")
        return None
    kk = default if k is None else check_int("k", k)
    if not 1 <= kk <= k_max:
        raise ValueError(f"k must be in [1, {k_max}] for transform {transform!r} and n = {n}, got {kk}")
    return kk


class FourierPerturbation(ChunkMechanism):
    """The shared base of the Fourier mechanisms: FPA on each chunk, with the noise on the ``k``
    lowest coefficients of a DFT or DCT of a vector made from the chunk (its values, or its
    differences). Build :class:`CFPA`, :class:`DCFPA` or :class:`DCFPABozkir`; this class is abstract.

    Guarantee: ε_f-DP for each feature per chunk (unit of privacy: one chunk of one feature; the
    chunk's features compose to ``epsilon``, the total), for any two chunks: the input is first
    mapped into the public bounds. Noise is discrete Laplace of scale ``λ = (Δ₁ + m·γ)/ε`` on each
    of the ``m`` released coefficients, with ``Δ₁`` the closed form ``√n·√k·Δ₂`` (DFT, Bozkir's
    corrected proof) or ``√k·Δ₂`` (orthonormal DCT) over the box of the transformed vector
    (``sensitivity="bound"``), the exact L1 sensitivity over that box (``"tight"``), or the exact
    L1 sensitivity over the chunks that can occur, every value in ``[lo, hi]`` and every step in
    ``[-r, r]`` (``"reachable"``; the chunk is then clamped into that set, see
    :mod:`streamdp.privacy.sensitivity`). With ``k="private"`` the choice of k spends
    ``k_epsilon_share`` of each feature's ε.
    """

    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        *ChunkMechanism.parameter_table,
        TRANSFORM,
        K,
        SENSITIVITY,
        K_EPSILON_SHARE,
    )
    #: the vector transformed: see :func:`streamdp.privacy.sensitivity.release_matrix`
    preparation: ClassVar[str]
    #: the default sensitivity mode
    default_sensitivity: ClassVar[str] = "bound"

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
    _release: _F64
    _output: _F64

    def _construct(self, checked: dict[str, Any]) -> None:
        super()._construct(checked)
        transform, k, k_epsilon_share = checked["transform"], checked["k"], checked["k_epsilon_share"]
        kind = TRANSFORMS[transform]
        mode = self.default_sensitivity if checked["sensitivity"] is None else checked["sensitivity"]
        n = self.chunk_length
        k_max = kind.max_k(n)
        fixed_k = _check_k(k, k_max, transform, n, self._default_k(n, transform))
        if fixed_k is None:
            share = DEFAULT_K_EPSILON_SHARE if k_epsilon_share is None else k_epsilon_share
            k_candidates = np.arange(1, k_max + 1)
        else:
            if k_epsilon_share is not None:
                raise ValueError(f"k_epsilon_share applies only with k='private', got {k_epsilon_share!r} with k={k!r}")
            share = 0.0
            k_candidates = np.array([fixed_k])
        self._set(k_epsilon_share=share)
        eps_fpa = self._noise_epsilons * self._coefficient_share()
        first_w, rest_w = self._box_widths()
        # per candidate k: sensitivity (rows) per feature (columns), and the noise scale at eps_fpa
        sens = []
        exact = True
        for cand in k_candidates.tolist():
            s_k, ex = l1_sensitivity(transform, n, cand, first_w, rest_w, "tight" if mode == "reachable" else mode)
            if mode == "reachable":
                s_r, ex_r = reachable_sensitivity(
                    transform, n, cand, self.preparation, self.bounds.width, self.bounds.step_bound
                )
                s_k, ex = (s_r, True) if ex_r else (np.minimum(s_r, s_k), False)
            sens.append(s_k)
            exact &= ex
        sensitivities = np.array(sens)  # (K, F)
        gamma = np.vectorize(lattice_step)(sensitivities / eps_fpa)
        noise_scales = (sensitivities + kind.released(k_candidates)[:, None] * gamma) / eps_fpa  # (K, F)
        transform_k = kind(n, int(k_candidates.max()))
        release, output = self._linear_maps(transform_k)
        self._set(
            transform=transform,
            sensitivity_mode=mode,
            k_private=fixed_k is None,
            k_candidates=k_candidates,
            k=fixed_k,
            _transform=transform_k,
            _release=release,
            _output=output,
            sensitivities=sensitivities,
            sensitivity_exact=bool(exact and mode != "bound"),
            noise_scales=noise_scales,
            delta2=np.sqrt(first_w**2 + (n - 1) * rest_w**2),
        )

    def _default_k(self, n: int, transform: str) -> int:
        return default_k(n)

    def _coefficient_share(self) -> float:
        """The share of each feature's ε spent on the coefficients."""
        return 1.0 - self.k_epsilon_share

    @abstractmethod
    def _box_widths(self) -> tuple[_F64, _F64]:
        """How far the first and every other entry of the transformed vector may move between
        neighbours inside the box (for the "bound" and "tight" modes)."""

    @abstractmethod
    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        """The chunk ``x̂`` the guarantee is stated on (clipped, and for Algorithm 1 differenced),
        and the number of values the clipping changed."""

    def _checked(self, x: _F64) -> int:
        """How many values :meth:`_prepare` checks against the bounds (the clipped fraction's
        denominator)."""
        return x.size

    def _clamp(self, x: _F64) -> tuple[_F64, int]:
        """``x`` mapped into the chunks that can occur (values and steps), and how many changed."""
        b = self.bounds
        y = clamp_to_reachable(x, b.lo, b.hi, b.step_bound)
        # summation rounding is not clipping
        return y, int(np.count_nonzero(np.abs(y - x) > b.width * 1e-9))

    def _vector(self, xh: _F64) -> _F64:
        """The vector the transform applies to."""
        return xh

    def _linear_maps(self, t: LowPassTransform) -> tuple[_F64, _F64]:
        """``W`` (m' × n), the released numbers as a linear map of the prepared chunk ``x̂``, and
        ``R`` (n × m'), the output chunk as a linear map of the noisy released numbers.

        Both are fixed by the public parameters: one product each per chunk replaces the
        transform, the zero-padded inverse and the post-processing (cumulative sum, level), which
        at small ``k`` cost far more in NumPy calls than in arithmetic."""
        return t.matrix, t.inverse(np.eye(t.m))

    def _row_scales(self, scale: _F64) -> _F64:
        """The noise scale of every released row (broadcastable to ``(m', F)``) from the
        coefficients' scale per feature."""
        return scale

    def _row_mask(self, mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Which released rows carry a number, from the coefficients' release mask ``(m, F)``."""
        return mask

    @abstractmethod
    def _deconstruct(self, values: _F64) -> _F64:
        """A chunk of values back to the vector the transform applies to."""

    def arguments(self) -> dict[str, Any]:
        args = super().arguments()
        args["k"] = "private" if self.k_private else self.k
        args["sensitivity"] = self.sensitivity_mode
        if not self.k_private:
            del args["k_epsilon_share"]
        return args

    @property
    def sensitivity(self) -> _F64:
        """L1 sensitivity per feature of the released coefficients (fixed k)."""
        return np.asarray(self.sensitivities[0])

    @property
    def noise_scale(self) -> _F64:
        """Laplace scale λ per feature on every released coefficient (fixed k)."""
        return np.asarray(self.noise_scales[0])

    def _k_utility(self, v: _F64) -> _F64:
        """The utility of every candidate k (rows) per feature: −(residual L2 norm + expected
        noise L2 norm). Each entry moves by at most Δ₂ between neighbours (the truncation is an
        orthogonal projection; the noise term is public). The kept coefficients include the
        constant, so centring ``v`` leaves the residual as it is and keeps ``total − kept`` from
        cancelling on a large level: its rounding stays far below the selection's grid."""
        t = self._transform
        v = v - v.mean(axis=0)
        total = np.sum(v * v, axis=0)
        kept = t.kept_energy(v, self.k_candidates.size)
        noise_energy = t.noise_energy(self.noise_scales, self.k_candidates)
        residual = np.sqrt(np.maximum(total[None, :] - kept, 0.0))
        return np.asarray(-(residual + np.sqrt(noise_energy)))

    def _choose_k(self, v: _F64, rng: RandomSource) -> _I64:
        """The exponential mechanism over the candidates at ε·share, sampled exactly
        (:func:`~streamdp.privacy.selection.exponential_select`: utilities on a public grid
        charged to Δ₂, integer-exact Bernoulli draws; no float comparison decides)."""
        eps_k = self._noise_epsilons * self.k_epsilon_share
        chosen = exponential_select(rng, self._k_utility(v), sensitivity=self.delta2, epsilon=eps_k)
        return np.asarray(self.k_candidates[chosen], dtype=np.int64)

    def privatize(self, x: _F64, rng: RandomSource) -> MechanismOutput:
        arr = self._check_input(x)
        xh, n_clip = self._prepare(arr)
        y, ks = self.perturb(xh, rng)
        return MechanismOutput(self._public_constants(y), n_clip / self._checked(arr), ks)

    def perturb(self, xh: _F64, rng: RandomSource) -> tuple[_F64, _I64]:
        """The perturbation proper, on an already prepared chunk ``x̂`` (see :meth:`_prepare`):
        the guarantee is stated for any two such chunks. Returns the output chunk and k per feature."""
        t = self._transform
        n_feat = xh.shape[1]
        if self.k_private:
            # a feature of weight 0 is released as a public constant: so is its k
            ks = np.where(self.bounds.released, self._choose_k(self._vector(xh), rng), self.k_candidates[0])
            scale = self.noise_scales[ks - 1, np.arange(n_feat)]
            mask: NDArray[np.bool_] | None = self._row_mask(t.release_mask(ks))
        else:
            ks = np.full(n_feat, t.k, dtype=np.int64)
            scale = self.noise_scale
            mask = None
        # every released number (the level and the coefficients) in one draw
        noisy = laplace_columns(rng, self._release @ xh, self._row_scales(scale), mask)
        return self._output @ noisy, ks

    def noiseless(self, xh: _F64) -> _F64:
        """What :meth:`perturb` would output without noise: truncation and reconstruction only."""
        return np.asarray(self._output @ (self._release @ xh))

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
