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
  programmes ``max vᵀy`` over ``P₀`` with ``v = Bᵀs`` (``s₁ = +1`` by the symmetry ``y → −y``);
- each programme is solved exactly by :func:`tube_maxima`, a dynamic programme over the chunk
  (below), and rounded up by a relative :data:`ROUNDING_MARGIN`, far above its floating-point
  error: no solver, no tolerance, and nothing beyond NumPy is imported;
- when ``r ≥ 2h`` the step bound never binds, ``P₀`` is a box and each programme has the closed
  form ``h·‖Bᵀs‖₁``;
- beyond :data:`MAX_ENUMERATED` released numbers, the maximum over the box of values (exact up to
  16 numbers, else ``h·Σ|Bᵢⱼ|``), a sound bound flagged as not exact.

The dynamic programme (scaled to ``h = 1``, ``ρ = r/h``): ``V₁(y) = v₁y`` and
``Vᵢ₊₁(y) = vᵢ₊₁y + max{Vᵢ(z) : |z| ≤ 1, |z − y| ≤ ρ}`` on ``[−1, 1]``, so that
``max_{y ∈ P₀} vᵀy = max V_n``. Every ``Vᵢ`` is concave and piecewise linear: if ``Vᵢ`` peaks at
``z*``, the windowed maximum is ``Vᵢ(y + ρ)`` left of ``z* − ρ`` (``Vᵢ`` rises there), ``Vᵢ(z*)``
on ``[z* − ρ, z* + ρ]`` and ``Vᵢ(y − ρ)`` right of it: the rising part moved left by ``ρ``, the
falling part moved right, a flat top between (concave), cut to ``[−1, 1]`` (concave), plus a
linear term (concave). So each step moves the breakpoints, adds one (the peak, now two ends of
the flat top) and adds a linear function: ``O(n)`` breakpoints, ``O(n²)`` operations per
programme, done for all sign vectors at once.

The old "tight" mode maximised over the box ``first value in [lo, hi], differences in [-r, r]``
independently; but differences telescope to the last value, which lies in ``[lo, hi]``: for the
features whose ``r`` equals their range (maxima, minima, ranges) the box costs 63× (n = 32) and
127× (n = 64) more noise at k = 1.

Everything is computed from the bounds alone and cached on hashable inputs.
"""

from __future__ import annotations

import functools

import numpy as np
from numpy.typing import NDArray

from .transforms import make_transform

_F64 = NDArray[np.float64]

#: sign vectors are enumerated (one programme each) up to this many released numbers
MAX_ENUMERATED = 8

#: how a mechanism turns the chunk into the vector it transforms
PREPARATIONS = ("values", "first-and-differences", "differences")

#: relative margin on every programme's optimum: its floating-point error is ~1e-15 relative to
#: ``Σ|vᵢ|``; the margin also covers the rounding of :func:`clamp_to_reachable`'s running sum
ROUNDING_MARGIN = 1e-6


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
    :data:`ROUNDING_MARGIN` covers). A chunk already in the set is unchanged, bit for bit.

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


def tube_maxima(directions: _F64, rho: float) -> _F64:
    """``max vᵀy`` over ``|yᵢ| ≤ 1``, ``|yᵢ₊₁ − yᵢ| ≤ rho``, for every row ``v`` of ``directions``
    (S × n), exactly (up to floating-point rounding), by the dynamic programme of the module
    docstring; not rounded up.

    ``Vᵢ`` is kept as ``i + 1`` points ``(x, V(x))`` from ``x = −1`` to ``x = 1`` per row, the
    points cut off by ``[−1, 1]`` kept as copies of the end points, so that every row has as many
    points and each step is a handful of array operations on all rows.

    Raises
    ------
    ValueError
        ``directions`` is not a non-empty 2-d array, or ``rho`` is not > 0.

    Examples
    --------
    >>> tube_maxima(np.array([[-1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]]), 0.5).tolist()
    [1.5, 4.0]
    """
    v = np.asarray(directions, dtype=np.float64)
    if v.ndim != 2 or v.size == 0:
        raise ValueError(f"directions must be a non-empty (S, n) array, got shape {v.shape}")
    if not rho > 0:
        raise ValueError(f"rho must be > 0, got {rho!r}")
    rows_count, n = v.shape
    xs = np.empty((rows_count, n + 1))
    fs = np.empty((rows_count, n + 1))
    xs[:, :2] = (-1.0, 1.0)
    fs[:, 0], fs[:, 1] = -v[:, 0], v[:, 0]
    row = np.arange(rows_count)
    rows = row[:, None]
    for i in range(1, n):
        p = i + 1
        cols = np.arange(p + 1)
        # the windowed maximum: the peak doubled, the points left of it moved by −ρ, right by +ρ
        right = cols > np.argmax(fs[:, :p], axis=1)[:, None]
        src = cols - right
        x = xs[rows, src] + np.where(right, rho, -rho)
        f = fs[rows, src]
        # cut to [−1, 1]: the first point reaches −1 − ρ and the last 1 + ρ, so both ends cut
        a = np.count_nonzero(x < -1.0, axis=1)
        b = np.count_nonzero(x <= 1.0, axis=1)
        f_lo = f[row, a - 1] + (f[row, a] - f[row, a - 1]) * ((-1.0 - x[row, a - 1]) / (x[row, a] - x[row, a - 1]))
        f_hi = f[row, b - 1] + (f[row, b] - f[row, b - 1]) * ((1.0 - x[row, b - 1]) / (x[row, b] - x[row, b - 1]))
        below = cols < a[:, None]
        above = cols >= b[:, None]
        x[below] = -1.0
        x[above] = 1.0
        f = np.where(below, f_lo[:, None], np.where(above, f_hi[:, None], f))
        xs[:, : p + 1] = x
        fs[:, : p + 1] = f + v[:, i : i + 1] * x
    return np.asarray(fs.max(axis=1))


def _rounded_up(optimum: _F64, directions: _F64) -> _F64:
    return np.maximum(optimum, 0.0) * (1.0 + ROUNDING_MARGIN) + ROUNDING_MARGIN * 1e-3 * np.abs(directions).sum(axis=1)


@functools.lru_cache(maxsize=32)
def _signs(m: int) -> _F64:
    """The ``2^(m-1)`` sign vectors with ``s₁ = +1``, in the order of
    ``itertools.product((1, -1), repeat=m - 1)``."""
    idx = np.arange(1 << (m - 1))[:, None]
    out = np.ones((idx.shape[0], m))
    out[:, 1:] = 1.0 - 2.0 * ((idx >> np.arange(m - 2, -1, -1)) & 1)
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=256)
def _box_unit(kind: str, n: int, k: int, preparation: str) -> tuple[float, bool]:
    """``max ‖B y‖₁`` over the box ``|yᵢ| ≤ 1`` (exact up to 16 released numbers, else the sum of
    ``|Bᵢⱼ|``, an upper bound), and whether it is exact."""
    b = release_matrix(kind, n, k, preparation)
    if b.shape[0] <= 16:
        return float(np.abs(_signs(b.shape[0]) @ b).sum(axis=1).max()), True
    return float(np.abs(b).sum()), False


@functools.lru_cache(maxsize=4096)
def unit_reachable_sensitivity(kind: str, n: int, k: int, preparation: str, rho: float) -> tuple[float, bool]:
    """``max_{y ∈ P₀} ‖B y‖₁`` for ``h = 1`` and step bound ``rho = r/h`` (capped at 2, where it stops
    binding), and whether it is exact. The sensitivity of a feature is ``2·h·`` this.

    Raises
    ------
    ValueError
        ``rho`` is not > 0, or an unknown transform or preparation.

    Examples
    --------
    >>> value, exact = unit_reachable_sensitivity("dft", 8, 1, "differences", 0.25)
    >>> round(value, 5), value >= 1.75, exact  # last − first: 7 steps of ρ, rounded up
    (1.75, True, True)
    """
    if not rho > 0:
        raise ValueError(f"rho must be > 0, got {rho!r}")
    b = release_matrix(kind, n, k, preparation)
    m = b.shape[0]
    rho = min(float(rho), 2.0)
    if rho >= 2.0:
        return _box_unit(kind, n, k, preparation)
    if m <= MAX_ENUMERATED:
        directions = _signs(m) @ b
        return float(_rounded_up(tube_maxima(directions, rho), directions).max()), True
    # too many sign vectors: the box of values, a superset of P₀ (callers take the minimum with
    # the box of differences as well)
    return _box_unit(kind, n, k, preparation)[0], False


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
