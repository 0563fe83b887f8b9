"""A learned sequence attacker on released gaze ticks: a small 1-D convolutional network over the
ticks' velocity, in the spirit of "Eye Know You Too" (Lohr & Komogortsev 2022), beside the
feature attacker of :mod:`streamdp.offline.evaluate_gaze` (52 features, four classifiers).

The attacker sees what an app sees: the released positions of each recording's ticks (degrees)
and their times. It cuts each recording at its public midpoint, turns each half into its
velocity ``(dx, dy) / dt`` in degrees per second (within the half alone: no velocity straddles
the cut), clamped to ±1000 °/s and standardized with the training half's mean and sd, and cuts
that into windows of :attr:`CnnSettings.window` ticks. A few dilated ``Conv1d`` layers (batch
norm, ReLU), global average pooling and a linear layer over the labels (the people, or a
manifest's tasks: :func:`cnn_classification`) are trained on the windows of every recording's
first half, and classify the windows of its second half; the accuracy is per window and with a
majority vote over each recording's test half, as the feature attacker reports it
(:func:`~streamdp.offline.classify.accuracy`).

PyTorch is an optional extra (``pip install 'streamdp[attack]'``), imported only when the
attacker runs (:func:`require_torch`). Training is seeded and runs with PyTorch's deterministic
algorithms on a fixed number of CPU threads, within a forked random state: the same inputs and
seed give the same accuracy, and the caller's global torch state is left as it was.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .classify import accuracy

_F64 = NDArray[np.float64]

#: the attackers of ``evaluate --channel gaze`` (re-identification and task): 52 features and
#: four classifiers, or the convolutional network (the ``attack`` extra)
ATTACKERS = ("features", "cnn")
#: the classifier column of the network's result rows
CNN_CLASSIFIER = "cnn"
#: velocities beyond this many degrees per second are clamped (a saccade peaks below ~700 °/s)
VELOCITY_CLAMP = 1000.0
#: degrees per second where the network's input turns from linear to logarithmic
VELOCITY_SCALE = 5.0
#: the message when PyTorch is missing
MISSING_TORCH = "the cnn attacker needs the optional extra: pip install 'streamdp[attack]'"


@dataclass(frozen=True)
class CnnSettings:
    """The network and its training: windows of ``window`` velocities, ``stride`` apart when
    training and ``window // 2`` apart when testing; ``channels`` per convolution (kernel 3), one
    convolution per entry of ``dilations``; ``epochs`` of Adam at ``learning_rate`` over batches of
    ``batch`` windows; ``threads`` CPU threads (fixed, so that the sums run in one order).

    Raises
    ------
    TypeError
        A setting of the wrong type (named).
    ValueError
        A setting out of range (named).

    Examples
    --------
    >>> CnnSettings(window=4)
    Traceback (most recent call last):
    ...
    ValueError: window must be an int ≥ 8, got 4
    """

    window: int = 120
    stride: int = 60
    channels: int = 16
    dilations: tuple[int, ...] = (1, 2, 4, 8)
    epochs: int = 6
    batch: int = 64
    learning_rate: float = 3e-3
    threads: int = 1

    def __post_init__(self) -> None:
        for name, low in (("window", 8), ("stride", 1), ("channels", 1), ("epochs", 1), ("batch", 1), ("threads", 1)):
            _int(name, getattr(self, name), low)
        if not isinstance(self.dilations, tuple) or not self.dilations:
            raise TypeError(f"dilations must be a non-empty tuple of ints, got {self.dilations!r}")
        for d in self.dilations:
            _int("dilations", d, 1)
        lr = self.learning_rate
        if isinstance(lr, bool) or not isinstance(lr, (int, float)):
            raise TypeError(f"learning_rate must be a float, got {lr!r}")
        if not (math.isfinite(lr) and lr > 0):
            raise ValueError(f"learning_rate must be finite and > 0, got {lr!r}")


def check_attackers(attackers: Sequence[str]) -> tuple[str, ...]:
    """``attackers`` as a tuple, each once, if each is one of :data:`ATTACKERS` and there is one.

    Raises
    ------
    TypeError
        Not a sequence of strings.
    ValueError
        Empty, or an unknown attacker (named).

    Examples
    --------
    >>> check_attackers(["cnn", "features", "cnn"])
    ('cnn', 'features')
    >>> check_attackers(["lstm"])
    Traceback (most recent call last):
    ...
    ValueError: attackers must be some of features, cnn, got 'lstm'
    """
    if isinstance(attackers, str) or not all(isinstance(a, str) for a in attackers):
        raise TypeError(f"attackers must be a sequence of names, got {attackers!r}")
    for a in attackers:
        if a not in ATTACKERS:
            raise ValueError(f"attackers must be some of {', '.join(ATTACKERS)}, got {a!r}")
    if not attackers:
        raise ValueError("attackers must name at least one attacker, got none")
    return tuple(dict.fromkeys(attackers))


def attacker_rows(rows: Sequence[dict[str, Any]], attacker: str) -> list[dict[str, Any]]:
    """The result rows of one attacker: the network's (classifier :data:`CNN_CLASSIFIER`) or the
    feature attacker's (every other row, utility included)."""
    if attacker == CNN_CLASSIFIER:
        return [r for r in rows if r["classifier"] == CNN_CLASSIFIER]
    return [r for r in rows if r["classifier"] != CNN_CLASSIFIER]


def attackers_of(rows: Sequence[dict[str, Any]], metric: str = "reidentification") -> list[str]:
    """The attackers with rows of ``metric`` (re-identification, or ``"task_accuracy"``) in
    ``rows``, in the order of :data:`ATTACKERS`."""
    found = {CNN_CLASSIFIER if r["classifier"] == CNN_CLASSIFIER else "features"
             for r in rows if r["metric"] == metric}  # fmt: skip
    return [a for a in ATTACKERS if a in found]


def _int(name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{name} must be an int ≥ {low}, got {value!r}")


def require_torch() -> ModuleType:
    """PyTorch, imported now.

    Raises
    ------
    ImportError
        PyTorch is not installed: :data:`MISSING_TORCH`, naming the extra.
    """
    try:
        import torch
    except ImportError:
        raise ImportError(MISSING_TORCH) from None
    return torch


def velocity(t: _F64, deg: _F64) -> _F64:
    """The velocity between consecutive ticks, (m − 1, 2) degrees per second, clamped to
    ±:data:`VELOCITY_CLAMP`.

    Examples
    --------
    >>> velocity(np.array([0.0, 0.5, 1.0]), np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 2000.0]])).tolist()
    [[2.0, 0.0], [0.0, 1000.0]]
    """
    dt = np.diff(t)
    v = np.diff(deg, axis=0) / np.where(dt > 0, dt, np.inf)[:, None]
    return np.asarray(np.clip(v, -VELOCITY_CLAMP, VELOCITY_CLAMP), dtype=np.float64)


def windows(v: _F64, size: int, stride: int) -> NDArray[np.float32]:
    """The windows ``v[s : s + size]`` for ``s = 0, stride, …`` that fit, as (k, 2, size).

    Examples
    --------
    >>> windows(np.arange(10.0).reshape(5, 2), 2, 2).tolist()
    [[[0.0, 2.0], [1.0, 3.0]], [[4.0, 6.0], [5.0, 7.0]]]
    """
    starts = np.arange(0, len(v) - size + 1, stride)
    if not len(starts):
        return np.empty((0, 2, size), dtype=np.float32)
    idx = starts[:, None] + np.arange(size)[None, :]
    return np.ascontiguousarray(v[idx].transpose(0, 2, 1), dtype=np.float32)


@dataclass(frozen=True, eq=False)
class _Windows:
    x: NDArray[np.float32]
    label: NDArray[np.intp]
    recording: NDArray[np.intp]


def _split_windows(
    tracks: Sequence[tuple[_F64, _F64]], labels: NDArray[np.intp], mids: Sequence[float], s: CnnSettings
) -> tuple[_Windows, _Windows]:
    """The training windows (first halves, ``stride`` apart) and the test windows (second halves,
    half a window apart), standardized with the training velocities' mean and sd."""
    train_v, test_v = [], []
    for (t, deg), mid in zip(tracks, mids, strict=True):
        cut = int(np.searchsorted(t, mid, side="right"))
        train_v.append(velocity(t[:cut], deg[:cut]))
        test_v.append(velocity(t[cut:], deg[cut:]))
    pooled = _squash(np.concatenate([v for v in train_v if len(v)] or [np.zeros((1, 2))]))
    mean, sd = pooled.mean(axis=0), pooled.std(axis=0)
    sd = np.where(sd > 0, sd, 1.0)
    out = []
    for vs, stride in ((train_v, s.stride), (test_v, max(1, s.window // 2))):
        xs = [windows((_squash(v) - mean) / sd, s.window, stride) for v in vs]
        lab = [np.full(len(x), labels[i], dtype=np.intp) for i, x in enumerate(xs)]
        rec = [np.full(len(x), i, dtype=np.intp) for i, x in enumerate(xs)]
        out.append(_Windows(np.concatenate(xs), np.concatenate(lab), np.concatenate(rec)))
    return out[0], out[1]


def _squash(v: _F64) -> _F64:
    """Velocities on a scale that is linear below ~:data:`VELOCITY_SCALE` and logarithmic above
    (``asinh``), so that fixational drift and noise weigh beside saccades."""
    return np.asarray(np.arcsinh(v / VELOCITY_SCALE))


@contextmanager
def _seeded(torch: Any, seed: int, threads: int) -> Iterator[None]:
    """Torch's global random state seeded, deterministic algorithms on and ``threads`` CPU
    threads inside; all three as they were outside."""
    det, n = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        torch.use_deterministic_algorithms(True)
        torch.set_num_threads(threads)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(det)
            torch.set_num_threads(n)


def _network(torch: Any, classes: int, s: CnnSettings) -> Any:
    nn = torch.nn
    layers: list[Any] = []
    c_in = 2
    for d in s.dilations:
        layers += [nn.Conv1d(c_in, s.channels, 3, dilation=d, padding=d), nn.BatchNorm1d(s.channels), nn.ReLU()]
        c_in = s.channels
    layers += [nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(s.channels, classes)]
    return nn.Sequential(*layers)


def _train_predict(torch: Any, train: _Windows, test: _Windows, classes: int, s: CnnSettings) -> NDArray[np.intp]:
    net = _network(torch, classes, s)
    opt = torch.optim.Adam(net.parameters(), lr=s.learning_rate)
    loss = torch.nn.CrossEntropyLoss()
    x, y = torch.from_numpy(train.x), torch.from_numpy(train.label.astype(np.int64))
    net.train()
    for _ in range(s.epochs):
        order = torch.randperm(len(x))
        for lo in range(0, len(x), s.batch):
            pick = order[lo : lo + s.batch]
            if len(pick) < 2:  # batch norm needs two windows
                continue
            opt.zero_grad()
            loss(net(x[pick]), y[pick]).backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        logits = torch.cat([net(torch.from_numpy(test.x[lo : lo + 512])) for lo in range(0, len(test.x), 512)])
    return np.asarray(logits.argmax(dim=1).numpy(), dtype=np.intp)


def cnn_classification(
    tracks: Sequence[tuple[_F64, _F64]],
    labels: Sequence[str],
    mids: Sequence[float],
    *,
    seed: int = 0,
    settings: CnnSettings | None = None,
) -> tuple[float, float]:
    """(per-window, voted) accuracy of the network telling each test half's label: the person
    (re-identification, :func:`cnn_reidentification`) or any other label of the recordings, such
    as a manifest's task column. The protocol is the same for every label: the first halves train,
    the second halves test, so the network has seen each recording's first half (with a task that
    each person does once, it may find the task through the recording; the feature attacker
    classifies a task leaving one participant out).

    Parameters
    ----------
    tracks : sequence of (t, deg)
        Each recording's released ticks: times (m,) strictly increasing and positions (m, 2) in
        degrees (after any public filter the attacker chose).
    labels : sequence of str
        The label of each recording.
    mids : sequence of float
        Each recording's public cut: ticks at ``t ≤ mid`` train, the others test.
    seed : int
        Seeds the network's initial weights and the order of its training batches.
    settings : CnnSettings, optional
        The network and its training (default :class:`CnnSettings`).

    Raises
    ------
    ImportError
        PyTorch is missing (:data:`MISSING_TORCH`).
    TypeError
        ``seed`` not an int, or ``settings`` not :class:`CnnSettings`.
    ValueError
        Lengths that differ, a track of bad shape, fewer than two labels with training windows,
        or no test window (named).

    Examples
    --------
    >>> cnn_classification([], ["reading"], [])
    Traceback (most recent call last):
    ...
    ValueError: tracks, labels and mids must have one entry per recording, got 0, 1 and 0
    """
    s = settings if settings is not None else CnnSettings()
    if not isinstance(s, CnnSettings):
        raise TypeError(f"settings must be CnnSettings, got {type(settings).__name__}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if not (len(tracks) == len(labels) == len(mids)):
        raise ValueError(f"tracks, labels and mids must have one entry per recording, got {len(tracks)}, "
                         f"{len(labels)} and {len(mids)}")  # fmt: skip
    checked = []
    for i, (t, deg) in enumerate(tracks):
        tt, dd = np.asarray(t, dtype=np.float64), np.asarray(deg, dtype=np.float64)
        if tt.ndim != 1 or dd.shape != (len(tt), 2):
            raise ValueError(f"tracks[{i}] must be times (m,) and degrees (m, 2), got shapes {tt.shape} and {dd.shape}")
        checked.append((tt, dd))
    names, index = np.unique(np.asarray(labels), return_inverse=True)
    train, test = _split_windows(checked, index.astype(np.intp), mids, s)
    if len(np.unique(train.label)) < 2:
        raise ValueError(f"fewer than two labels have a training window of {s.window} ticks")
    if not len(test.x):
        raise ValueError(f"no recording has a test window of {s.window} ticks")
    torch = require_torch()
    with _seeded(torch, int(seed), s.threads):
        pred = _train_predict(torch, train, test, len(names), s)
    return accuracy(names[pred], names[test.label], test.recording)


def cnn_reidentification(
    tracks: Sequence[tuple[_F64, _F64]],
    people: Sequence[str],
    mids: Sequence[float],
    *,
    seed: int = 0,
    settings: CnnSettings | None = None,
) -> tuple[float, float]:
    """(per-window, voted) accuracy of the network telling who released each test half:
    :func:`cnn_classification` of the recordings' ``people``.

    Raises
    ------
    ImportError, TypeError, ValueError
        As :func:`cnn_classification` (the people are its labels).

    Examples
    --------
    >>> cnn_reidentification([], [], [], seed=1.5)
    Traceback (most recent call last):
    ...
    TypeError: seed must be an int, got 1.5
    """
    return cnn_classification(tracks, people, mids, seed=seed, settings=settings)


__all__ = [
    "ATTACKERS",
    "CNN_CLASSIFIER",
    "MISSING_TORCH",
    "CnnSettings",
    "attacker_rows",
    "attackers_of",
    "check_attackers",
    "cnn_classification",
    "cnn_reidentification",
    "require_torch",
    "velocity",
    "windows",
]
