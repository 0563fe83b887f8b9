"""The three Fourier chunk mechanisms, CFPA, the level-keeping DCFPA (streamdp's default) and
Bozkir et al.'s Algorithm 1 (``dcfpa-bozkir``), and their factories by the papers' names,
``cfpa(...)``, ``dcfpa(...)`` and ``dcfpa_bozkir(...)``, which take their class's parameters.
Their shared base is :class:`~streamdp.privacy.mechanisms.fourier_perturbation.FourierPerturbation`."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from ..noise import lattice_step
from ..sensitivity import release_matrix
from ..transforms import LowPassTransform
from .fourier_perturbation import FourierPerturbation
from .parameters import Parameter, takes_parameters_of
from .validation import check_fraction

_F64 = NDArray[np.float64]

#: the level-keeping DCFPA's public k per chunk length and transform, chosen on public synthetic
#: data only (``benchmarks/compare_dcfpa.py``, docs/privacy.md): k = 1 (level and the line from
#: the first to the last value) had the lowest error at every n and total ε ≤ 52·48; k = 2 wins
#: only without noise
DCFPA_DEFAULT_K: Mapping[str, Mapping[int, int]] = MappingProxyType(
    {
        "dft": MappingProxyType({16: 1, 32: 1, 64: 1, 128: 1, 256: 1}),
        "dct": MappingProxyType({16: 1, 32: 1, 64: 1, 128: 1, 256: 1}),
    }
)

#: the share of each feature's ε the level-keeping DCFPA spends on the chunk's level: the best of
#: 0.2–0.9 on public synthetic data (``benchmarks/compare_dcfpa.py``)
DEFAULT_LEVEL_SHARE = 0.5


class CFPA(FourierPerturbation):
    """CFPA: chunk-based FPA on the values themselves (Bozkir et al.).

    Guarantee: ε_f-DP per feature per chunk (unit of privacy: one chunk of one feature); the
    chunk's features compose to the total ``epsilon``. Values are clipped to ``[lo, hi]`` (with
    ``sensitivity="reachable"``: clamped into the chunks that can occur), so every value may move
    by ``hi - lo`` and ``Δ₂ = √n·(hi - lo)``. Parameters, noise and ``k`` as in
    :class:`FourierPerturbation`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> CFPA(epsilon=52.0, bounds=default_profile(), chunk_length=32, transform="dct", k=4)
    CFPA(epsilon=52.0, chunk_length=32, transform='dct', k=4, sensitivity='bound', bounds=<'default', 52 features>)
    """

    name: ClassVar[str] = "cfpa"
    preparation: ClassVar[str] = "values"

    def _box_widths(self) -> tuple[_F64, _F64]:
        return self.bounds.width, self.bounds.width

    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        return self._clamp(x) if self.sensitivity_mode == "reachable" else self._clip(x)

    def _deconstruct(self, values: _F64) -> _F64:
        return values


class DCFPABozkir(FourierPerturbation):
    """Bozkir et al.'s Algorithm 1, as published: differences inside the chunk with the first value
    kept, FPA on ``[x₁, d₂ … dₙ]``, cumulative sum.

    Kept for comparison with the paper. With k = 1 it returns a constant chunk as a ramp from
    ``x/n`` to ``x`` even without noise: the DC term of ``[x₁, d₂ … dₙ]`` is the last value, which
    the inverse spreads evenly. :class:`DCFPA` keeps the level.

    Guarantee: ε_f-DP per feature per chunk (unit of privacy: one chunk of one feature); values are
    clipped to ``[lo, hi]`` and differences to ``[-r, r]``, so the first value may move by
    ``hi - lo`` and every difference by ``2r``: ``Δ₂ = √((hi - lo)² + (n - 1)(2r)²)``; with
    ``sensitivity="reachable"`` the chunk is clamped into the chunks that can occur and the exact
    sensitivity over them is used. Parameters, noise and ``k`` as in :class:`FourierPerturbation`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> m = DCFPABozkir(epsilon_per_feature=1.0, bounds=default_profile(), chunk_length=64)
    >>> m.epsilon, m.name
    (52.0, 'dcfpa-bozkir')
    """

    name: ClassVar[str] = "dcfpa-bozkir"
    preparation: ClassVar[str] = "first-and-differences"

    def _box_widths(self) -> tuple[_F64, _F64]:
        return self.bounds.width, 2.0 * self.bounds.step_bound

    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        if self.sensitivity_mode == "reachable":
            y, n_clip = self._clamp(x)
            return self._deconstruct(y), n_clip
        clipped, n_clip = self._clip(x)
        d = np.diff(clipped, axis=0)
        r = self.bounds.step_bound
        dc = np.clip(d, -r, r)
        n_clip += int(np.count_nonzero(dc != d))
        return np.concatenate((clipped[:1], dc), axis=0), n_clip

    def _checked(self, x: _F64) -> int:
        if self.sensitivity_mode == "reachable":
            return x.size
        return x.size + (x.size - x.shape[1])  # the values, and the differences

    def _linear_maps(self, t: LowPassTransform) -> tuple[_F64, _F64]:
        # the output is the cumulative sum of the low-pass vector
        return t.matrix, np.cumsum(t.inverse(np.eye(t.m)), axis=0)

    def _deconstruct(self, values: _F64) -> _F64:
        return np.concatenate((values[:1], np.diff(values, axis=0)), axis=0)


class DCFPA(FourierPerturbation):
    """DCFPA that keeps level and shape, streamdp's default: the chunk's **level** (its mean) is
    released with its own share of ε, and FPA runs on its **differences** ``[0, d₂ … dₙ]``; the
    output is the cumulative sum of the noisy low-pass differences, shifted to the noisy level.

    A constant chunk comes back exactly without noise, for every k (its differences are zero and
    its level is its value); a chunk's trend comes back from the low differences (k = 1 on the DFT
    is the line from its first to its last value). Bozkir et al.'s Algorithm 1, which loses the
    level at k = 1, is :class:`DCFPABozkir` (``"dcfpa-bozkir"``).

    Guarantee: ε_f-DP per feature per chunk (unit of privacy: one chunk of one feature), the
    chunk's features composing to the total ``epsilon``. The chunk is clamped into the chunks that
    can occur (values in ``[lo, hi]``, steps in ``[-r, r]``). The level (mean, sensitivity
    ``hi - lo``) gets discrete Laplace noise of scale ``(hi - lo + γ)/(s·ε_f)`` with
    ``s = level_share``; the coefficients ``((1 − s − k share)·ε_f)``-DP as in
    :class:`FourierPerturbation`, by default with their exact sensitivity over the chunks that can
    occur (``sensitivity="reachable"``). Sequential composition: ε_f per feature.

    ``k`` defaults to :data:`DCFPA_DEFAULT_K`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile, secure_generator
    >>> b = default_profile()
    >>> m = DCFPA(epsilon=52.0, bounds=b, chunk_length=64)
    >>> m.arguments()["k"], m.sensitivity_mode, m.level_share
    (1, 'reachable', 0.5)
    >>> const = np.tile((b.lo + b.hi) / 2, (64, 1))
    >>> bool(np.allclose(m.noiseless(m._prepare(const)[0]), const))
    True
    """

    name: ClassVar[str] = "dcfpa"
    preparation: ClassVar[str] = "differences"
    default_sensitivity: ClassVar[str] = "reachable"
    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        *FourierPerturbation.parameter_table,
        Parameter(
            "level_share",
            "float",
            "Share of each feature's ε spent on the level, in (0, 1) (:data:`DEFAULT_LEVEL_SHARE`). With "
            '``k="private"``, ``level_share + k_epsilon_share < 1``.',
            default=DEFAULT_LEVEL_SHARE,
            check=check_fraction,
        ),
    )

    level_share: float
    level_sensitivity: _F64
    level_noise_scale: _F64

    def _construct(self, checked: dict[str, Any]) -> None:
        share = checked["level_share"]
        self._set(level_share=share)  # read by _coefficient_share while the base calibrates
        super()._construct(checked)
        if share + self.k_epsilon_share >= 1.0:
            raise ValueError(f"level_share + k_epsilon_share must be < 1, got {share!r} + {self.k_epsilon_share!r}")
        eps_level = self._noise_epsilons * share
        sens = self.bounds.width
        gamma = np.array([lattice_step(s / e) for s, e in zip(sens, eps_level, strict=True)])
        self._set(level_sensitivity=sens, level_noise_scale=(sens + gamma) / eps_level)

    def _default_k(self, n: int, transform: str) -> int:
        return DCFPA_DEFAULT_K[transform].get(n, 1)

    def _coefficient_share(self) -> float:
        return max(1.0 - self.level_share - self.k_epsilon_share, 1e-12)

    def _box_widths(self) -> tuple[_F64, _F64]:
        return np.zeros_like(self.bounds.width), 2.0 * self.bounds.step_bound

    def _prepare(self, x: _F64) -> tuple[_F64, int]:
        return self._clamp(x)

    def _vector(self, xh: _F64) -> _F64:
        return self._deconstruct(xh)

    def _linear_maps(self, t: LowPassTransform) -> tuple[_F64, _F64]:
        # row 0 the level (the mean), then the coefficients of [0, d₂ … dₙ]; the output is the
        # cumulative sum of the low-pass differences, centred, plus the level
        n = self.chunk_length
        steps = np.cumsum(t.inverse(np.eye(t.m)), axis=0)
        release = np.vstack((np.full((1, n), 1.0 / n), release_matrix(t.kind, n, t.k, self.preparation)))
        return release, np.hstack((np.ones((n, 1)), steps - steps.mean(axis=0)))

    def _row_scales(self, scale: _F64) -> _F64:
        rows = np.broadcast_to(scale, (self._transform.m, self.level_noise_scale.size))
        return np.concatenate((self.level_noise_scale[None, :], rows))

    def _row_mask(self, mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        return np.concatenate((np.ones((1, mask.shape[1]), dtype=bool), mask))

    def _deconstruct(self, values: _F64) -> _F64:
        out = np.zeros_like(values)
        out[1:] = np.diff(values, axis=0)
        return out

    def coefficients(self, values: _F64) -> _F64:
        """The released numbers recovered from a perturbed chunk: its level (first row) and the
        coefficients of its differences (least squares on the steps, which the low-pass inverse
        determines for every k < n)."""
        v = np.asarray(values, dtype=np.float64)
        t = self._transform
        inverse = t.inverse(np.eye(t.m))  # (n, m)
        coef, *_ = np.linalg.lstsq(inverse[1:], np.diff(v, axis=0), rcond=None)
        return np.concatenate((v.mean(axis=0, keepdims=True), coef), axis=0)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "level_share": self.level_share}


@takes_parameters_of(CFPA)
def cfpa(**arguments: Any) -> CFPA:
    """Chunk-based FPA on the values themselves (Bozkir et al.): a :class:`CFPA`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> cfpa(epsilon=26.0, bounds=default_profile(), chunk_length=16, k=2).describe()["k"]
    2
    """
    return CFPA(**arguments)


@takes_parameters_of(DCFPA)
def dcfpa(**arguments: Any) -> DCFPA:
    """DCFPA that keeps level and shape, streamdp's default: a :class:`DCFPA`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> dcfpa(epsilon=52.0, bounds=default_profile(), chunk_length=32).describe()["mechanism"]
    'dcfpa'
    >>> dcfpa(epsilon=52.0, bounds=default_profile(), chunk_length=30)
    Traceback (most recent call last):
    ...
    ValueError: chunk_length must be a power of two ≥ 2, got 30
    """
    return DCFPA(**arguments)


@takes_parameters_of(DCFPABozkir)
def dcfpa_bozkir(**arguments: Any) -> DCFPABozkir:
    """Bozkir et al.'s Algorithm 1 as published (``"dcfpa-bozkir"``): a :class:`DCFPABozkir`.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> dcfpa_bozkir(epsilon_per_feature=1.0, bounds=default_profile(), chunk_length=32).describe()["epsilon"]
    52.0
    """
    return DCFPABozkir(**arguments)
