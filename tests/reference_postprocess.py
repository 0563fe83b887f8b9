"""A plain reference of :mod:`streamdp.postprocess`: the smoother and the consistency step as
docs/postprocess.md states them, with fresh arrays, fancy indexing and broadcasting wherever it
reads most directly. Slow on purpose (it is the shipped implementation before the hot path was
restructured for speed); :class:`~streamdp.postprocess.PostProcessor` must agree with it to
float tolerance, and the benchmark measures both in one run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from streamdp.postprocess import CONSTRAINTS, DEFAULT_DRIFT, FilterState, noise_model
from streamdp.postprocess._constraints import FRACTIONS, TOLERANCE
from streamdp.schema import FEATURE_INDEX


class ReferenceProjection:
    """The consistency step: the equalities (projection weighted by the inverse noise variance),
    the box, back onto the equalities, then every mean above its maximum to their weighted average."""

    def __init__(self, lo: np.ndarray, hi: np.ndarray, variance: np.ndarray, released: np.ndarray) -> None:
        box_lo = np.where(released, np.maximum(lo, 0.0), -np.inf)
        box_hi = np.where(released, hi, np.inf)
        for name in FRACTIONS:
            box_hi[FEATURE_INDEX[name]] = min(box_hi[FEATURE_INDEX[name]], 1.0)
        var = np.where(released, np.maximum(variance, 1e-300), 1.0)
        kept = [(kind, feats) for kind, feats, _ in CONSTRAINTS
                if kind != "box" and all(released[FEATURE_INDEX[f]] for f in feats if f != "1")]
        rows = []
        for a, b, c in (feats for kind, feats in kept if kind == "sum"):
            ia, ib = FEATURE_INDEX[a], FEATURE_INDEX[b]
            c_lo = 1.0 if c == "1" else box_lo[FEATURE_INDEX[c]]
            c_hi = 1.0 if c == "1" else box_hi[FEATURE_INDEX[c]]
            if c_lo > box_hi[ia] + box_hi[ib] or c_hi < box_lo[ia] + box_lo[ib]:
                continue
            if c != "1":
                ic = FEATURE_INDEX[c]
                box_hi[ic] = min(box_hi[ic], box_hi[ia] + box_hi[ib])
                box_lo[ic] = max(box_lo[ic], box_lo[ia] + box_lo[ib])
            rows.append((ia, ib, -1 if c == "1" else FEATURE_INDEX[c]))
        orders = [feats for kind, feats in kept if kind == "order"]
        mean_f = np.array([FEATURE_INDEX[m] for m, _ in orders], dtype=np.intp)
        top_f = np.array([FEATURE_INDEX[t] for _, t in orders], dtype=np.intp)
        keep = (box_hi[mean_f] <= box_hi[top_f]) & (box_lo[top_f] >= box_lo[mean_f])
        mean_f, top_f = mean_f[keep], top_f[keep]
        self.cols = np.array(sorted({i for r in rows for i in r if i >= 0} | set(mean_f) | set(top_f)), dtype=np.intp)
        k = self.cols.size
        local = {int(c): j for j, c in enumerate(self.cols)}
        local[-1] = k
        self.a_mat = np.zeros((len(rows), k + 1))
        for r, (ia, ib, ic) in enumerate(rows):
            self.a_mat[r, local[ia]] = self.a_mat[r, local[ib]] = 1.0
            self.a_mat[r, local[ic]] = -1.0
        w = var[self.cols]
        m = self.a_mat[:, :k]
        self.gain_t = np.linalg.solve(m * w @ m.T, m * w).T if rows else np.zeros((k, 0))
        width = np.where(np.isfinite(box_hi - box_lo), box_hi - box_lo, 1.0)
        self.tol = np.array([TOLERANCE * max(width[i] for i in r if i >= 0) for r in rows]).reshape(-1, 1)
        self.lo, self.hi = box_lo[:, None], box_hi[:, None]
        self.sub_lo = np.append(box_lo[self.cols], 1.0)[:, None]
        self.sub_hi = np.append(box_hi[self.cols], 1.0)[:, None]
        self.ia, self.ib, self.ic = (np.array([local[r[j]] for r in rows], dtype=np.intp) for j in range(3))
        self.a_lo, self.a_hi = self.sub_lo[self.ia], self.sub_hi[self.ia]
        self.b_lo, self.b_hi = self.sub_lo[self.ib], self.sub_hi[self.ib]
        self.mean = np.array([local[int(i)] for i in mean_f], dtype=np.intp)
        self.top = np.array([local[int(i)] for i in top_f], dtype=np.intp)
        self.w_top = (1.0 - var[mean_f] / (var[mean_f] + var[top_f]))[:, None]

    def __call__(self, values: np.ndarray) -> np.ndarray:
        x = np.minimum(np.maximum(values.T, self.lo), self.hi)
        if not self.cols.size:
            return np.asarray(x.T)
        k = self.cols.size
        sub = np.vstack((values.T[self.cols], np.ones((1, values.shape[0]))))
        res = self.a_mat @ sub
        res[np.abs(res) <= self.tol] = 0.0
        sub[:k] -= self.gain_t @ res
        sub = np.minimum(np.maximum(sub, self.sub_lo), self.sub_hi)
        c = sub[self.ic]
        low, high = np.maximum(self.a_lo, c - self.b_hi), np.minimum(self.a_hi, c - self.b_lo)
        a = np.minimum(np.maximum(sub[self.ia], low), high)
        b = sub[self.ib]
        res = c - a - b
        res[np.abs(res) <= self.tol] = 0.0
        sub[self.ia] = a
        sub[self.ib] = b + res
        top = sub[self.top]
        top += np.maximum(sub[self.mean] - top, 0.0) * self.w_top
        sub[self.mean] = np.minimum(sub[self.mean], top)
        sub[self.top] = top
        x[self.cols] = sub[:k]
        return np.asarray(x.T)


class ReferencePostProcessor:
    """``PostProcessor``'s call, plainly: the Kalman filter on each chunk's level, then consistency."""

    def __init__(self, *, ledger: Mapping[str, Any], bounds: Any = None, drift: float = DEFAULT_DRIFT,
                 smooth: bool = True, consistent: bool = True) -> None:
        self.noise = noise_model(ledger, bounds)
        b = self.noise.bounds
        self.projection = ReferenceProjection(b.lo, b.hi, self.noise.step_variance, self.noise.released)
        self.process = (drift * b.width) ** 2
        self.smooth, self.consistent = smooth, consistent

    def __call__(self, values: np.ndarray, state: FilterState | None = None, *, gap: int = 1
                 ) -> tuple[np.ndarray, FilterState | None]:
        x = np.asarray(values, dtype=np.float64)
        if not np.isfinite(x).all():
            raise ValueError("values must be finite")
        out = x.copy()
        if self.smooth:
            level = np.full(x.shape[0], 1.0 / x.shape[0]) @ x
            if state is None:
                state = FilterState(level, self.noise.level_variance)
            else:
                prior = state.variance + self.process * gap
                gain = prior / (prior + self.noise.level_variance)
                delta = (state.estimate - level) * (1.0 - gain)
                out = x + delta
                state = FilterState(level + delta, (1.0 - gain) * prior)
        else:
            state = None
        return (self.projection(out) if self.consistent else out), state
