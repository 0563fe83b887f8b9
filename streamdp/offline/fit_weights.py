"""An allocation of ε fitted on labelled pilot recordings (``streamdp fit-weights``).

:func:`fit_weights` takes the unsanitized feature rows of some recordings and their labels and
returns the split of :mod:`streamdp.privacy.allocation`: each feature's usefulness is how far it
separates the ``task`` column more than the ``protect`` column (e.g. the participants: what
re-identifies people gets nothing), and its relative unit noise is what the configured mechanism
adds to it (:func:`unit_noise`). It sees the recordings it is given and nothing else, so an
evaluation fits it on each training fold alone (:func:`fit_training_fold`), and the
:class:`FittedWeights` it returns hold per-feature aggregates and counts, never a row.
:func:`fit_manifest` reads a manifest's recordings (as ``streamdp evaluate`` does) and fits on all
of them; :meth:`FittedWeights.document` is the weights file
(:mod:`streamdp.privacy.weights_file`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import closing
from dataclasses import fields
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..config import SessionConfig
from ..errors import InputError
from ..privacy.allocation import separability, split_weights, usefulness
from ..schema import N_FEATURES
from .epsilon_fit import EpsilonFit, fit_for_epsilon
from .executors import logged
from .fitted_weights import OBJECTIVE, FittedWeights, _frozen, unit_noise
from .recordings import CsvLayout

if TYPE_CHECKING:
    from .grid import LabelledRecording

__all__ = ["OBJECTIVE", "FittedWeights", "fit_manifest", "fit_training_fold", "fit_weights", "unit_noise"]

#: the fewest recordings of each task class: with one, the task's separability is that recording's
MIN_RECORDINGS_PER_CLASS = 2


def _classes(values: Sequence[str], column: str, problem: str) -> dict[str, int]:
    """Recordings per class of ``column``, refused with one class only (``problem`` says why)."""
    counts: dict[str, int] = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    if len(counts) < 2:
        raise InputError(f"column {column!r} has one class only ({next(iter(counts))!r}): {problem}")
    return counts


def _check_columns(task: object, protect: object) -> None:
    for name, value in (("task", task), ("protect", protect)):
        if not (isinstance(value, str) or (name == "protect" and value is None)):
            raise TypeError(f"{name} must be a column name (str), got {value!r}")
        if isinstance(value, str) and not value.strip():
            raise ValueError(f"{name} must not be empty, got {value!r}")
    if protect == task:
        raise ValueError(f"protect must be another column than task, got {protect!r} for both")


def _label_values(
    labels: Sequence[Mapping[str, str]], task: str, protect: str | None
) -> tuple[dict[str, list[str]], dict[str, int], int | None]:
    """Each recording's task, protect and participant labels, the recordings per task class and
    the number of protected classes; refused as :func:`fit_weights` says."""
    columns = [c for c in (task, protect) if c is not None]
    values: dict[str, list[str]] = {c: [] for c in [*columns, "participant"]}
    for i, lab in enumerate(labels):
        if not isinstance(lab, Mapping):
            raise TypeError(f"labels[{i}] must be a mapping of column → value, got {type(lab).__name__}")
        for c in columns:
            if c not in lab:
                raise InputError(f"recording {i} has no column {c!r}")
        for c in values:
            values[c].append(str(lab.get(c, "")))
    per_class = _classes(values[task], task, "there is nothing to separate")
    few = {c: n for c, n in per_class.items() if n < MIN_RECORDINGS_PER_CLASS}
    if few:
        c, n = next(iter(few.items()))
        raise InputError(
            f"column {task!r}: class {c!r} has {n} recording, and fitting needs at least "
            f"{MIN_RECORDINGS_PER_CLASS} of each class (so that the task's separability is not one recording's)"
        )
    if protect is None:
        return values, per_class, None
    return values, per_class, len(_classes(values[protect], protect, "there is no one to protect"))


def fit_weights(
    rows_by_recording: Sequence[ArrayLike],
    labels: Sequence[Mapping[str, str]],
    *,
    task: str,
    protect: str | None = None,
    config: SessionConfig | None = None,
    epsilon: float | None = None,
) -> FittedWeights:
    """Fit the allocation on these recordings only (see the module docstring).

    Parameters
    ----------
    rows_by_recording : sequence of array_like, each (steps, 52)
        Each recording's unsanitized feature rows, finite, at least one.
    labels : sequence of mapping
        Each recording's labels, column → value (e.g. ``{"participant": "P1", "task": "reading"}``).
    task : str
        The column whose classes the weights should keep apart; at least two classes, each of
        at least :data:`MIN_RECORDINGS_PER_CLASS` recordings.
    protect : str, optional
        A column whose classes should not be told apart (e.g. ``"participant"``); at least two
        classes, not ``task``.
    config : SessionConfig, optional
        The bounds and mechanism the weights will be used with (default: the default
        configuration); ε and weights are not used.
    epsilon : float, optional
        The total ε per chunk the weights will run at: how many features to fund is then chosen
        for it by an inner cross-validation on these recordings, grouped by participant
        (:mod:`streamdp.offline.epsilon_fit`). None: every useful feature is funded, the same split
        at every ε.

    Raises
    ------
    TypeError
        A parameter of the wrong type.
    ValueError
        Rows that are not (steps, 52) with steps ≥ 1 or not finite, labels not one per recording,
        ``protect`` equal to ``task``, ``epsilon`` not finite and > 0.
    InputError
        A recording without the ``task`` or ``protect`` column, a column with one class only, a
        task class with fewer than :data:`MIN_RECORDINGS_PER_CLASS` recordings, no feature that
        separates the task more than the protected column; with ``epsilon``, recordings of one
        participant only (each named).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> rows = [rng.uniform(0.0, 1.0, (40, 52)) + 0.5 * (i % 2) for i in range(4)]
    >>> labels = [{"task": "ab"[i % 2], "participant": f"P{i // 2}"} for i in range(4)]
    >>> fitted = fit_weights(rows, labels, task="task", protect="participant")
    >>> round(float(fitted.weights.sum()), 12), fitted.recordings, fitted.participants, fitted.task_classes
    (1.0, 4, 2, 2)
    """
    _check_columns(task, protect)
    if config is not None and not isinstance(config, SessionConfig):
        raise TypeError(f"config must be a SessionConfig, got {type(config).__name__}")
    if epsilon is not None:
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
            raise TypeError(f"epsilon must be a number (the total ε per chunk) or None, got {epsilon!r}")
        if not 0 < epsilon < np.inf:
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
    for name, seq in (("rows_by_recording", rows_by_recording), ("labels", labels)):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, Sequence):
            raise TypeError(f"{name} must be a sequence (one item per recording), got {type(seq).__name__}")
    if len(labels) != len(rows_by_recording):
        raise ValueError(f"labels must be one per recording: {len(labels)} for {len(rows_by_recording)} recordings")
    blocks = []
    for i, rows in enumerate(rows_by_recording):
        x = np.asarray(rows, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != N_FEATURES or x.shape[0] < 1:
            raise ValueError(f"recording {i}: rows must be (steps ≥ 1, {N_FEATURES}), got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError(f"recording {i}: rows must be finite")
        blocks.append(x)
    values, per_class, protect_classes = _label_values(labels, task, protect)
    cfg = config or SessionConfig()
    bounds = cfg.bounds_profile()
    rows = np.concatenate(blocks)
    steps = [len(b) for b in blocks]

    def per_row(column: str) -> list[str]:
        return [v for v, n in zip(values[column], steps, strict=True) for _ in range(n)]

    s = separability(rows, per_row(task), lo=bounds.lo, hi=bounds.hi)
    p = separability(rows, per_row(protect), lo=bounds.lo, hi=bounds.hi) if protect else np.zeros_like(s)
    u = usefulness(s, p if protect else None)
    if not np.any(u > 0):
        against = f" more than {protect!r}" if protect else ""
        raise InputError(f"no feature separates {task!r}{against}: there is no allocation to fit")
    a, model = unit_noise(cfg)
    named = all("participant" in lab for lab in labels)
    weights, fit = split_weights(u, a), None
    if epsilon is not None:
        weights, fit = _for_epsilon(blocks, values, task, protect, named, bounds, a, epsilon)
    return FittedWeights(
        weights=_frozen(weights),
        task=task,
        protect=protect,
        task_separability=_frozen(s),
        protect_separability=_frozen(p),
        useful=_frozen(u),
        unit_noise=_frozen(a),
        recordings=len(blocks),
        feature_rows=int(rows.shape[0]),
        task_classes=len(per_class),
        protect_classes=protect_classes,
        participants=len(set(values["participant"])) if named else None,
        noise_model=model,
        features={f.name: getattr(cfg, f.name) for f in fields(cfg) if f.metadata.get("group") == "features"},
        epsilon_fit=fit,
    )


def _for_epsilon(blocks: list[Any], values: dict[str, list[str]], task: str, protect: str | None, named: bool,
                 bounds: Any, a: Any, epsilon: float) -> tuple[Any, EpsilonFit]:  # fmt: skip
    """:func:`~streamdp.offline.epsilon_fit.fit_for_epsilon`, grouped by participant when the labels
    name them (refused with one), else by recording."""
    if named:
        people = sorted(set(values["participant"]))
        if len(people) < 2:
            raise InputError(
                f"column 'participant' has one person only ({people[0]!r}): fitting for an ε holds a person out "
                "of an inner cross-validation, which needs at least 2"
            )
    groups = values["participant"] if named else [str(i) for i in range(len(blocks))]
    return fit_for_epsilon(
        blocks, values[task], values[protect] if protect else None, groups,
        group_name="participant" if named else "recording", lo=bounds.lo, hi=bounds.hi, unit_noise=a, epsilon=epsilon,
    )  # fmt: skip


def recording_labels(recording: Any) -> dict[str, str]:
    """A :class:`~streamdp.offline.evaluate.LabelledRecording`'s labels: participant, task and the
    manifest's other columns.

    Examples
    --------
    >>> from streamdp.offline.evaluate import LabelledRecording
    >>> recording_labels(LabelledRecording("r", "P1", "reading", np.zeros((1, 52)), labels={"gender": "f"}))
    {'participant': 'P1', 'task': 'reading', 'gender': 'f'}
    """
    return {"participant": recording.participant, "task": recording.task, **recording.labels}


def fit_training_fold(
    recordings: Sequence[Any],
    train: Sequence[int],
    *,
    task: str,
    protect: str | None = None,
    config: SessionConfig | None = None,
    epsilon: float | None = None,
) -> FittedWeights:
    """:func:`fit_weights` (for ``epsilon``, when given) on the training fold ``train`` (indices
    into ``recordings``, e.g. a split of :func:`~streamdp.offline.splits.lopo_splits`) of labelled recordings
    (:class:`~streamdp.offline.evaluate.LabelledRecording`): no other recording is read.

    Raises
    ------
    TypeError
        ``train`` holds something other than ints.
    ValueError
        ``train`` is empty, repeats an index or holds one out of range; as :func:`fit_weights`.
    InputError
        As :func:`fit_weights`, for the fold.

    Examples
    --------
    >>> from streamdp.offline.evaluate import LabelledRecording
    >>> rng = np.random.default_rng(1)
    >>> recs = [LabelledRecording(f"r{i}", f"P{i // 2}", "ab"[i % 2], rng.uniform(0, 1, (30, 52)) + i % 2)
    ...         for i in range(6)]
    >>> fit_training_fold(recs, [2, 3, 4, 5], task="task", protect="participant").recordings  # P0 held out
    4
    """
    idx = [int(i) for i in train if isinstance(i, (int, np.integer)) and not isinstance(i, bool)]
    if len(idx) != len(train):
        raise TypeError(f"train must hold indices (ints), got {list(train)!r}")
    if not idx or len(set(idx)) != len(idx) or not all(0 <= i < len(recordings) for i in idx):
        raise ValueError(f"train must be distinct indices in [0, {len(recordings)}), at least one, got {idx}")
    fold = [recordings[i] for i in sorted(idx)]
    return fit_weights([r.features for r in fold], [recording_labels(r) for r in fold], task=task, protect=protect,
                       config=config, epsilon=epsilon)  # fmt: skip


def fit_manifest(
    manifest: str | Path,
    *,
    task: str,
    protect: str | None = None,
    config: SessionConfig | None = None,
    layout: CsvLayout | None = None,
    each: Callable[[], object] | None = None,
    epsilon: float | None = None,
    workers: int | None = None,
) -> tuple[FittedWeights, str]:
    """Fit on every recording of a manifest (the format ``streamdp evaluate`` reads), their
    feature rows made by the session core as ``streamdp features`` makes them (a recording too
    short for :data:`~streamdp.offline.grid.MIN_STEPS` steps is skipped with a warning, as the
    evaluation skips it); and the manifest's SHA-256. ``each`` is called after each recording;
    ``epsilon``: as :func:`fit_weights`.

    The recordings are read and their rows made on ``workers`` local processes (default: every
    core this process may run on; 1: here, one after another), each recording a job of its own;
    the rows are then put in the manifest's order, so the fit is the same however many there are.

    Raises
    ------
    InputError
        The manifest cannot be read or lacks the ``task`` or ``protect`` column, a recording
        cannot be read, or the fit is refused (:func:`fit_weights`); each named with the manifest.
    TypeError, ValueError
        As :func:`fit_weights`; ``workers`` not an int ≥ 1.

    Examples
    --------
    >>> fit_manifest("/no/such/manifest.csv", task="task")
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: /no/such/manifest.csv: cannot read manifest: No such file or directory
    """
    from .executors import default_workers, job_results, said
    from .grid import MIN_STEPS, log_skipped
    from .manifest import read_manifest_rows

    path = Path(manifest)
    rows = read_manifest_rows(path)
    _check_columns(task, protect)
    have = ["participant", "task", *rows[0].labels]
    for option, column in (("task", task), ("protect", protect)):
        if column is not None and column not in have:
            raise InputError(f"{path}: no column {column!r} to {option} (its columns: {', '.join(have)})")
    try:  # refused before any recording is read
        _label_values([{"participant": r.participant, "task": r.task, **r.labels} for r in rows], task, protect)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ValueError(f"workers must be an int ≥ 1 or None, got {workers!r}")
    cfg = config or SessionConfig()
    tasks = [(row.recording, row.participant, row.task, row.labels) for row in rows]
    count = default_workers() if workers is None else workers
    by_row: dict[int, tuple[str, LabelledRecording | None, int]] = {}
    # spawn, not fork: a fork after scikit-learn or BLAS started threads can deadlock the child
    done = job_results(partial(logged, _recording_rows), tasks, workers=min(count, len(tasks)), shared=(layout, cfg),
                       start_method="spawn")  # fmt: skip
    with closing(done):
        for i, (result, records) in done:
            said(records)  # what reading it logged, said here as it finishes
            by_row[i] = result
            if each is not None:
                each()
    labelled = []
    for i in range(len(rows)):
        name, one, steps = by_row[i]
        if one is None:
            log_skipped(name, steps)
        else:
            labelled.append(one)
    if not labelled:
        raise InputError(f"{path}: no recording gives {MIN_STEPS} feature steps: there is nothing to fit on")
    try:
        fitted = fit_training_fold(labelled, range(len(labelled)), task=task, protect=protect, config=cfg,
                                   epsilon=epsilon)  # fmt: skip
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return fitted, hashlib.sha256(path.read_bytes()).hexdigest()


def _recording_rows(
    layout: CsvLayout | None,
    config: SessionConfig,
    recording: str,
    participant: str,
    task: str,
    labels: Mapping[str, str],
) -> tuple[str, LabelledRecording | None, int]:
    """A manifest row's job (run through :func:`~streamdp.offline.executors.logged`): its recording
    read, its name, feature rows (None: too short) and steps."""
    from .grid import labelled_rows
    from .recordings import open_recording

    rec = open_recording(recording, layout, config)
    return (rec.name, *labelled_rows(rec, participant, task, config, labels))
