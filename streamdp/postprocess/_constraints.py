"""Consistency with public facts: what every true chunk satisfies, by how the features are made
(:mod:`streamdp.stages.features`) and by the public bounds the mechanism clipped them to.

Projecting a noisy value onto a convex set that holds the true value never moves it further from
the truth (in the metric of the projection): each step below is such a projection, in the metric
weighted by the inverse noise variance, for the rows whose fact holds in the window (see ``why``).
Post-processing: it reads the released chunk and public parameters (the bounds, the stated noise
variance) and nothing else, so no ε is spent, whatever it does.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

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
class _Tiles:
    """A projection's constants repeated along a chunk of ``n`` steps, read-only and shared: with
    them each operation of :meth:`Projection.apply` is one loop over contiguous memory (a scalar
    or a broadcast operand costs NumPy more than the operation)."""

    lo: _F64  # (n, F) the box of every feature
    hi: _F64
    boxed_lo: _F64  # (m − R, n) the box of the work rows after the c's
    boxed_hi: _F64
    tol: _F64  # (R, n)
    b_lo: _F64  # (R, n) the box of each equality's b, and of its a
    b_hi: _F64
    a_lo: _F64
    a_hi: _F64
    w_top: _F64  # (O, n)
    zero: _F64  # (O, n) zeros


class _Scratch:
    """One thread's work array for chunks of ``n`` steps, and its named views (see Projection)."""

    __slots__ = ("a", "a_top", "b", "b_top", "boxed", "c", "c_copied", "c_mean", "corrected", "cu", "diff",
                 "gathered", "head", "mean", "met", "over", "res", "size", "top", "work")

    def __init__(self, p: Projection, n: int) -> None:
        o, r, u, ones = p.n_orders, p.n_rows, p.n_c, p.n_ones
        m = 3 * r + 3 * o + u
        self.work = w = np.empty((m, n))
        w[:ones] = 1.0  # the c of a + b = 1: never gathered, never moved
        self.c, self.c_copied, self.mean = w[:r], w[ones:r], w[r:r + o]
        self.b, self.top = w[r + o:2 * r + o], w[2 * r + o:2 * r + 2 * o]
        self.cu, self.a = w[2 * r + 2 * o:2 * r + 2 * o + u], w[2 * r + 2 * o + u:3 * r + 2 * o + u]
        self.gathered, self.head = w[ones:], w[r:m - o]
        self.corrected, self.boxed = w[r + o:m - o], w[r:]
        self.c_mean, self.a_top, self.b_top = w[:r + o], w[m - r - o:], w[r + o:2 * r + 2 * o]
        self.diff = np.empty((r + o, n))  # c − a of each equality, then mean − max of each order
        self.res, self.over = self.diff[:r], self.diff[r:]
        self.size = np.empty((r, n))
        self.met = np.empty((r, n), dtype=bool)


@dataclass(frozen=True, eq=False)
class Projection:
    """The consistency step of one configuration, every array fixed at construction (see
    :func:`make_projection`); :meth:`apply` is the hot path.

    It works on *work rows*, one feature per row with the chunk's steps along it: the ``c`` of
    each of the R equalities ``a + b = c`` (those of ``c = 1`` first: rows of ones), the means of
    the O orders ``mean ≤ max``, each equality's b, the maxima, the U features ``c`` (each once),
    each equality's a, and the maxima again. The rows from the means to the a's hold each
    constrained feature once and are written back; ``[c; mean]``, ``[a; max]`` and ``[b; max]``
    are adjacent, so one operation serves the equalities and the orders. Each step is one NumPy
    operation on contiguous rows of a work array that each thread keeps: a call allocates nothing
    but the output. The steps and their float operations are the plain reading's
    (``tests/reference_postprocess.py``) but for the order of the terms of each residual's sum and
    the shape of the correction's matrix product: results agree with it to float tolerance.
    """

    lo: _F64  # (F,) the box of every feature (±inf for a dropped one)
    hi: _F64
    gather: _I  # (m − ones,) the feature of each work row but the rows of ones
    scatter: _I  # the feature of each row written back
    c_rows: _I  # (R − ones,) for each equality with a feature c, its row among the U c's
    n_orders: int
    n_rows: int
    n_c: int
    n_ones: int  # equalities whose c is the constant 1 (the first ones)
    gain: _F64  # (2R + O + U, R) the weighted projection's correction of the rows from b to a, per unit residual
    boxed_lo: _F64  # (m − R,) the box of the rows after the c's
    boxed_hi: _F64
    tol: _F64  # (R,) absolute tolerance of each equality
    b_lo: _F64  # (R,) the box of each equality's b and a
    b_hi: _F64
    a_lo: _F64
    a_hi: _F64
    clip_a: bool  # whether a must be put back into its own box after its interval (unusual bounds only)
    w_top: _F64  # (O,) the maximum's share of the move when a mean exceeds it
    # the constraints as the violation check reads them
    cols: _I  # (k,) the constrained features, ascending
    a_mat: _F64  # (R, k + 1) the equalities: a_mat @ [x[cols]; 1] = 0
    a_tol: _F64  # (R, 1) their tolerance, in a_mat's order
    mean: _I  # (O,) mean ≤ top, indices into cols
    top: _I
    # the same steps feature by feature, for the compiled pass (streamdp.postprocess._kernel)
    equalities: _I  # (R, 3) a, b, c of each equality (c = -1: the constant 1), in the order of tol
    corrected: _I  # (K,) the features the equalities' projection moves (b's, c's, a's)
    corrected_gain: _F64  # (K, R) their move per unit residual
    orders: _I  # (O, 2) the mean and the maximum of each order
    _tiles: dict[int, _Tiles] = field(default_factory=dict, repr=False)
    _local: threading.local = field(default_factory=threading.local, repr=False)

    def tiles(self, n: int) -> _Tiles:
        """The constants for chunks of ``n`` steps (kept for a few lengths: a stream has one)."""
        tiles = self._tiles.get(n)
        if tiles is None:
            tiles = _Tiles(
                lo=_steps(self.lo, n), hi=_steps(self.hi, n), boxed_lo=_tile(self.boxed_lo, n),
                boxed_hi=_tile(self.boxed_hi, n), tol=_tile(self.tol, n), b_lo=_tile(self.b_lo, n),
                b_hi=_tile(self.b_hi, n), a_lo=_tile(self.a_lo, n), a_hi=_tile(self.a_hi, n),
                w_top=_tile(self.w_top, n), zero=_tile(np.zeros(self.n_orders), n),
            )
            if len(self._tiles) < 8:
                self._tiles[n] = tiles
        return tiles

    def _scratch(self, n: int) -> _Scratch:
        held: dict[int, _Scratch] | None = getattr(self._local, "scratch", None)
        if held is None:
            held = self._local.scratch = {}
        scratch = held.get(n)
        if scratch is None:
            scratch = _Scratch(self, n)
            if len(held) < 8:
                held[n] = scratch
        return scratch

    def apply(self, values: _F64, out: _F64) -> _F64:
        """``values`` (n, F) made consistent, written to ``out`` (may be ``values`` itself) and
        returned; a chunk already consistent comes back unchanged, bit for bit."""
        n = values.shape[0]
        t = self.tiles(n)
        if not self.gather.size:
            np.maximum(values, t.lo, out=out)
            return np.minimum(out, t.hi, out=out)
        s = self._scratch(n)
        # before the box: the equalities' projection reads the values as they came
        values.T.take(self.gather, axis=0, out=s.gathered, mode="clip")
        np.maximum(values, t.lo, out=out)
        np.minimum(out, t.hi, out=out)
        a, b, c, res, size, met = s.a, s.b, s.c, s.res, s.size, s.met
        if self.n_rows:
            # the equalities, by the projection weighted by the inverse noise variance; one
            # already met within its tolerance is not moved
            np.add(a, b, out=res)
            np.subtract(res, c, out=res)
            np.putmask(res, np.less_equal(np.abs(res, out=size), t.tol, out=met), 0.0)
            np.subtract(s.corrected, np.dot(self.gain, res), out=s.corrected)
        np.maximum(s.boxed, t.boxed_lo, out=s.boxed)
        np.minimum(s.boxed, t.boxed_hi, out=s.boxed)
        if self.n_rows:
            s.cu.take(self.c_rows, axis=0, out=s.c_copied, mode="clip")  # each c as boxed, in its rows
            # back onto the equalities the box may have broken: a into the interval that lets
            # b = c − a stay in its box, then b = c − a (each c is already within hi_a + hi_b)
            np.maximum(a, np.subtract(c, t.b_hi, out=size), out=a)
            np.minimum(a, np.subtract(c, t.b_lo, out=size), out=a)
            if self.clip_a:
                np.maximum(a, t.a_lo, out=a)
                np.minimum(a, t.a_hi, out=a)
        np.subtract(s.c_mean, s.a_top, out=s.diff)  # every c − a and mean − max
        if self.n_rows:
            np.subtract(res, b, out=res)
            np.putmask(res, np.less_equal(np.abs(res, out=size), t.tol, out=met), 0.0)
        if self.n_orders:
            # a mean above its maximum: both to their weighted average
            np.maximum(s.over, t.zero, out=s.over)
            np.multiply(s.over, t.w_top, out=s.over)
        np.add(s.b_top, s.diff, out=s.b_top)  # b + (c − a − b), max + its share of the excess
        if self.n_orders:
            np.minimum(s.mean, s.top, out=s.mean)
        out.T[self.scatter] = s.head
        return out

    def violation(self, values: _F64) -> float:
        """The largest violation of any constraint by ``values`` (n, F), in units of its tolerance
        (≤ 1: consistent)."""
        x = np.asarray(values, dtype=np.float64).T
        lo, hi = self.lo[:, None], self.hi[:, None]
        width = np.where(np.isfinite(hi - lo), hi - lo, 1.0)
        worst = float(np.max(np.maximum(lo - x, x - hi) / (TOLERANCE * width), initial=0.0))
        sub = np.vstack((x[self.cols], np.ones((1, x.shape[1]))))
        if self.n_rows:
            worst = max(worst, float(np.max(np.abs(self.a_mat @ sub) / self.a_tol)))
        if self.n_orders:
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
    tol = np.array([TOLERANCE * max(width[i] for i in r if i >= 0) for r in rows])
    w_mean = var[mean_f] / (var[mean_f] + var[top_f])

    # the work rows (see Projection); equalities of c = 1 first
    order = sorted(range(len(rows)), key=lambda r: rows[r][2] >= 0)
    ia_, ib_, ic_ = (np.array([rows[r][j] for r in order], dtype=np.intp) for j in range(3))
    c_feats = np.array(sorted(set(ic_[ic_ >= 0].tolist())), dtype=np.intp)
    fc = ic_[ic_ >= 0]
    gathered = np.concatenate((fc, mean_f, ib_, top_f, c_feats, ia_, top_f)).astype(np.intp)
    roles = np.concatenate((mean_f, ib_, top_f, c_feats, ia_))
    if len(set(roles.tolist())) != roles.size:
        raise RuntimeError("CONSTRAINTS: a feature has two roles (a, b, c, mean, max); the projection assumes one")
    r, o, u = len(rows), mean_f.size, c_feats.size
    corrected = np.concatenate((ib_, top_f, c_feats, ia_))
    gain_w = np.zeros((corrected.size, r))
    moved = ~np.isin(corrected, top_f)  # a maximum is only boxed (its gain row is 0)
    for j in np.flatnonzero(moved):
        gain_w[j] = gain[order, local[int(corrected[j])]]
    boxed = np.concatenate((mean_f, ib_, top_f, c_feats, ia_, top_f))
    c_hi = np.where(ic_ >= 0, box_hi[np.maximum(ic_, 0)], 1.0)
    a_lo, a_hi, b_lo, b_hi = box_lo[ia_], box_hi[ia_], box_lo[ib_], box_hi[ib_]
    # apply() clips a into [c − b_hi, c − b_lo] only: that keeps it in its own box when the box
    # is not empty and the largest c − b_hi is not above a_hi (any sensible bounds)
    clip_a = bool(np.any(a_lo > a_hi) or np.any(c_hi - b_hi > a_hi))
    return Projection(
        lo=_frozen(box_lo), hi=_frozen(box_hi), gather=_frozen(gathered, np.intp),
        scatter=_frozen(gathered[fc.size:gathered.size - o], np.intp),
        c_rows=_frozen(np.searchsorted(c_feats, fc), np.intp), n_orders=int(o),
        n_rows=r, n_c=int(u), n_ones=int(np.count_nonzero(ic_ < 0)), gain=_frozen(gain_w),
        boxed_lo=_frozen(box_lo[boxed]), boxed_hi=_frozen(box_hi[boxed]), tol=_frozen(tol[order]), b_lo=_frozen(b_lo),
        b_hi=_frozen(b_hi), a_lo=_frozen(a_lo), a_hi=_frozen(a_hi), clip_a=clip_a, w_top=_frozen(1.0 - w_mean),
        cols=_frozen(cols, np.intp), a_mat=_frozen(mat), a_tol=_frozen(tol.reshape(-1, 1)),
        mean=_frozen(np.array([local[int(i)] for i in mean_f]), np.intp),
        top=_frozen(np.array([local[int(i)] for i in top_f]), np.intp),
        equalities=_frozen(np.column_stack((ia_, ib_, ic_)).reshape(-1, 3), np.int64),
        corrected=_frozen(corrected[moved], np.int64), corrected_gain=_frozen(gain_w[moved]),
        orders=_frozen(np.column_stack((mean_f, top_f)).reshape(-1, 2), np.int64),
    )


def _frozen(a: NDArray[Any], dtype: type = np.float64) -> NDArray[Any]:
    out: NDArray[Any] = np.array(a, dtype=dtype)
    out.setflags(write=False)
    return out


def _tile(a: _F64, n: int) -> _F64:
    """``a`` (m,) as a read-only (m, n) array, each value along a chunk's steps."""
    out = np.repeat(np.asarray(a, dtype=np.float64).reshape(-1, 1), n, axis=1)
    out.setflags(write=False)
    return out


def _steps(a: _F64, n: int) -> _F64:
    """``a`` (F,) as a read-only (n, F) array: a chunk's layout."""
    out = np.tile(np.asarray(a, dtype=np.float64), (n, 1))
    out.setflags(write=False)
    return out
