"""The classifiers of ``streamdp evaluate`` and the two attacks it measures.

k-NN (k = 11, or fewer when the training set is smaller), SVM (RBF, C = 1), a decision tree and
a random forest (10 trees), each after a standardization fitted on the training fold only (a
scikit-learn pipeline; scikit-learn comes with the ``evaluate`` extra and is imported only here,
inside the functions). Accuracy is reported per sample and with majority voting over each test
recording's samples, as Bozkir et al. did. Samples are every ``every``-th released step (5 for
re-identification, 10 for the task) so that overlapping 30 s windows do not dominate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..privacy.utility import mean_utility
from .splits import chunked_split, cross_session_folds, lopo_splits

CLASSIFIERS = ("knn", "svm", "tree", "forest")
#: how re-identification splits train and test
REID_SPLITS = ("chunked", "cross-session")


class Released(NamedTuple):
    """One recording's released steps: their unsanitized rows, what the mechanism made, the step
    times and the chunk of each step."""

    clean: NDArray[np.float64]
    noisy: NDArray[np.float64]
    t: NDArray[np.float64]
    chunk: NDArray[np.intp]


def make_classifier(name: str, n_train: int, seed: int = 0) -> Any:
    """A scikit-learn pipeline: standardization fitted on the training fold only, then the model."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    models: dict[str, Callable[[], Any]] = {
        "knn": lambda: KNeighborsClassifier(n_neighbors=max(1, min(11, n_train))),
        "svm": lambda: SVC(kernel="rbf", C=1.0, gamma="scale"),
        "tree": lambda: DecisionTreeClassifier(random_state=seed),
        "forest": lambda: RandomForestClassifier(n_estimators=10, random_state=seed),
    }
    return make_pipeline(StandardScaler(), models[name]())


def accuracy(pred: NDArray[Any], truth: NDArray[Any], rec_of: NDArray[np.intp]) -> tuple[float, float]:
    """(per-sample accuracy, accuracy of each recording's majority vote; a tie goes to the label
    that sorts first)."""
    per_sample = float(np.mean(pred == truth))
    votes = []
    for r in np.unique(rec_of):
        m = rec_of == r
        labels, counts = np.unique(pred[m], return_counts=True)
        votes.append(labels[np.argmax(counts)] == truth[m][0])
    return per_sample, float(np.mean(votes))


def stack_rows(
    parts: Sequence[Released], rows: Sequence[NDArray[np.intp]], every: int
) -> tuple[NDArray[np.float64], NDArray[np.intp]]:
    """The noisy rows ``rows[i][::every]`` of each recording i, and the recording of each."""
    picked = [r[::every] for r in rows]
    x = [p.noisy[r] for p, r in zip(parts, picked, strict=True)]
    rec_of = [np.full(len(r), i, dtype=np.intp) for i, r in enumerate(picked)]
    return np.concatenate(x), np.concatenate(rec_of)


def fit_predict(name: str, x_train: Any, y_train: Any, x_test: Any, seed: int) -> NDArray[Any]:
    """The labels classifier ``name`` (:data:`CLASSIFIERS`), fitted on the training rows alone,
    predicts for the test rows."""
    return np.asarray(make_classifier(name, len(x_train), seed).fit(x_train, y_train).predict(x_test))


def reidentification(
    parts: Sequence[Released],
    people: Sequence[str],
    *,
    split: str = "chunked",
    window: float = 30.0,
    every: int = 5,
    seed: int = 0,
) -> dict[str, tuple[float, float]]:
    """Per classifier: (per-sample, voted) accuracy of telling who produced the test samples.

    ``split="chunked"``: each recording's first chunks train and its later chunks test, at least
    ``window`` s apart (:func:`~streamdp.offline.splits.chunked_split`); a recording that cannot
    give both is left out of the attack. ``split="cross-session"``: whole recordings train and a
    person's other recording tests (:func:`~streamdp.offline.splits.cross_session_folds`).

    Raises
    ------
    ValueError
        An unknown split, or no recording (person) that can be tested.
    """
    if split not in REID_SPLITS:
        raise ValueError(f"split must be one of {', '.join(REID_SPLITS)}, got {split!r}")
    y_of = np.asarray(people)
    out: dict[str, tuple[float, float]] = {}
    if split == "chunked":
        cuts = [chunked_split(p.t, p.chunk, window) for p in parts]
        x_tr, rec_tr = stack_rows(parts, [c[0] for c in cuts], every)
        x_te, rec_te = stack_rows(parts, [c[1] for c in cuts], every)
        if not len(x_te):
            raise ValueError(f"no recording has two chunks {window:g} s apart to train and test on")
        for name in CLASSIFIERS:
            pred = fit_predict(name, x_tr, y_of[rec_tr], x_te, seed)
            out[name] = accuracy(pred, y_of[rec_te], rec_te)
        return out
    folds = list(cross_session_folds(people))
    if not folds:
        raise ValueError("cross-session re-identification needs a person with two recordings")
    whole = [np.arange(len(p.noisy)) for p in parts]
    x, rec_of = stack_rows(parts, whole, every)
    for name in CLASSIFIERS:
        preds: list[NDArray[Any]] = []
        truth: list[NDArray[Any]] = []
        recs: list[NDArray[np.intp]] = []
        for train, test in folds:
            tr, te = np.isin(rec_of, train), np.isin(rec_of, test)
            preds.append(fit_predict(name, x[tr], y_of[rec_of[tr]], x[te], seed))
            truth.append(y_of[rec_of[te]])
            recs.append(rec_of[te] + len(parts) * len(recs))  # each fold's votes apart
        out[name] = accuracy(np.concatenate(preds), np.concatenate(truth), np.concatenate(recs))
    return out


def task_classification(
    parts: Sequence[Released], people: Sequence[str], labels: Sequence[str], *, every: int = 10, seed: int = 0
) -> dict[str, tuple[float, float]]:
    """Per classifier: (per-sample, voted) accuracy of recognizing each recording's label, leaving
    one participant out (the classifier never saw the tested person)."""
    x, rec_of = stack_rows(parts, [np.arange(len(p.noisy)) for p in parts], every)
    y = np.asarray(labels)[rec_of]
    groups = list(np.asarray(people)[rec_of])
    out = {}
    for name in CLASSIFIERS:
        preds = np.empty(len(y), dtype=y.dtype)
        for _, train, test in lopo_splits(groups):
            preds[test] = fit_predict(name, x[train], y[train], x[test], seed)
        out[name] = accuracy(preds, y, rec_of)
    return out


def label_utility(
    parts: Sequence[Released], labels: Sequence[str], released: NDArray[np.bool_] | None = None
) -> dict[str, float]:
    """Utility (mean ``1/|NMSE|`` over features) per label, over that label's recordings; with
    ``released``, over those features only (a feature of weight 0 goes out as a public constant:
    counting it would credit the mechanism with a utility it did not release).

    Examples
    --------
    >>> a = Released(np.ones((4, 2)), np.full((4, 2), 1.5), np.arange(4.0), np.zeros(4, dtype=np.intp))
    >>> label_utility([a, a], ["read", "read"])
    {'read': 6.0}
    """
    out = {}
    for label in sorted(set(labels)):
        mine = [p for p, lab in zip(parts, labels, strict=True) if lab == label and len(p.clean)]
        if mine:
            clean, noisy = np.concatenate([p.clean for p in mine]), np.concatenate([p.noisy for p in mine])
            if released is not None:
                clean, noisy = clean[:, released], noisy[:, released]
            out[label] = mean_utility(clean, noisy)
    return out
