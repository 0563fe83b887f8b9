"""Consistency with public facts: what every true chunk satisfies, by how the features are made
(:mod:`streamdp.stages.features`) and by the public bounds the mechanism clipped them to.

Projecting a noisy value onto a convex set that holds the true value never moves it further from
the truth (in the metric of the projection): each step below is such a projection, in the metric
weighted by the inverse noise variance, for the rows whose fact holds in the window (see ``why``).
Post-processing: no ε is spent, whatever it does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..schema import FEATURE_INDEX, FEATURE_NAMES, WORDBOOK_ORDERS

_F64 = NDArray[np.float64]
_I = NDArray[np.intp]

#: the features that are fractions of a whole, in [0, 1] whatever the bounds say
FRACTIONS = ("small_saccade_ratio", "large_saccade_ratio", "positive_saccade_ratio", "negative_saccade_ratio")

#: (kind, features, why): every public constraint, once. ``sum``: ``a + b = c`` (``c`` a feature,
#: or ``"1"``); ``order``: ``a ≤ b``; ``box``: each feature in its public ``[lo, hi]``, never below
#: 0, fractions never above 1, and a sum ``c`` never above ``hi_a + hi_b``.
CONSTRAINTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("box", FEATURE_NAMES, "the mechanism clipped every value into its public [lo, hi] before the noise; every "
     "feature is a count, rate, fraction, duration, amplitude, dispersion, diameter or variance: ≥ 0"),
    ("box", FRACTIONS, "a fraction of the window's saccades: ≤ 1"),
    ("sum", ("small_saccade_rate", "large_saccade_rate", "saccade_rate"),
     "every saccade is small or large (one amplitude threshold), counted over the same window: the rates add up"),
    ("sum", ("positive_saccade_rate", "negative_saccade_rate", "saccade_rate"),
     "rightward (dx > 0) and leftward (dx < 0) saccades are all saccades but straight-vertical ones (dx == 0 "
     "exactly), which float gaze practically never gives"),
    ("sum", ("small_saccade_ratio", "large_saccade_ratio", "1"),
     "fractions of the window's saccades: one in every window with a saccade (a window without any has both 0, "
     "where this row is off by 0.5 each)"),
    ("sum", ("positive_saccade_ratio", "negative_saccade_ratio", "1"),
     "as small/large, up to straight-vertical saccades"),
    *(("sum", (f"wordbook{n}_range", f"wordbook{n}_min", f"wordbook{n}_max"),
       "range is max − min of the same counts by definition (all 0 without n-grams)") for n in WORDBOOK_ORDERS),
    ("order", ("saccade_amplitude_mean", "saccade_amplitude_max"), "a mean never exceeds the maximum of its values"),
    ("order", ("fixation_duration_mean", "fixation_duration_max"), "a mean never exceeds the maximum of its values"),
)

#: relative tolerance below which a constraint counts as met (and nothing moves)
TOLERANCE = 1e-9


@dataclass(frozen=True, eq=False)
class Projection:
    """The consistency step of one configuration, every array fixed at construction (see
    :func:`make_projection`); :meth:`apply` is the hot path."""

    lo_col: _F64  # (F, 1) the box of every feature (±inf for a dropped one)
    hi_col: _F64
    cols: _I  # (k,) the features the equalities and orders involve; row k of the work array is 1
    sub_lo: _F64  # (k + 1, 1) their box
    sub_hi: _F64
    a_mat: _F64  # (rows, k + 1) the equalities: a_mat @ [x; 1] = 0
    gain_t: _F64  # (k, rows) the weighted projection's correction per unit residual
    tol: _F64  # (rows, 1) absolute tolerance
    ia: _I  # (rows,) a, b and c of each equality a + b = c, rows of the work array
    ib: _I
    ic: _I
    a_lo: _F64
    a_hi: _F64
    b_lo: _F64
    b_hi: _F64
    mean: _I  # (orders,) mean ≤ top, rows of the work array
    top: _I
    w_top: _F64

    def apply(self, values: _F64) -> _F64:
        """A new array: ``values`` (n, F) made consistent; a chunk already consistent comes back
        unchanged, bit for bit. Works on the transposed chunk, a feature per contiguous row."""
        x = np.minimum(np.maximum(values.T, self.lo_col), self.hi_col)
        if not self.cols.size:
            return np.asarray(x.T)
        k = self.cols.size
        # the features the equalities and orders involve, then a row of ones for the constant
        sub = np.empty((k + 1, x.shape[1]))
        sub[:k] = values.T[self.cols]
        sub[k] = 1.0
        res = self.a_mat @ sub
        res[np.abs(res) <= self.tol] = 0.0
        sub[:k] -= self.gain_t @ res
        np.minimum(np.maximum(sub, self.sub_lo, out=sub), self.sub_hi, out=sub)
        # back onto the equalities the box may have broken: a into the interval that lets
        # b = c − a stay in its box, then b = c − a (each c is already within hi_a + hi_b)
        c = sub[self.ic]
        low, high = np.maximum(self.a_lo, c - self.b_hi), np.minimum(self.a_hi, c - self.b_lo)
        a = np.minimum(np.maximum(sub[self.ia], low), high)
        b = sub[self.ib]
        res = c - a - b
        res[np.abs(res) <= self.tol] = 0.0
        sub[self.ia] = a
        sub[self.ib] = b + res
        # a mean above its maximum: both to their weighted average
        top = sub[self.top]
        top += np.maximum(sub[self.mean] - top, 0.0) * self.w_top
        sub[self.mean] = np.minimum(sub[self.mean], top)
        sub[self.top] = top
        x[self.cols] = sub[:k]
        return np.asarray(x.T)

    def violation(self, values: _F64) -> float:
        """The largest violation of any constraint by ``values`` (n, F), in units of its tolerance
        (≤ 1: consistent)."""
        x = np.asarray(values, dtype=np.float64).T
        width = np.where(np.isfinite(self.hi_col - self.lo_col), self.hi_col - self.lo_col, 1.0)
        worst = float(np.max(np.maximum(self.lo_col - x, x - self.hi_col) / (TOLERANCE * width), initial=0.0))
        sub = np.vstack((x[self.cols], np.ones((1, x.shape[1]))))
        if self.ia.size:
            worst = max(worst, float(np.max(np.abs(self.a_mat @ sub) / self.tol)))
        if self.mean.size:
            over = (sub[self.mean] - sub[self.top]) / (TOLERANCE * width[self.cols[self.top]])
            worst = max(worst, float(np.max(over, initial=0.0)))
        return worst


def _ix(names: list[str]) -> _I:
    return np.array([FEATURE_INDEX[n] for n in names], dtype=np.intp)


def make_projection(lo: _F64, hi: _F64, variance: _F64, released: NDArray[np.bool_]) -> Projection:
    """The consistency step for features of public bounds ``[lo, hi]``, noise ``variance`` (the
    metric's weights) and ``released`` mask: a row of :data:`CONSTRAINTS` naming a dropped feature
    (a public constant, not an estimate of the truth) is left out, and a dropped feature is never
    touched. Bounds under which a row cannot hold in any chunk leave that row out too."""
    box_lo = np.where(released, np.maximum(lo, 0.0), -np.inf)
    box_hi = np.where(released, hi, np.inf)
    for f in _ix(list(FRACTIONS)):
        box_hi[f] = min(box_hi[f], 1.0)
    var = np.where(released, np.maximum(variance, 1e-300), 1.0)
    sums: list[tuple[str, ...]] = []
    orders: list[tuple[str, ...]] = []
    for kind, feats, _ in CONSTRAINTS:
        if kind == "box" or not all(released[FEATURE_INDEX[f]] for f in feats if f != "1"):
            continue
        (sums if kind == "sum" else orders).append(feats)
    rows = []
    for a, b, c in sums:
        ia, ib = FEATURE_INDEX[a], FEATURE_INDEX[b]
        c_lo = 1.0 if c == "1" else box_lo[FEATURE_INDEX[c]]
        c_hi = 1.0 if c == "1" else box_hi[FEATURE_INDEX[c]]
        if c_lo > box_hi[ia] + box_hi[ib] or c_hi < box_lo[ia] + box_lo[ib]:
            continue  # bounds under which the row never holds
        if c != "1":
            ic = FEATURE_INDEX[c]
            box_hi[ic] = min(box_hi[ic], box_hi[ia] + box_hi[ib])
            box_lo[ic] = max(box_lo[ic], box_lo[ia] + box_lo[ib])
        rows.append((ia, ib, -1 if c == "1" else FEATURE_INDEX[c]))
    mean_f, top_f = _ix([o[0] for o in orders]), _ix([o[1] for o in orders])
    keep = (box_hi[mean_f] <= box_hi[top_f]) & (box_lo[top_f] >= box_lo[mean_f])  # the average stays in both boxes
    mean_f, top_f = mean_f[keep], top_f[keep]
    cols = np.array(sorted({i for r in rows for i in r if i >= 0} | set(mean_f) | set(top_f)), dtype=np.intp)
    k = cols.size
    local = {int(c): j for j, c in enumerate(cols)}
    local[-1] = k
    mat = np.zeros((len(rows), k + 1))
    for r, (ia, ib, ic) in enumerate(rows):
        mat[r, local[ia]] = mat[r, local[ib]] = 1.0
        mat[r, local[ic]] = -1.0
    w = var[cols]
    # x − W Aᵀ (A W Aᵀ)⁻¹ (A x − b): the projection onto the equalities in the metric W⁻¹
    gain = np.linalg.solve(mat[:, :k] * w @ mat[:, :k].T, mat[:, :k] * w) if rows else np.zeros((0, k))
    width = np.where(np.isfinite(box_hi - box_lo), box_hi - box_lo, 1.0)
    ia_, ib_, ic_ = (np.array([local[r[j]] for r in rows], dtype=np.intp) for j in range(3))
    tol = np.array([TOLERANCE * max(width[i] for i in r if i >= 0) for r in rows])
    sub_lo, sub_hi = np.append(box_lo[cols], 1.0), np.append(box_hi[cols], 1.0)
    mean = np.array([local[int(i)] for i in mean_f], dtype=np.intp)
    top = np.array([local[int(i)] for i in top_f], dtype=np.intp)
    w_mean = var[mean_f] / (var[mean_f] + var[top_f])
    col = _column
    return Projection(
        lo_col=col(box_lo), hi_col=col(box_hi), cols=cols, sub_lo=col(sub_lo), sub_hi=col(sub_hi),
        a_mat=mat, gain_t=np.ascontiguousarray(gain.T), tol=col(tol), ia=ia_, ib=ib_, ic=ic_,
        a_lo=col(sub_lo[ia_]), a_hi=col(sub_hi[ia_]), b_lo=col(sub_lo[ib_]), b_hi=col(sub_hi[ib_]),
        mean=mean, top=top, w_top=col(1.0 - w_mean),
    )


def _column(a: _F64) -> _F64:
    """``a`` as a read-only column, to broadcast along a chunk's steps."""
    out = np.array(a, dtype=np.float64).reshape(-1, 1)
    out.setflags(write=False)
    return out
