"""Train/test splits of ``streamdp evaluate`` that leak nothing between the two sides.

A feature step summarizes the 30 s window before it, and a chunk's noise is drawn once for all its
steps: a split that falls inside a chunk, or puts two steps less than a window apart on both
sides, lets the classifier see the test gaze (or the test noise) while training. Every split here
works on whole chunks and, within one recording, leaves at least one window between the last
training step and the first test step.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
from numpy.typing import NDArray


def chunked_split(
    t: NDArray[np.float64], chunk: NDArray[np.intp], window: float
) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
    """Train and test rows of one recording's released steps: the first chunks train, the later
    chunks whose first step comes at least ``window`` seconds after the last training step test,
    and the chunks in between are left out. The cut is the chunk boundary that makes the smaller
    side largest (the earlier one on a tie).

    Parameters
    ----------
    t : array of float
        Step times, increasing.
    chunk : array of int
        The chunk of each step (equal for the steps of one chunk, increasing).
    window : float
        The gap in seconds, at least the feature window so that no window is on both sides.

    Returns
    -------
    train, test : arrays of int
        Row indices; both empty when the recording has no two chunks ``window`` apart.

    Examples
    --------
    >>> t = np.arange(8) * 10.0
    >>> train, test = chunked_split(t, np.repeat([0, 1, 2, 3], 2), window=30.0)
    >>> train.tolist(), test.tolist()
    ([0, 1], [4, 5, 6, 7])
    """
    ids, first, sizes = np.unique(chunk, return_index=True, return_counts=True)
    last = first + sizes - 1
    best, cut = 0, 0
    for c in range(1, len(ids)):
        gap_ok = t[first[c:]] - t[last[c - 1]] >= window
        smaller = min(int(sizes[:c].sum()), int(sizes[c:][gap_ok].sum()))
        if smaller > best:
            best, cut = smaller, c
    if not best:
        return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
    tested = ids[cut:][t[first[cut:]] - t[last[cut - 1]] >= window]
    train = np.flatnonzero(np.isin(chunk, ids[:cut]))
    return train, np.flatnonzero(np.isin(chunk, tested))


def cross_session_folds(people: Sequence[str]) -> Iterator[tuple[list[int], list[int]]]:
    """Folds of recordings for re-identification across sessions: in fold j every person with at
    least two recordings is tested on their j-th recording and the classifier trains on all the
    other recordings of everyone. A person's test recording is never in its fold's training set,
    and a person with one recording only trains (a distractor).

    Examples
    --------
    >>> list(cross_session_folds(["a", "a", "b", "b", "c"]))
    [([1, 3, 4], [0, 2]), ([0, 2, 4], [1, 3])]
    """
    order: dict[str, list[int]] = {}
    for i, p in enumerate(people):
        order.setdefault(p, []).append(i)
    tested = [recs for recs in order.values() if len(recs) > 1]
    for j in range(max((len(r) for r in tested), default=0)):
        test = sorted(recs[j] for recs in tested if j < len(recs))
        yield [i for i in range(len(people)) if i not in test], test


def lopo_splits(groups: Sequence[str]) -> Iterator[tuple[str, NDArray[np.intp], NDArray[np.intp]]]:
    """Leave one participant out: (participant, train indices, test indices) per participant.

    Examples
    --------
    >>> [(p, tr.tolist(), te.tolist()) for p, tr, te in lopo_splits(["a", "b", "a"])]
    [('a', [1], [0, 2]), ('b', [0, 2], [1])]
    """
    g = np.asarray(groups)
    for person in sorted(set(groups)):
        yield person, np.flatnonzero(g != person), np.flatnonzero(g == person)
