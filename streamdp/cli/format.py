"""How the command line shows a sanitized chunk and a session's status.

One chunk formatter serves both an in-process release (``format_chunk(release.to_message())``)
and a message a subscriber received (the same payload, decoded), so ``demo --offline``, the
networked ``demo`` and ``subscribe`` print the same lines for the same chunk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TextIO

import numpy as np

from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, check_status

#: features shown per chunk (their mean over the chunk's steps): a rate, a duration, the pupil, blinks
SHOWN_FEATURES = ("fixation_rate", "fixation_duration_mean", "pupil_mean_mean", "blink_rate")


def format_chunk(message: Mapping[str, Any]) -> str:
    """Two lines for one sanitized chunk: its topic, time span, steps and a few feature means,
    then its ledger entry.

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
    >>> print(format_chunk(release.to_message()).split("  ")[0])
    chunk 0: streamdp.features.dcfpa
    """
    led = message["ledger"]
    names = list(message["names"])
    t = message["t"]
    values = np.asarray(message["values"], dtype=np.float64).reshape(len(t), len(names))
    means = "  ".join(
        f"{name}={values[:, names.index(name)].mean():.3g}" for name in SHOWN_FEATURES if name in names
    )
    clipped = led.get("clipped_fraction", message.get("clipped_fraction"))
    clipped_text = f"{clipped:.1%}" if isinstance(clipped, (int, float)) else "-"
    return (
        f"chunk {led['chunk_index']}: {message['topic']}  t={t[0]:.1f}..{t[-1]:.1f}s  n={len(t)}  {means}\n"
        f"  ledger: ε/feature={led['epsilon_per_feature']:g} ε/chunk={led['epsilon_chunk']:g} "
        f"spent={led['epsilon_spent']:g} unit={led['unit']} k={led.get('k', '-')} "
        f"clipped={clipped_text} raw-gaze ε≤{led['raw_gaze_epsilon']:g} bounds={led['bounds_digest']}"
    )


def format_status(status: SessionStatus) -> str:
    """One line for a session's status (counters, ε spent, budget, subscribers).

    Raises
    ------
    TypeError
        ``status`` is not a :class:`~streamdp.status.SessionStatus` (decode a subscriber's
        message with :meth:`SessionStatus.from_message` first).

    Examples
    --------
    >>> line = format_status(SessionStatus(mechanism="dcfpa", received=10, released=2, epsilon_spent=104.0))
    >>> print(line[:64])
    status running: dcfpa, received 10, malformed 0, invalid 0, late
    >>> print(line[-51:])
    restarts 0, ε spent 104, budget open, subscribers 0
    """
    s = check_status(status)
    budget = "EXHAUSTED" if s.budget_exhausted else "open"
    return (
        f"status {s.event.value}: {s.mechanism}, received {s.received}, malformed {s.malformed}, "
        f"invalid {s.invalid}, late {s.late}, released {s.released}, dropped steps {s.dropped_steps}, "
        f"reconnects {s.reconnects}, restarts {s.restarts}, ε spent {s.epsilon_spent:g}, budget {budget}, "
        f"subscribers {s.subscribers}"
    )


class PrintingSink:
    """A :class:`~streamdp.sinks.ReleaseSink` that prints each release with :func:`format_chunk`
    to ``out`` and, when ``status_out`` is given, each status with :func:`format_status` to it.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, or :meth:`publish_status`
        anything but a :class:`~streamdp.status.SessionStatus`.
    """

    def __init__(self, out: TextIO, status_out: TextIO | None = None) -> None:
        self.out = out
        self.status_out = status_out

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        print(format_chunk(release.to_message()), file=self.out, flush=True)

    def publish_status(self, status: SessionStatus) -> None:
        line = format_status(status)
        if self.status_out is not None:
            print(line, file=self.status_out, flush=True)

    def close(self) -> None:
        """Nothing to release: the streams belong to the caller."""
