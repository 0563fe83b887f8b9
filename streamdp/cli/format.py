"""How the command line shows a sanitized chunk and a session's status: sentences for people,
JSON lines for programs.

One chunk formatter serves both an in-process release (``format_chunk(release.to_message())``)
and a message a subscriber received (the same payload, decoded), so ``demo --offline``, the
networked ``demo`` and ``subscribe`` print the same lines for the same chunk; with ``--json``
they print :func:`json_line` of the message instead, one object per line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TextIO

import numpy as np

from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, StatusEvent, check_status

#: features shown per chunk (their mean over the chunk's steps): a rate, a duration, the pupil, blinks
SHOWN_FEATURES = ("fixation_rate", "fixation_duration_mean", "pupil_mean_mean", "blink_rate")

#: each status event in words
EVENT_WORDS = {
    StatusEvent.RUNNING: "running",
    StatusEvent.BUDGET_EXHAUSTED: "budget exhausted",
    StatusEvent.CAPTURE_RESTARTED: "Pupil Capture restarted, new segment",
    StatusEvent.RECONNECTING: "reconnecting to the source",
    StatusEvent.STOPPED: "stopped",
}


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is 1.

    Examples
    --------
    >>> counted(1, "observer"), counted(3, "observer")
    ('1 observer', '3 observers')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def format_chunk(message: Mapping[str, Any]) -> str:
    """Two lines for one sanitized chunk: what it costs and what is protected, in the ledger's
    own sentences; then a few feature means over the chunk.

    ``message`` is :meth:`PrivateRelease.to_message` or what a subscriber decoded from the topic.

    Raises
    ------
    KeyError, TypeError, ValueError, IndexError
        ``message`` is not a chunk message (a subscriber should report and skip it).

    Examples
    --------
    >>> from streamdp.config import SessionConfig
    >>> from streamdp.synthetic import generate
    >>> pipe = SessionConfig(chunk_length=32, seed=0).private_pipeline()
    >>> release = pipe.run(generate(duration=50.0, seed=1).recording)[0]
    >>> print(format_chunk(release.to_message()).split(";")[0])
    chunk 0: streamdp.features.dcfpa, t 1030.0–1045.5 s (32 steps): ε 52 for this chunk (1 per feature × 52 features)
    """
    led = message["ledger"]
    names = list(message["names"])
    t = message["t"]
    values = np.asarray(message["values"], dtype=np.float64).reshape(len(t), len(names))
    guarantee = led.get("guarantee", f"ε {led['epsilon_chunk']:g} per chunk")
    raw = led.get("raw_gaze_guarantee", f"one gaze sample is protected at ε ≤ {led['raw_gaze_epsilon']:g}")
    left = led.get("budget_left")
    spent = f"spent so far {led['epsilon_spent']:g}" + (f", {left:g} of the budget left" if left is not None else "")
    means = ", ".join(
        f"{name} {values[:, names.index(name)].mean():.3g}" for name in SHOWN_FEATURES if name in names
    )
    clipped = led.get("clipped_fraction", message.get("clipped_fraction"))
    clipped_text = f"; {clipped:.1%} of values clipped to the bounds" if isinstance(clipped, (int, float)) else ""
    return (
        f"chunk {led['chunk_index']}: {message['topic']}, t {t[0]:.1f}–{t[-1]:.1f} s ({counted(len(t), 'step')}): "
        f"ε {led['epsilon_chunk']:g} for this chunk ({led['epsilon_per_feature']:g} per feature × "
        f"{counted(len(names), 'feature')}); protected ({led['unit']} unit): {guarantee}; {spent}; {raw}\n"
        f"  means over the chunk: {means or '-'}{clipped_text}"
    )


def format_status(status: SessionStatus) -> str:
    """One sentence for a session's status: what happened, the counters, ε spent, subscribers.

    Raises
    ------
    TypeError
        ``status`` is not a :class:`~streamdp.status.SessionStatus` (decode a subscriber's
        message with :meth:`SessionStatus.from_message` first).

    Examples
    --------
    >>> line = format_status(SessionStatus(mechanism="dcfpa", received=10, released=1, epsilon_spent=52.0))
    >>> for part in line.split("; "):
    ...     print(part)
    running (dcfpa): 10 gaze samples received, 1 chunk released, ε 52 spent
    skipped 0 malformed, 0 invalid, 0 late
    0 dropped steps, 0 reconnects, 0 restarts
    0 subscribers
    """
    s = check_status(status)
    budget = ", the budget is exhausted" if s.budget_exhausted else ""
    return (
        f"{EVENT_WORDS[s.event]} ({s.mechanism}): {counted(s.received, 'gaze sample')} received, "
        f"{counted(s.released, 'chunk')} released, ε {s.epsilon_spent:g} spent{budget}; "
        f"skipped {s.malformed} malformed, {s.invalid} invalid, {s.late} late; "
        f"{counted(s.dropped_steps, 'dropped step')}, {counted(s.reconnects, 'reconnect')}, "
        f"{counted(s.restarts, 'restart')}; {counted(s.subscribers, 'subscriber')}"
    )


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


def json_line(message: Mapping[str, Any]) -> str:
    """``message`` (a chunk or status as published) as one line of JSON.

    Examples
    --------
    >>> json_line({"t": np.array([1.0, 1.5]), "event": "running"})
    '{"t": [1.0, 1.5], "event": "running"}'
    """
    return json.dumps(dict(message), ensure_ascii=False, default=_plain)


class PrintingSink:
    """A :class:`~streamdp.sinks.ReleaseSink` that prints each release with :func:`format_chunk`
    (with ``as_json``: :func:`json_line` of its message) to ``out`` and, when ``status_out`` is
    given, each status with :func:`format_status` to it.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, or :meth:`publish_status`
        anything but a :class:`~streamdp.status.SessionStatus`.
    """

    def __init__(self, out: TextIO, status_out: TextIO | None = None, *, as_json: bool = False) -> None:
        self.out = out
        self.status_out = status_out
        self.as_json = as_json

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        message = release.to_message()
        print(json_line(message) if self.as_json else format_chunk(message), file=self.out, flush=True)

    def publish_status(self, status: SessionStatus) -> None:
        line = format_status(status)
        if self.status_out is not None:
            print(line, file=self.status_out, flush=True)

    def close(self) -> None:
        """Nothing to release: the streams belong to the caller."""
