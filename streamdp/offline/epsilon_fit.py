"""How many features to fund at the ε an allocation will run at: an inner cross-validation on the
training recordings alone (:func:`fit_for_epsilon`).

With little ε, one or two features released well carry more than twenty released badly. For each
candidate count ``k`` (:data:`K_CANDIDATES`) the ``k`` features of highest expected usefulness
*after* the noise they would get with the whole budget are funded, ε split among them by the closed
form of :func:`~streamdp.privacy.allocation.split_weights`. Each candidate is scored by an inner
cross-validation over the training recordings, grouped by person (a group's recordings, and so all
their steps, are held out together): the features are ranked on the inner training groups only,
noise of the mechanism's variance at each feature's ε is added to every row (the same draws for
every ``k``), and a diagonal linear classifier trained on the noisy inner training rows is scored on
the held-out group's rows. The ``k`` with the best mean accuracy is kept (the smaller on a tie).
Only the recordings given are read: an evaluation passes a training fold, never a test recording.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..privacy.allocation import WITHIN_FLOOR, separability, split_weights, usefulness

__all__ = ["INNER_FOLDS", "K_CANDIDATES", "EpsilonFit", "fit_for_epsilon", "inner_folds", "inner_scores", "ranked"]

_F64 = NDArray[np.float64]

#: the counts of funded features the inner cross-validation chooses from
K_CANDIDATES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 52)
#: the most inner folds: leave one group out up to this many groups, else groups dealt round-robin
INNER_FOLDS = 10
#: the seed of the simulated noise (the fit is deterministic)
NOISE_SEED = 20361


@dataclass(frozen=True)
class EpsilonFit:
    """How the count of funded features was chosen for ``epsilon``.

    Attributes
    ----------
    epsilon : float
        The total ε per chunk the allocation was fitted for.
    k : int
        Features funded.
    score, score_se : float
        Mean inner cross-validated task accuracy at ``k`` and its standard error over the folds.
    chance : float
        The inner folds' accuracy of always answering the training majority class.
    scores : mapping of int to float
        Mean inner accuracy of each candidate count.
    groups : str
        What the inner folds hold out together (``"participant"`` or ``"recording"``).
    splits : tuple of (tuple of int, tuple of int)
        Each inner fold's training and held-out recordings (indices into the recordings fitted).
    """

    epsilon: float
    k: int
    score: float
    score_se: float
    chance: float
    scores: Mapping[int, float]
    groups: str
    splits: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]

    @property
    def above_chance(self) -> bool:
        """Whether the chosen allocation's inner accuracy is above chance by 2 standard errors."""
        return self.score - self.chance > 2.0 * self.score_se

    def facts(self) -> dict[str, Any]:
        """How it was chosen, as the weights file states it."""
        return {
            "method": f"inner cross-validation over the training recordings, grouped by {self.groups}",
            "inner_folds": len(self.splits),
            "k": self.k,
            "score": self.score,
            "score_se": self.score_se,
            "chance": self.chance,
            "above_chance": self.above_chance,
            "scores": {str(k): v for k, v in self.scores.items()},
        }


def inner_folds(groups: Sequence[str], *, folds: int = INNER_FOLDS) -> list[tuple[NDArray[np.intp], NDArray[np.intp]]]:
    """Training and held-out recording indices of each inner fold: one group held out per fold up to
    ``folds`` groups, else the sorted groups dealt round-robin into ``folds`` folds.

    Raises
    ------
    InputError
        Fewer than two groups.

    Examples
    --------
    >>> [(tr.tolist(), te.tolist()) for tr, te in inner_folds(["a", "b", "a"])]
    [([1], [0, 2]), ([0, 2], [1])]
    """
    g = np.asarray([str(v) for v in groups])
    names = np.unique(g)
    if names.size < 2:
        raise InputError(f"the inner cross-validation needs at least 2 people (or recordings), got {names.size}")
    fold_of = {name: j % folds for j, name in enumerate(names)}
    which = np.asarray([fold_of[v] for v in g], dtype=np.intp)
    return [(np.flatnonzero(which != j), np.flatnonzero(which == j)) for j in range(min(folds, names.size))]


def ranked(z: _F64, task: Sequence[str], protect: Sequence[str] | None, unit_noise: _F64, epsilon: float) -> tuple[
        _F64, NDArray[np.intp]]:  # fmt: skip
    """The usefulness of each feature on the rows ``z`` (scaled to [0, 1]) and the useful features in
    order of their usefulness after the noise of the whole budget ``epsilon`` (best first)."""
    s = separability(z, task, lo=np.zeros(z.shape[1]), hi=np.ones(z.shape[1]))
    p = None
    if protect is not None and len(set(protect)) > 1:
        p = separability(z, protect, lo=np.zeros(z.shape[1]), hi=np.ones(z.shape[1]))
    u = usefulness(s, p)
    labels = np.asarray(task)
    within = np.zeros(z.shape[1])
    for c in np.unique(labels):
        part = z[labels == c]
        within += len(part) * part.var(axis=0)
    within = np.maximum(within / len(z), WITHIN_FLOOR)
    after = u * within / (within + unit_noise / epsilon**2)
    order = np.argsort(-after, kind="stable")
    return u, order[u[order] > 0]


def _weights(u: _F64, unit_noise: _F64, order: NDArray[np.intp], k: int, *, equal: bool = False) -> _F64:
    keep = np.zeros(u.size)
    keep[order[:k]] = 1.0
    return keep / k if equal else split_weights(u * keep, unit_noise)


def _accuracy(train: tuple[_F64, NDArray[Any]], test: tuple[_F64, NDArray[Any]]) -> float:
    """A diagonal linear classifier (class means, pooled within-class variance) trained on ``train``
    and scored on ``test``."""
    (x, y), (xt, yt) = train, test
    classes = np.unique(y)
    means = np.stack([x[y == c].mean(axis=0) for c in classes])
    var = np.maximum(np.mean((x - means[np.searchsorted(classes, y)]) ** 2, axis=0), WITHIN_FLOOR)
    d = (((xt[:, None, :] - means[None, :, :]) ** 2) / var).sum(axis=2)
    return float(np.mean(classes[np.argmin(d, axis=1)] == yt))


def inner_scores(
    z: _F64,
    rec: NDArray[np.intp],
    y: NDArray[Any],
    py: NDArray[Any] | None,
    groups: Sequence[str],
    *,
    unit_noise: _F64,
    epsilon: float,
    ks: Sequence[int],
    among: NDArray[np.bool_] | None = None,
    equal: bool = False,
) -> tuple[dict[int, list[float]], list[float], list[tuple[tuple[int, ...], tuple[int, ...]]]]:
    """Each candidate count's accuracy in each inner fold (see the module docstring), the folds'
    chance and their splits.

    ``z``: every row scaled to [0, 1]; ``rec``, ``y``, ``py``: each row's recording, task and
    protected class; ``groups``: each recording's group. ``among`` (default: every feature) limits
    the features that may be funded; ``equal`` gives the funded features equal weights (a shipped
    allocation's form) instead of the closed-form split. A fold whose training rows hold one task
    class or no useful feature is skipped.
    """
    rng = np.random.default_rng(NOISE_SEED)
    draws = rng.standard_normal(z.shape)
    got: dict[int, list[float]] = {k: [] for k in ks}
    chance: list[float] = []
    splits = []
    for train, test in inner_folds(groups):
        tr, te = np.isin(rec, train), np.isin(rec, test)
        if len(set(y[tr].tolist())) < 2:
            continue
        u, order = ranked(z[tr], list(y[tr]), None if py is None else list(py[tr]), unit_noise, epsilon)
        if among is not None:
            order = order[among[order]]
        if order.size == 0:
            continue
        splits.append((tuple(int(i) for i in train), tuple(int(i) for i in test)))
        values, counts = np.unique(y[tr], return_counts=True)
        chance.append(float(np.mean(y[te] == values[np.argmax(counts)])))
        for k in ks:
            w = _weights(u, unit_noise, order, min(k, order.size), equal=equal)
            cols = np.flatnonzero(w > 0)
            noisy = z[:, cols] + draws[:, cols] * np.sqrt(unit_noise[cols]) / (epsilon * w[cols])
            got[k].append(_accuracy((noisy[tr], y[tr]), (noisy[te], y[te])))
    return got, chance, splits


def fit_for_epsilon(
    blocks: Sequence[_F64],
    task: Sequence[str],
    protect: Sequence[str] | None,
    groups: Sequence[str],
    *,
    group_name: str,
    lo: _F64,
    hi: _F64,
    unit_noise: _F64,
    epsilon: float,
) -> tuple[_F64, EpsilonFit]:
    """The weights for ``epsilon`` and how they were chosen (see the module docstring).

    Parameters
    ----------
    blocks : sequence of ndarray, each (steps, F)
        Each recording's feature rows.
    task, protect, groups : sequence of str
        Each recording's task class, protected class (``protect`` None: no protected column) and
        group (the inner folds hold a group's recordings out together).
    group_name : str
        What the groups are, for the file.
    lo, hi, unit_noise : ndarray, shape (F,)
        The public bounds and the mechanism's relative unit noise.
    epsilon : float
        The total ε per chunk, > 0.

    Raises
    ------
    ValueError
        ``epsilon`` not finite and > 0.
    InputError
        Fewer than two groups, no inner fold whose training groups hold two task classes, or no
        useful feature on the recordings (each named).
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0 < epsilon < np.inf:
        raise ValueError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    z_blocks = [(np.clip(b, lo, hi) - lo) / (hi - lo) for b in blocks]
    steps = np.asarray([len(b) for b in z_blocks])
    z = np.concatenate(z_blocks)
    rec = np.repeat(np.arange(len(z_blocks)), steps)
    y = np.repeat(np.asarray(task), steps)
    py = None if protect is None else np.repeat(np.asarray(protect), steps)
    ks = [k for k in K_CANDIDATES if k < z.shape[1]] + [z.shape[1]]
    got, chance, splits = inner_scores(z, rec, y, py, groups, unit_noise=unit_noise, epsilon=epsilon, ks=ks)
    if not splits:
        raise InputError("no inner fold has two task classes and a useful feature among its training recordings")
    means = {k: float(np.mean(v)) for k, v in got.items()}
    best = max(ks, key=lambda k: (round(means[k], 12), -k))
    u, order = ranked(z, list(y), None if py is None else list(py), unit_noise, epsilon)
    if order.size == 0:
        raise InputError("no feature separates the task more than the protected column")
    k = min(best, order.size)
    se = float(np.std(got[best], ddof=1) / np.sqrt(len(got[best]))) if len(got[best]) > 1 else 0.0
    fit = EpsilonFit(float(epsilon), k, means[best], se, float(np.mean(chance)), means, group_name, tuple(splits))
    return _weights(u, unit_noise, order, k), fit
