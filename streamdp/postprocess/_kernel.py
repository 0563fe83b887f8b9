"""One chunk smoothed and made consistent in one compiled pass, when numba is installed (the
optional extra ``fast``): the same steps as :class:`~streamdp.postprocess.PostProcessor`'s NumPy
path (``_constraints.Projection.apply`` and ``PostProcessor._update``), feature by feature and
step by step instead of one NumPy call per operation. A NumPy call costs about 0.7 µs whatever
its size, and a 64 × 52 chunk needs about 40 of them; here the chunk is one call.

The float operations are the NumPy path's, in the same order, but for two sums: the chunk's level
(a loop here, BLAS there) and the equalities' correction (the same). Results agree with the NumPy
path and with ``tests/reference_postprocess.py`` to float tolerance (tests/test_postprocess.py runs
both paths). Post-processing reads released values and public parameters only: which path runs
changes no privacy property.
"""

from __future__ import annotations

import functools
import importlib.util
import logging
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["COMPILED", "compiled_pass", "pack"]

log = logging.getLogger(__name__)

#: whether the compiled pass is available (numba installed); numba itself is imported only when a
#: post-processor is first made (a second or so), never by the modules that merely import this one
COMPILED = importlib.util.find_spec("numba") is not None


def pack(
    fixed: NDArray[np.float64], equalities: NDArray[np.int64], tol: NDArray[np.float64],
    corrected: NDArray[np.int64], gain: NDArray[np.float64], orders: NDArray[np.int64],
    w_top: NDArray[np.float64], *, consistent: bool, clip_a: bool,
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:  # fmt: skip
    """A configuration's constants as the compiled pass reads them: one float and one int array
    (each argument costs the call). The constrained features are numbered as *work rows* (a
    feature's values along the chunk, contiguous), and the gain is kept sparse (a feature moves
    with few equalities).

    ``fixed`` rows: box lo, box hi, drift variance per chunk, the level's noise variance;
    ``equalities`` (R, 3): a, b and c of ``a + b = c`` (c = -1: the constant 1), ``tol`` their
    tolerance; ``corrected`` (K,) the features the equalities' projection moves, by ``gain`` (K, R)
    per unit residual; ``orders`` (O, 2): mean ≤ max, ``w_top`` the maximum's share.
    """
    k_rows, n_rows = gain.shape
    features = sorted({int(f) for f in (*equalities.ravel(), *orders.ravel()) if f >= 0})
    row = {f: i for i, f in enumerate(features)}
    row[-1] = -1

    def rows(a: NDArray[np.int64]) -> list[int]:
        return [row[int(f)] for f in a.ravel()]

    where = [np.flatnonzero(gain[k]) for k in range(k_rows)]
    pointers = np.concatenate(([0], np.cumsum([w.size for w in where]))).astype(np.int64)
    columns = np.concatenate([*where, np.zeros(0, np.int64)]).astype(np.int64)
    values = np.concatenate([*(gain[k, w] for k, w in enumerate(where)), np.zeros(0)])
    head = [n_rows, orders.shape[0], k_rows, int(consistent), int(clip_a), len(features)]
    tables = [*features, *rows(equalities), *rows(orders), *rows(corrected), *pointers, *columns]
    ints = np.array(head + tables, dtype=np.int64)
    floats = np.concatenate((fixed.ravel(), tol, w_top, values)).astype(np.float64)
    for a in (ints, floats):
        a.setflags(write=False)
    return floats, ints


def _smooth_and_project(
    x: Any, out: Any, estimate: Any, variance: Any, new_state: Any, floats: Any, ints: Any, with_state: bool,
    gap: float,
) -> float:  # fmt: skip
    """``x`` (n, F) post-processed into ``out``, the smoother's new estimate and variance into
    ``new_state`` (2, F) (from ``estimate`` and ``variance`` when ``with_state``, ``gap`` chunks
    on); returns the chunk level's Σ level² (not finite: ``x`` holds a NaN or an infinity).
    ``floats`` and ``ints``: :func:`pack`'s."""
    n, n_features = x.shape
    n_rows, n_orders, n_corrected, consistent, clip_a = ints[0], ints[1], ints[2], ints[3] == 1, ints[4] == 1
    n_work = ints[5]
    feat = 6  # where each table starts in ints
    eq = feat + n_work
    ords = eq + 3 * n_rows
    corr = ords + 2 * n_orders
    ptr = corr + n_corrected
    col = ptr + n_corrected + 1
    lo, hi = floats[:n_features], floats[n_features:2 * n_features]
    process, level_variance = floats[2 * n_features:3 * n_features], floats[3 * n_features:4 * n_features]
    tol = floats[4 * n_features:4 * n_features + n_rows]
    w_top = floats[4 * n_features + n_rows:4 * n_features + n_rows + n_orders]
    gain = floats[4 * n_features + n_rows + n_orders:]
    # the chunk's level, and the Kalman filter on it (PostProcessor._update)
    level = np.zeros(n_features)
    inv_n = 1.0 / n
    for j in range(n):
        for f in range(n_features):
            level[f] += x[j, f] * inv_n
    total = 0.0
    delta = np.zeros(n_features)
    for f in range(n_features):
        s = level[f]
        total += s * s
        if with_state:
            prior = variance[f] + (process[f] if gap == 1.0 else process[f] * gap)
            keep = prior + level_variance[f]
            keep = prior / keep
            keep = 1.0 - keep
            d = (estimate[f] - s) * keep
            delta[f] = d
            new_state[0, f] = s + d
            new_state[1, f] = keep * prior
        else:
            new_state[0, f] = s
            new_state[1, f] = level_variance[f]
    for j in range(n):  # the level moved, then the box of every feature
        for f in range(n_features):
            v = x[j, f] + delta[f]
            out[j, f] = min(max(v, lo[f]), hi[f]) if consistent else v
    if not consistent:
        return total
    # the constrained features as work rows along the chunk: as they came (y) and boxed (w)
    y = np.empty((n_work, n))
    w = np.empty((n_work, n))
    for i in range(n_work):
        f = ints[feat + i]
        for j in range(n):
            y[i, j] = x[j, f] + delta[f]
            w[i, j] = out[j, f]
    res = np.empty((n_rows, n))
    for r in range(n_rows):  # the residuals of the values as they came (before the box)
        ia, ib, ic = ints[eq + 3 * r], ints[eq + 3 * r + 1], ints[eq + 3 * r + 2]
        for j in range(n):
            v = (y[ia, j] + y[ib, j]) - (1.0 if ic < 0 else y[ic, j])
            res[r, j] = 0.0 if abs(v) <= tol[r] else v
    acc = np.empty(n)
    for k in range(n_corrected):  # the weighted projection onto the equalities, then the box
        i = ints[corr + k]
        f = ints[feat + i]
        acc[:] = 0.0
        for nz in range(ints[ptr + k], ints[ptr + k + 1]):
            g, r = gain[nz], ints[col + nz]
            for j in range(n):
                acc[j] += g * res[r, j]
        for j in range(n):
            w[i, j] = min(max(y[i, j] - acc[j], lo[f]), hi[f])
    for r in range(n_rows):  # a into the interval that keeps b = c − a in its box
        ia, ib, ic = ints[eq + 3 * r], ints[eq + 3 * r + 1], ints[eq + 3 * r + 2]
        fa, fb = ints[feat + ia], ints[feat + ib]
        for j in range(n):
            c = 1.0 if ic < 0 else w[ic, j]
            a = min(max(w[ia, j], c - hi[fb]), c - lo[fb])
            w[ia, j] = min(max(a, lo[fa]), hi[fa]) if clip_a else a
    for r in range(n_rows):  # then b = c − a, unless already within the tolerance
        ia, ib, ic = ints[eq + 3 * r], ints[eq + 3 * r + 1], ints[eq + 3 * r + 2]
        for j in range(n):
            c = 1.0 if ic < 0 else w[ic, j]
            v = (c - w[ia, j]) - w[ib, j]
            w[ib, j] = w[ib, j] + (0.0 if abs(v) <= tol[r] else v)
    for o in range(n_orders):  # a mean above its maximum: both to their weighted average
        im, it = ints[ords + 2 * o], ints[ords + 2 * o + 1]
        for j in range(n):
            top = w[it, j] + max(w[im, j] - w[it, j], 0.0) * w_top[o]
            w[it, j] = top
            w[im, j] = min(w[im, j], top)
    for i in range(n_work):
        f = ints[feat + i]
        for j in range(n):
            out[j, f] = w[i, j]
    return total


@functools.cache
def compiled_pass() -> Callable[..., float] | None:
    """The compiled :func:`_smooth_and_project` (compiled at its first call, cached by numba beside
    this module), or None without numba."""
    if not COMPILED:
        return None
    try:
        import numba
    except Exception as exc:  # a numba that does not match this NumPy: the NumPy path
        log.warning("post-processing runs on NumPy: numba does not import (%s)", exc)
        return None
    try:
        compiled: Callable[..., float] = numba.njit(cache=True, nogil=True, boundscheck=False)(_smooth_and_project)
    except RuntimeError:  # nowhere writable to cache it (a read-only install): compiled anew in each process
        compiled = numba.njit(cache=False, nogil=True, boundscheck=False)(_smooth_and_project)
    return compiled
