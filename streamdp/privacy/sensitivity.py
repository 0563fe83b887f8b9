"""Exact L1 sensitivity of a chunk mechanism's released coefficients over the chunks that can occur.

A feature's chunk ``y`` (n values) can really occur under the public bounds when every value lies
in ``[lo, hi]`` and every step in ``[-r, r]``: the *reachable set*

    P = {y : lo ≤ yᵢ ≤ hi, |yᵢ₊₁ − yᵢ| ≤ r}.

:func:`clamp_to_reachable` maps any chunk into ``P`` (and leaves a chunk of ``P`` unchanged), so a
mechanism that clamps first needs its noise calibrated to ``P`` only. A mechanism releasing the
linear map ``c = B·y`` (``B``: m × n, e.g. the k lowest DFT coefficients of the chunk's differences)
has the L1 sensitivity ``max_{y, y' ∈ P} ‖B(y − y')‖₁``. ``P`` is symmetric about its centre, so
``P − P = 2·P₀`` with ``P₀ = {|yᵢ| ≤ h, |yᵢ₊₁ − yᵢ| ≤ r}``, ``h = (hi − lo)/2``, and the sensitivity
is ``2·max_{y ∈ P₀} ‖B y‖₁``, a convex maximum attained at a vertex of ``P₀``:

- ``‖B y‖₁ = max_s sᵀB y`` over sign vectors ``s``, so the maximum is the largest of ``2^(m-1)``
  linear programmes (``s₁ = +1`` by the symmetry ``y → −y``), solved with HiGHS and rounded up by
  a relative 1e-6 to cover the solver's tolerance;
- when ``r ≥ 2h`` the step bound never binds, ``P₀`` is a box and each programme has the closed
  form ``h·‖Bᵀs‖₁``;
- beyond :data:`MAX_ENUMERATED` released numbers, the maximum over the box of values (exact up to
  16 numbers, else ``h·Σ|Bᵢⱼ|``), a sound bound flagged as not exact.

The old "tight" mode maximised over the box ``first value in [lo, hi], differences in [-r, r]``
independently; but differences telescope to the last value, which lies in ``[lo, hi]``: for the
features whose ``r`` equals their range (maxima, minima, ranges) the box costs 63× (n = 32) and
127× (n = 64) more noise at k = 1.

Everything is computed from the bounds alone and cached on hashable inputs.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .transforms import make_transform

_F64 = NDArray[np.float64]

#: sign vectors are enumerated (one linear programme each) up to this many released numbers
MAX_ENUMERATED = 8

#: how a mechanism turns the chunk into the vector it transforms
PREPARATIONS = ("values", "first-and-differences", "differences")

#: relative margin on every linear programme's optimum (HiGHS's tolerances are ~1e-7)
LP_MARGIN = 1e-6


@functools.lru_cache(maxsize=256)
def release_matrix(kind: str, n: int, k: int, preparation: str) -> _F64:
    """``B`` (m × n): the released numbers as a linear map of the chunk's values.

    ``preparation``: ``"values"`` transforms the chunk itself (CFPA); ``"first-and-differences"``
    transforms ``[y₁, y₂ − y₁, …, yₙ − yₙ₋₁]`` (Bozkir et al. Algorithm 1); ``"differences"``
    transforms ``[0, y₂ − y₁, …]`` (the level-keeping DCFPA, whose level is released apart).

    Raises
    ------
    ValueError
        An unknown transform or preparation.

    Examples
    --------
    >>> release_matrix("dft", 4, 1, "first-and-differences").round(12).tolist()  # the last value
    [[0.0, 0.0, 0.0, 1.0]]
    >>> release_matrix("dft", 4, 1, "differences").round(12).tolist()  # last minus first
    [[-1.0, 0.0, 0.0, 1.0]]
    """
    if preparation not in PREPARATIONS:
        raise ValueError(f"preparation must be one of {', '.join(PREPARATIONS)}, got {preparation!r}")
    prep = np.eye(n)
    if preparation != "values":
        prep[1:] -= np.eye(n)[:-1]
        if preparation == "differences":
            prep[0] = 0.0
    out = make_transform(kind, n, k).matrix @ prep
    out.setflags(write=False)
    return out


def clamp_to_reachable(x: _F64, lo: _F64, hi: _F64, r: _F64) -> _F64:
    """Map chunks (n, F) into the reachable set: values clipped to ``[lo, hi]``, steps to
    ``[-r, r]``, the running sum rebuilt and clipped to ``[lo, hi]`` again (clipping is
    1-Lipschitz, so the steps stay within ``r``, up to the summation's rounding, which
    :data:`LP_MARGIN` covers). A chunk already in the set is unchanged, bit for bit.

    Examples
    --------
    >>> x = np.array([[0.0], [10.0], [10.0], [0.0]])
    >>> clamp_to_reachable(x, np.array([0.0]), np.array([5.0]), np.array([2.0])).ravel().tolist()
    [0.0, 2.0, 2.0, 0.0]
    """
    # np.minimum/np.maximum rather than np.clip: the same values, at a fraction of the call cost
    v = np.minimum(np.maximum(x, lo), hi)
    d = v[1:] - v[:-1]
    if not np.any(np.abs(d) > r):  # the usual case: no step to clamp
        return v
    # the running sum of the corrections, not of the steps: values before the first clipped step
    # are kept bit for bit
    out = v.copy()
    out[1:] += np.cumsum(np.minimum(np.maximum(d, -r), r) - d, axis=0)
    return np.minimum(np.maximum(out, lo, out=out), hi, out=out)


@functools.lru_cache(maxsize=64)
def _step_constraints(n: int) -> Any:
    # scipy.sparse and scipy.optimize are imported here, when a sensitivity is first solved
    # (then cached): the relay and the Capture plugin do not carry them otherwise
    from scipy.sparse import csr_matrix, diags, vstack

    d = diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")
    return csr_matrix(vstack([d, -d]))


def _lp_max(direction: _F64, rho: float) -> float:
    """``max vᵀy`` over ``|yᵢ| ≤ 1``, ``|yᵢ₊₁ − yᵢ| ≤ rho``, rounded up by :data:`LP_MARGIN`."""
    from scipy.optimize import linprog

    n = direction.size
    res = linprog(
        -direction,
        A_ub=_step_constraints(n),
        b_ub=np.full(2 * (n - 1), rho),
        bounds=(-1.0, 1.0),
        method="highs",
    )
    if res.status != 0:  # pragma: no cover - a bounded, feasible programme
        raise RuntimeError(f"sensitivity linear programme failed: {res.message}")
    value = max(-float(res.fun), 0.0)
    return value * (1.0 + LP_MARGIN) + LP_MARGIN * float(np.abs(direction).sum()) * 1e-3


def _signs(m: int) -> _F64:
    rows = [(1.0, *rest) for rest in itertools.product((1.0, -1.0), repeat=m - 1)]
    return np.array(rows, dtype=np.float64).reshape(len(rows), m)


@functools.lru_cache(maxsize=4096)
def unit_reachable_sensitivity(kind: str, n: int, k: int, preparation: str, rho: float) -> tuple[float, bool]:
    """``max_{y ∈ P₀} ‖B y‖₁`` for ``h = 1`` and step bound ``rho = r/h`` (capped at 2, where it stops
    binding), and whether it is exact. The sensitivity of a feature is ``2·h·`` this."""
    b = release_matrix(kind, n, k, preparation)
    m = b.shape[0]
    rho = min(float(rho), 2.0)
    if rho >= 2.0:
        if m <= 16:
            return float(np.abs(_signs(m) @ b).sum(axis=1).max()), True
        return float(np.abs(b).sum()), False
    if m <= MAX_ENUMERATED:
        return max(_lp_max(s @ b, rho) for s in _signs(m)), True
    # too many sign vectors: the box of values, a superset of P₀ (callers take the minimum with
    # the box of differences as well)
    if m <= 16:
        return float(np.abs(_signs(m) @ b).sum(axis=1).max()), False
    return float(np.abs(b).sum()), False


def reachable_sensitivity(
    kind: str, n: int, k: int, preparation: str, width: _F64, step: _F64
) -> tuple[_F64, bool]:
    """L1 sensitivity per feature of the released numbers over the reachable set of each feature
    (range ``width = hi − lo``, step bound ``step``), and whether every value is exact.

    Examples
    --------
    >>> s, exact = reachable_sensitivity("dft", 64, 1, "first-and-differences", np.array([40.0]), np.array([40.0]))
    >>> float(s[0]), exact  # the last value moves by the range, not by (2n − 1)·range
    (40.0, True)
    """
    out = np.empty(len(width))
    exact = True
    for i, (w, r) in enumerate(zip(np.asarray(width, float), np.asarray(step, float), strict=True)):
        h = w / 2.0
        unit, ex = unit_reachable_sensitivity(kind, n, k, preparation, float(min(r, w) / h))
        out[i] = 2.0 * h * unit
        exact &= ex
    return out, exact
