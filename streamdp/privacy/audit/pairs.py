"""Worst-case neighbouring raw chunks, derived from the public bounds and the model's release matrices.

Neighbouring chunks are any two chunks (the unit of privacy is one chunk of one feature), so the
auditor may pick the pair that separates the outputs most. For each feature with range
``[lo, hi]`` (half-width ``h``) and step bound ``r``, and each group of released numbers ``B y``:

- ``reachable``: the pair of chunks that can occur (values in the range, steps within ``r``) that
  maximises ``‖B(y − y')‖₁``. The set is symmetric about its centre, so ``y' = 2·mid − y`` and
  ``y`` maximises ``sᵀB y`` for a sign vector ``s``: one linear programme per sign vector, over the
  sign vectors the value box ranks first.
- ``box``: the vertex of the value box alone (steps as large as the range): every step beyond
  ``r`` is what difference clipping (or clamping) must cut back.
- ``level``: the constant chunks ``lo`` and ``hi``.

Every value of a pair that sits at a bound is then pushed ``push`` ranges beyond it: correct
clipping brings it back, so a correct mechanism sees the in-bound pair, and one that skips a clip
sees a far larger difference.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog
from scipy.sparse import csr_matrix, diags, vstack

from ..bounds import BoundsProfile
from .model import NoiseModel

_F64 = NDArray[np.float64]

#: sign vectors enumerated exactly up to this many released numbers; beyond, a search
ENUMERATED = 12
#: sign vectors (best by the value box) tried with a linear programme each
TRIED = 4


@dataclass(frozen=True, eq=False)
class NeighbourPair:
    """Two raw chunks (n, F), their family, and whether they are inside the chunks that can occur
    before the push (then ``reference`` holds, per group, the L1 distance (F,) of their released
    numbers: what a correct mechanism's noise must cover)."""

    family: str
    x: _F64
    y: _F64
    reference: tuple[_F64, ...] | None


def _top_directions(b: _F64, count: int) -> _F64:
    """The directions ``Bᵀs`` (rows, n) of the sign vectors ``s`` with the largest ``‖Bᵀs‖₁`` (the
    value box's best vertices are their signs), best first, one per distinct sign pattern."""
    m = b.shape[0]
    if m <= ENUMERATED:
        codes = np.arange(1 << (m - 1))
        s = np.ones((codes.size, m))
        s[:, 1:] = 1 - 2 * ((codes[:, None] >> np.arange(m - 1)) & 1)
    else:
        rng = np.random.default_rng(0)  # a search over public quantities only
        s = np.sign(rng.standard_normal((256, m)))
        for _ in range(30):
            s = np.sign(np.sign(s @ b + 1e-300) @ b.T + 1e-300)
    bts = s @ b
    order = np.argsort(-np.abs(bts).sum(axis=1), kind="stable")
    _, first = np.unique(np.sign(bts[order] + 1e-300), axis=0, return_index=True)
    return np.asarray(bts[order][np.sort(first)][:count])


@functools.lru_cache(maxsize=16)
def _steps(n: int) -> csr_matrix:
    d = diags([-np.ones(n - 1), np.ones(n - 1)], [0, 1], shape=(n - 1, n), format="csr")
    return csr_matrix(vstack([d, -d]))


def _lp(direction: _F64, rho: float) -> _F64:
    n = direction.size
    res = linprog(-direction, A_ub=_steps(n), b_ub=np.full(2 * (n - 1), rho), bounds=(-1.0, 1.0), method="highs")
    return np.asarray(res.x) if res.status == 0 else np.zeros(n)


@functools.lru_cache(maxsize=1024)
def _reachable_unit(b_bytes: bytes, shape: tuple[int, int], rho: float) -> tuple[float, ...]:
    """The chunk ``u`` with ``|uᵢ| ≤ 1``, ``|uᵢ₊₁ − uᵢ| ≤ rho`` of largest ``‖B u‖₁`` among the
    linear programmes of the first sign vectors (a lower bound on the maximum, reached when
    the best sign vector is among them)."""
    b = np.frombuffer(b_bytes).reshape(shape)
    n = shape[1]
    best, best_u = -1.0, np.ones(n)
    for direction in _top_directions(b, TRIED):
        if rho >= 2.0:  # the steps never bind: the box vertex
            u = np.sign(direction + 1e-300)
        else:
            u = _lp(direction, rho)
            # once more along the optimum's own sign vector
            again = _lp(np.sign(b @ u + 1e-300) @ b, rho)
            if np.abs(b @ again).sum() > np.abs(b @ u).sum():
                u = again
        score = float(np.abs(b @ u).sum())
        if score > best:
            best, best_u = score, u
    return tuple(np.clip(best_u, -1.0, 1.0).tolist())


def _reachable_pair(b: _F64, lo: _F64, hi: _F64, r: _F64) -> tuple[_F64, _F64]:
    n, f = b.shape[1], lo.size
    x, y = np.empty((n, f)), np.empty((n, f))
    key = np.ascontiguousarray(b).tobytes()
    for j in range(f):
        h = (hi[j] - lo[j]) / 2
        u = np.asarray(_reachable_unit(key, b.shape, round(float(min(r[j] / h, 2.0)), 12)))
        mid = (hi[j] + lo[j]) / 2
        x[:, j], y[:, j] = mid - h * u, mid + h * u
    return np.clip(x, lo, hi), np.clip(y, lo, hi)


def neighbour_pairs(model: NoiseModel, bounds: BoundsProfile, push: float = 8.0) -> list[NeighbourPair]:
    """The audit's candidate pairs for ``model`` under ``bounds``, one per distinct family.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> from streamdp.privacy.audit.model import noise_model
    >>> b = default_profile().select([0])
    >>> [p.family for p in neighbour_pairs(noise_model({"mechanism": "lpa", "chunk_length": 4}), b)]
    ['reachable:values']
    """
    n = model.n
    lo, hi, r, width = bounds.lo, bounds.hi, bounds.step_bound, bounds.width
    raw: list[tuple[str, _F64, _F64, bool]] = []
    for (group, _), b in zip(model.groups, model.release, strict=True):
        x, y = _reachable_pair(b, lo, hi, r)
        raw.append((f"reachable:{group}", x, y, True))
        s = np.sign(_top_directions(b, 1)[0] + 1e-300)
        raw.append((f"box:{group}", np.where(s[:, None] > 0, lo, hi), np.where(s[:, None] > 0, hi, lo), False))
    raw.append(("level", np.tile(lo, (n, 1)), np.tile(hi, (n, 1)), True))
    out: list[NeighbourPair] = []
    seen: list[tuple[_F64, _F64]] = []
    for family, x, y, inside in raw:
        if any(np.array_equal(x, a) and np.array_equal(y, c) for a, c in seen):
            continue
        seen.append((x, y))
        reference = None
        if inside:
            d = (y - x).T  # (F, n)
            reference = tuple(np.abs(d @ b.T).sum(axis=1) for b in model.release)
        px = np.where(x <= lo, x - push * width, np.where(x >= hi, x + push * width, x))
        py = np.where(y <= lo, y - push * width, np.where(y >= hi, y + push * width, y))
        out.append(NeighbourPair(family, px, py, reference))
    return out


def field_probes(bounds: BoundsProfile, n: int) -> list[_F64]:
    """Varied raw chunks (n, F) for the exact comparison of the unnoised fields: the middle, each
    bound, beyond each bound, a ramp across the range, and jumps between the bounds."""
    lo, hi, width = bounds.lo, bounds.hi, bounds.width
    ramp = np.linspace(0.0, 1.0, n)[:, None]
    jumps = np.where((np.arange(n) % 2)[:, None] == 1, hi, lo)
    return [
        np.tile((lo + hi) / 2, (n, 1)),
        np.tile(lo, (n, 1)),
        np.tile(hi, (n, 1)),
        np.tile(hi + 3 * width, (n, 1)),
        np.tile(lo - 3 * width, (n, 1)),
        lo + width * ramp,
        jumps,
    ]


__all__ = ["NeighbourPair", "field_probes", "neighbour_pairs"]
