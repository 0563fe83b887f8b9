"""The split of a chunk's ε over the features that loses the least of a task's separability to noise.

Mechanisms spend ``εᵢ = ε·wᵢ/Σw`` on feature ``i`` (:func:`~streamdp.privacy.mechanisms.split_epsilon`)
and every streaming chunk mechanism's noise on it has a scale ``Δᵢ/εᵢ`` (its public sensitivity over
its share), so its variance, in units of the feature's public range ``hi − lo``, is ``aᵢ/εᵢ²``: ``aᵢ``
is the *relative unit noise*, the variance at ``εᵢ = 1`` over ``(hi − lo)²``, fixed by the bounds and
the mechanism's public parameters. Given a usefulness ``uᵢ ≥ 0`` per feature (how much the task
needs it: :func:`usefulness`), the allocation minimises the usefulness-weighted relative noise

    L(w) = Σᵢ uᵢ·aᵢ/εᵢ² = (Σw)²/ε² · Σᵢ uᵢ·aᵢ/wᵢ²

(:func:`allocation_loss`). ``L`` does not change when ``w`` is scaled, so take ``Σw = 1``; each term
``cᵢ/wᵢ²`` (``cᵢ = uᵢ·aᵢ``) is convex for ``wᵢ > 0``, so the stationary point of the Lagrangian
``Σ cᵢ/wᵢ² + μ(Σ wᵢ − 1)``, ``−2cᵢ/wᵢ³ + μ = 0``, is the minimum:

    wᵢ = cᵢ^(1/3) / Σⱼ cⱼ^(1/3),   L* = (Σᵢ cᵢ^(1/3))³ / ε²

(:func:`split_weights`). A feature of usefulness 0 gets weight 0 (any ε spent on it is wasted) and is
released as its public constant. The split does not depend on ε: the same file serves every ε.

Separability is Fisher's ratio of the between-class to the within-class variance of the feature's
values (clipped to the public bounds first, as every mechanism clips them), over all feature rows
(:func:`separability`). docs/privacy.md, "Weights fitted on labelled pilot data", states all of
it. NumPy only; nothing here is imported by the relay.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["allocation_loss", "separability", "split_weights", "usefulness"]

_F64 = NDArray[np.float64]

#: the within-class variance, in units of the squared public range, below which a feature counts
#: as constant within every class (its ratio is then taken over this floor, not over 0)
WITHIN_FLOOR = 1e-12


def _vector(name: str, value: ArrayLike, size: int | None = None) -> _F64:
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim != 1 or (size is not None and arr.size != size):
        want = "a 1-d array" if size is None else f"{size} values"
        raise ValueError(f"{name} must be {want}, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite, got {arr[~np.isfinite(arr)][0]!r}")
    return arr


def separability(rows: ArrayLike, labels: Sequence[object], *, lo: ArrayLike, hi: ArrayLike) -> _F64:
    """Fisher's ratio per feature: the variance of the class means (weighted by the classes' row
    counts) over the mean within-class variance, of the rows clipped to ``[lo, hi]``.

    Parameters
    ----------
    rows : array_like, shape (N, F)
        Feature rows, finite.
    labels : sequence, length N
        The class of each row; at least two classes.
    lo, hi : array_like, shape (F,)
        Public bounds, ``lo < hi``.

    Returns
    -------
    ndarray, shape (F,)
        ≥ 0; 0 where every class has the same mean. A feature constant within every class has its
        between-class variance over :data:`WITHIN_FLOOR` (in units of ``(hi − lo)²``).

    Raises
    ------
    ValueError
        Shapes that do not agree, values that are not finite, ``lo ≥ hi``, fewer than two classes.

    Examples
    --------
    >>> rows = np.array([[0.0, 1.0], [0.2, 3.0], [1.0, 1.0], [1.2, 3.0]])
    >>> separability(rows, ["a", "a", "b", "b"], lo=[0.0, 0.0], hi=[2.0, 4.0]).round(3).tolist()
    [25.0, 0.0]
    """
    x = np.asarray(rows, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"rows must be an (N, F) array, got shape {x.shape}")
    low, high = _vector("lo", lo, x.shape[1]), _vector("hi", hi, x.shape[1])
    if np.any(low >= high):
        raise ValueError(f"lo must be below hi for every feature, got lo {low.tolist()} and hi {high.tolist()}")
    if not np.all(np.isfinite(x)):
        raise ValueError("rows must be finite")
    if len(labels) != x.shape[0]:
        raise ValueError(f"labels must give one class per row: {len(labels)} labels for {x.shape[0]} rows")
    classes, which = np.unique(np.asarray([str(v) for v in labels]), return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"labels must hold at least two classes, got {classes.tolist()}")
    width = high - low
    z = (np.minimum(np.maximum(x, low), high) - low) / width
    counts = np.bincount(which, minlength=classes.size).astype(np.float64)
    member = (which[None, :] == np.arange(classes.size)[:, None]).astype(np.float64)
    means = (member @ z) / counts[:, None]
    share = counts / counts.sum()
    grand = share @ means
    between = share @ (means - grand) ** 2
    within = np.mean((z - means[which]) ** 2, axis=0)
    return np.asarray(between / np.maximum(within, WITHIN_FLOOR))


def usefulness(task: ArrayLike, protect: ArrayLike | None = None) -> _F64:
    """``uᵢ = max(0, sᵢ − pᵢ)``: how far feature ``i`` separates the task more than the protected
    classes (``protect``: e.g. the participants; None: ``uᵢ = sᵢ``).

    Raises
    ------
    ValueError
        Arrays that are not 1-d, of different lengths, negative or not finite.

    Examples
    --------
    >>> usefulness([2.0, 1.0, 0.5], [0.5, 3.0, 0.0]).tolist()
    [1.5, 0.0, 0.5]
    """
    s = _vector("task", task)
    if np.any(s < 0):
        raise ValueError(f"task separability must be ≥ 0, got {s.tolist()}")
    if protect is None:
        return s.copy()
    p = _vector("protect", protect, s.size)
    if np.any(p < 0):
        raise ValueError(f"protect separability must be ≥ 0, got {p.tolist()}")
    return np.asarray(np.maximum(s - p, 0.0))


def split_weights(useful: ArrayLike, unit_noise: ArrayLike) -> _F64:
    """The weights that minimise :func:`allocation_loss`: ``wᵢ ∝ (uᵢ·aᵢ)^(1/3)``, summing to 1
    (the share of a chunk's ε each feature gets); 0 where ``uᵢ = 0``.

    Parameters
    ----------
    useful : array_like, shape (F,)
        Usefulness ``uᵢ ≥ 0``, not all 0.
    unit_noise : array_like, shape (F,)
        Relative unit noise ``aᵢ > 0``: the noise variance at ``εᵢ = 1`` over ``(hi − lo)²``.

    Raises
    ------
    ValueError
        Shapes that disagree, a negative or non-finite value, ``aᵢ ≤ 0``, every ``uᵢ`` 0.

    Examples
    --------
    >>> split_weights([1.0, 8.0, 0.0], [1.0, 1.0, 5.0]).tolist()  # cube roots 1 : 2
    [0.3333333333333333, 0.6666666666666666, 0.0]
    """
    u = _vector("useful", useful)
    a = _vector("unit_noise", unit_noise, u.size)
    if np.any(u < 0):
        raise ValueError(f"useful must be ≥ 0, got {u.tolist()}")
    if np.any(a <= 0):
        raise ValueError(f"unit_noise must be > 0, got {a.tolist()}")
    if not np.any(u > 0):
        raise ValueError("useful is 0 for every feature: there is nothing to release")
    root = np.cbrt(u * a)
    return np.asarray(root / root.sum())


def allocation_loss(weights: ArrayLike, useful: ArrayLike, unit_noise: ArrayLike, *, epsilon: float = 1.0) -> float:
    """``L(w) = Σᵢ uᵢ·aᵢ/εᵢ²`` with ``εᵢ = ε·wᵢ/Σw``: the usefulness-weighted noise variance (in
    units of each feature's public range) that the weights leave; ``inf`` when a useful feature
    gets weight 0.

    Raises
    ------
    ValueError
        Shapes that disagree, a negative or non-finite value, every weight 0, ``epsilon`` not > 0.

    Examples
    --------
    >>> u, a = [1.0, 8.0], [1.0, 1.0]
    >>> allocation_loss(split_weights(u, a), u, a)  # (1 + 2)³
    27.0
    >>> allocation_loss([1.0, 1.0], u, a)  # an equal split: 2² · 9
    36.0
    """
    w = _vector("weights", weights)
    u = _vector("useful", useful, w.size)
    a = _vector("unit_noise", unit_noise, w.size)
    if np.any(w < 0) or not np.any(w > 0):
        raise ValueError(f"weights must be ≥ 0 and not all 0, got {w.tolist()}")
    if not (isinstance(epsilon, (int, float)) and epsilon > 0 and np.isfinite(epsilon)):
        raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    need = u > 0
    if np.any(need & (w == 0)):
        return float("inf")
    eps = float(epsilon) * w[need] / w.sum()
    return float(np.sum(u[need] * a[need] / eps**2))
