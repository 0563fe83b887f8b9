"""Linear transforms of a chunk (n steps) to the coefficients a mechanism perturbs, and back.

Each transform maps a column of ``n`` values to ``m`` real numbers (the released coefficients) by
a fixed matrix ``A`` (m × n), and maps noisy coefficients back by zero-padding the rest.

- ``DFT``: numpy's unnormalized ``rfft``; the ``k`` lowest coefficients are released as their real
  parts and the imaginary parts of all but the DC term (always zero): ``m = 2k - 1``. ``k ≤ n/2``
  so that no released coefficient is its own conjugate (the Nyquist bin), which the √(nk) bound
  relies on.
- ``DCT``: orthonormal DCT-II, the ``k`` lowest coefficients: ``m = k``, ``k ≤ n``.
- ``Identity``: every value (``m = n``), for the Laplace perturbation algorithm.

DFT and DCT are the strategies of the Fourier mechanisms: besides the transform itself, each knows
its largest ``k`` for a chunk length, how many numbers ``k`` coefficients release, which rows a
per-feature ``k`` releases, and the energies the private choice of ``k`` compares.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numpy.typing import NDArray

_F64 = NDArray[np.float64]

#: sign vectors are enumerated exactly up to this many released coefficients
MAX_EXACT_COEFFICIENTS = 21


@dataclass(frozen=True)
class Transform:
    n: int
    k: int

    kind = "identity"

    @property
    def m(self) -> int:
        return self.n

    def forward(self, x: _F64) -> _F64:
        """(n, F) → (m, F) released coefficients."""
        return x

    def inverse(self, c: _F64) -> _F64:
        """(m, F) coefficients → (n, F) signal, the unreleased coefficients taken as zero."""
        return c

    def l2_gain(self) -> float:
        """``max ‖forward(d)‖₁ / ‖d‖₂``: the closed-form bound of the paper (Cauchy-Schwarz + Parseval)."""
        return math.sqrt(self.n)

    @functools.cached_property
    def matrix(self) -> _F64:
        """``A`` (m × n): column j is ``forward`` of the j-th unit vector."""
        return np.ascontiguousarray(self.forward(np.eye(self.n)))


_I64 = NDArray[np.int64]


@dataclass(frozen=True)
class LowPassTransform(Transform):
    """The ``k`` lowest coefficients of a spectral transform (the base of DFT and DCT)."""

    @staticmethod
    def max_k(n: int) -> int:
        """The largest ``k`` for a chunk of ``n`` values."""
        raise NotImplementedError

    @staticmethod
    def released(k: _I64) -> _I64:
        """How many real numbers ``k`` coefficients release (per candidate ``k``)."""
        raise NotImplementedError

    def release_mask(self, ks: _I64) -> NDArray[np.bool_]:
        """(m, F): the rows of :meth:`forward` released when feature ``f`` keeps ``ks[f] ≤ k``."""
        raise NotImplementedError

    def kept_energy(self, x: _F64, count: int) -> _F64:
        """(count, F): the squared L2 norm of ``x`` kept by the ``1..count`` lowest coefficients."""
        raise NotImplementedError

    def noise_energy(self, scales: _F64, ks: _I64) -> _F64:
        """(K, F): expected squared L2 norm, in the signal, of Laplace noise of ``scales`` (K, F)
        on the numbers released by each candidate ``k`` of ``ks`` (K,)."""
        raise NotImplementedError


@dataclass(frozen=True)
class DFT(LowPassTransform):
    kind = "dft"

    @property
    def m(self) -> int:
        return 2 * self.k - 1

    def forward(self, x: _F64) -> _F64:
        f = np.fft.rfft(x, axis=0)[: self.k]
        return np.concatenate((f.real, f.imag[1:]), axis=0)

    def inverse(self, c: _F64) -> _F64:
        k = self.k
        spec = np.zeros((self.n // 2 + 1, *c.shape[1:]), dtype=np.complex128)
        spec[:k].real = c[:k]
        spec[1:k].imag = c[k:]
        return np.fft.irfft(spec, n=self.n, axis=0)

    def l2_gain(self) -> float:
        # Bozkir et al. (8): ‖F^k‖₁ ≤ √k·‖F^k‖₂ ≤ √k·√n·‖x‖₂ (unnormalized DFT, Parseval); with
        # real and imaginary parts released separately the bound still holds because the
        # conjugate bins share the energy (see docs/privacy.md)
        return math.sqrt(self.n) * math.sqrt(self.k)

    @staticmethod
    def max_k(n: int) -> int:
        return n // 2

    @staticmethod
    def released(k: _I64) -> _I64:
        return 2 * k - 1

    def release_mask(self, ks: _I64) -> NDArray[np.bool_]:
        rows = np.arange(self.m)[:, None]
        kmax = self.k
        return np.asarray((rows < ks[None, :]) | ((rows >= kmax) & (rows - kmax + 1 < ks[None, :])))

    def kept_energy(self, x: _F64, count: int) -> _F64:
        n = self.n
        f = np.fft.rfft(x, axis=0)
        e = np.abs(f) ** 2 / n
        e[1:] *= 2.0
        if n % 2 == 0:
            e[-1] /= 2.0  # the Nyquist bin appears once in the full spectrum
        return np.asarray(np.cumsum(e, axis=0)[:count])

    def noise_energy(self, scales: _F64, ks: _I64) -> _F64:
        m = self.released(ks)
        return np.asarray((2.0 * scales**2) * (1 + 2 * (m[:, None] - 1)) / self.n)


@dataclass(frozen=True)
class DCT(LowPassTransform):
    kind = "dct"

    @property
    def m(self) -> int:
        return self.k

    def forward(self, x: _F64) -> _F64:
        # scipy.fft (with scipy.special, ~20 MB) is imported only when a DCT is used: the default
        # DFT mechanisms in the relay and the Capture plugin do not carry it
        from scipy.fft import dct

        return np.asarray(dct(x, type=2, norm="ortho", axis=0)[: self.k])

    def inverse(self, c: _F64) -> _F64:
        from scipy.fft import idct

        full = np.zeros((self.n, *c.shape[1:]))
        full[: self.k] = c
        return np.asarray(idct(full, type=2, norm="ortho", axis=0))

    def l2_gain(self) -> float:
        # orthonormal: ‖C^k d‖₂ ≤ ‖d‖₂, and ‖·‖₁ ≤ √k‖·‖₂
        return math.sqrt(self.k)

    @staticmethod
    def max_k(n: int) -> int:
        return n

    @staticmethod
    def released(k: _I64) -> _I64:
        return k

    def release_mask(self, ks: _I64) -> NDArray[np.bool_]:
        return np.asarray(np.arange(self.m)[:, None] < ks[None, :])

    def kept_energy(self, x: _F64, count: int) -> _F64:
        from scipy.fft import dct

        c = dct(x, type=2, norm="ortho", axis=0)
        return np.asarray(np.cumsum(c * c, axis=0)[:count])

    def noise_energy(self, scales: _F64, ks: _I64) -> _F64:
        return np.asarray(2.0 * scales**2 * ks[:, None])


#: the transforms a Fourier mechanism may use, by name
TRANSFORMS: Mapping[str, type[LowPassTransform]] = MappingProxyType({"dft": DFT, "dct": DCT})


def make_transform(kind: str, n: int, k: int) -> Transform:
    """The transform ``kind`` ("dft", "dct" or "identity") of a chunk of ``n`` values keeping ``k``
    coefficients.

    Raises
    ------
    ValueError
        ``kind`` is none of these.

    Examples
    --------
    >>> make_transform("dft", 8, 2).m
    3
    """
    if kind == "identity":
        return Transform(n, n)
    if kind not in TRANSFORMS:
        raise ValueError(f"transform must be 'dft' or 'dct', got {kind!r}")
    return TRANSFORMS[kind](n, k)


@functools.lru_cache(maxsize=64)
def _vertex_table(kind: str, n: int, k: int) -> tuple[_F64, _F64] | None:
    """For every sign vector s (first sign fixed by symmetry): ``P(s) = |(Aᵀs)₀|`` and
    ``Q(s) = Σ_{j≥1} |(Aᵀs)_j|``. None when there are too many coefficients to enumerate."""
    t = make_transform(kind, n, k)
    m = t.m
    if m > MAX_EXACT_COEFFICIENTS:
        return None
    a = t.matrix  # (m, n)
    count = 1 << (m - 1)
    p = np.empty(count)
    q = np.empty(count)
    block = 1 << 14
    bits = np.arange(m - 1)
    for start in range(0, count, block):
        idx = np.arange(start, min(count, start + block))
        signs = np.ones((idx.size, m))
        signs[:, 1:] = 1 - 2 * ((idx[:, None] >> bits) & 1)
        at_s = np.abs(signs @ a)  # (B, n)
        p[idx] = at_s[:, 0]
        q[idx] = at_s[:, 1:].sum(axis=1)
    return _pareto_front(p, q)


def _pareto_front(p: _F64, q: _F64) -> tuple[_F64, _F64]:
    """The points ``(p, q)`` no other point matches or beats in both coordinates. For weights
    ``w₀, w ≥ 0`` the maximum of ``w₀·p + w·q`` is reached on them, to the bit: a dominated
    point cannot give more, floating-point products and sums being monotone."""
    order = np.lexsort((-q, -p))  # p descending, then q descending
    p, q = p[order], q[order]
    # keep a point when its q beats every q of the points with a larger (or equal) p before it
    best_before = np.maximum.accumulate(np.concatenate(([-np.inf], q[:-1])))
    keep = q > best_before
    return np.ascontiguousarray(p[keep]), np.ascontiguousarray(q[keep])


def l1_sensitivity(kind: str, n: int, k: int, first_width: _F64, rest_width: _F64, mode: str) -> tuple[_F64, bool]:
    """L1 sensitivity of the released coefficients for each feature, when neighbouring chunks differ
    by at most ``first_width`` in their first value and ``rest_width`` in every other one.

    ``mode="bound"``: the closed form ``gain · Δ₂`` with ``Δ₂ = √(w₀² + (n-1)·w²)``.
    ``mode="tight"``: ``max over the box of ‖A d‖₁``, a convex maximum reached at a vertex,
    computed exactly by enumerating the sign vectors of the released coefficients when there are at
    most 21 of them; beyond that the elementwise bound ``Σᵢⱼ |Aᵢⱼ| w_j`` (never above the closed
    form it replaces). Returns the sensitivities and whether they are exact.
    """
    t = make_transform(kind, n, k)
    delta2 = np.sqrt(first_width**2 + (n - 1) * rest_width**2)
    closed = t.l2_gain() * delta2
    if kind == "identity":
        return first_width + (n - 1) * rest_width, True
    if mode == "bound":
        return closed, False
    table = _vertex_table(kind, n, k)
    if table is not None:
        p, q = table
        # for each feature the maximum of a linear function over the precomputed vertices
        exact = np.array([np.max(w0 * p + w * q) for w0, w in zip(first_width, rest_width, strict=True)])
        return exact, True
    col = np.abs(t.matrix).sum(axis=0)
    elementwise = first_width * col[0] + rest_width * col[1:].sum()
    return np.minimum(elementwise, closed), False
