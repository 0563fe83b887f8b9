"""A live session with the real-time gaze channel, driven as a live shell drives it, for the
gaze channel's tests (``tests/test_gaze_channel*.py``) and benchmark.

Capture's traffic (:func:`~streamdp.pupil_wire.encode.capture_datums`: ~30 Hz world-frame bursts,
monocular gaze up to 90 ms late) arrives at the source times it leaves Capture; between two
bursts the shell's timer calls :meth:`~streamdp.session.Session.advance_to` at
:attr:`~streamdp.session.Session.next_deadline` whenever that comes first, as ``Relay.run``
does. A sink notes the source clock of the call that handed it each tick, so the release time of
every tick is known on the source's clock.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np

from streamdp.config import SessionConfig
from streamdp.gaze import GazeBatch, Recording
from streamdp.privacy.audit.gaze_timing import ClockedSink
from streamdp.privacy.release import PrivateRelease
from streamdp.pupil_wire.encode import capture_datums
from streamdp.session import Session
from streamdp.stages.gaze_ticks import Ticks

Frames = list[bytes]
Burst = tuple[float, list[Frames]]

_pack = msgpack.Packer(use_bin_type=True).pack


def bursts_of(
    recording: Recording, *, monocular_share: float = 0.15, seed: int = 0, eye_lag: float = 0.0
) -> list[Burst]:
    """The recording as Capture publishes it on the topics the relay subscribes to (gaze, blinks):
    (source time the burst leaves, its ``[topic, payload]`` messages); ``eye_lag``: an eye process
    falling behind now and then by up to that many seconds."""
    out: list[Burst] = []
    sent = capture_datums(recording, monocular_share=monocular_share, seed=seed, eye_lag=eye_lag)
    for at, group in itertools.groupby(sent, key=lambda s: s[0]):
        burst = [[d["topic"].encode(), _pack(d)] for _, d in group if d["topic"].startswith(("gaze.", "blinks"))]
        if burst:
            out.append((at, burst))
    return out


def edit_gaze(bursts: Sequence[Burst], edit: Callable[[dict], list[dict]]) -> list[Burst]:
    """``bursts`` with each gaze datum replaced by ``edit(datum)`` (none: deleted; two: one
    inserted beside it, sent in the same burst); every other message and every arrival unchanged."""
    out: list[Burst] = []
    for at, burst in bursts:
        messages: list[Frames] = []
        for topic, payload in burst:
            if not topic.startswith(b"gaze."):
                messages.append([topic, payload])
                continue
            datum = msgpack.unpackb(payload, raw=False)
            edited = edit(dict(datum))
            same = len(edited) == 1 and edited[0] == datum
            messages += [[topic, payload]] if same else [[topic, _pack(d)] for d in edited]
        out.append((at, messages))
    return out


def select(gaze: GazeBatch, keep: np.ndarray) -> GazeBatch:
    """The samples of ``gaze`` where ``keep``."""

    def kept(value: Any) -> Any:
        per_sample = isinstance(value, np.ndarray) and value.shape[:1] == gaze.t.shape
        return value[keep] if per_sample else value

    return type(gaze)(**{f.name: kept(getattr(gaze, f.name)) for f in dataclasses.fields(gaze)})


@dataclass
class LiveRun:
    """What a driven session published: per tick its time, the source clock it went out at, its
    packed message; the Ticks the privatizer was given (raw, for the reach tests); the session."""

    session: Session
    t: np.ndarray
    at: np.ndarray
    messages: list[bytes]
    ticks: Ticks
    calls: int = 0
    releasing_calls: list[tuple[float, int]] = field(default_factory=list)

    def decoded(self) -> list[dict]:
        return [msgpack.unpackb(m, raw=False) for m in self.messages]


def deliver(
    session: Session, sink: ClockedSink, bursts: Sequence[Burst], until: float
) -> tuple[int, list[tuple[float, int]]]:
    """Deliver ``bursts`` at their times to ``session`` and, whenever it comes first, call
    ``advance_to`` at its next deadline, until the source clock reaches ``until`` (``sink``'s
    clock follows); the calls made, and (time, releases) of those that released."""
    i, calls, stuck = 0, 0, 0
    last_due = None
    releasing: list[tuple[float, int]] = []
    while True:
        due = session.next_deadline
        nxt = bursts[i][0] if i < len(bursts) else math.inf
        before = len(sink.at)
        if due is not None and due <= nxt and due <= until:
            stuck = stuck + 1 if due == last_due else 0
            if stuck > 3:
                raise AssertionError(f"next_deadline stays at {due!r}: advance_to releases nothing")
            last_due = due
            sink.now = due
            session.advance_to(due)
        elif nxt <= until:
            sink.now = nxt
            session.receive_frames(bursts[i][1])
            i += 1
        else:
            return calls, releasing
        calls += 1
        if len(sink.at) > before:
            releasing.append((sink.now, len(sink.at) - before))


def drive(
    bursts: Sequence[Burst],
    config: SessionConfig,
    *,
    until: float,
    seed: int = 3,
    patch: Callable[[Session], None] | None = None,
) -> LiveRun:
    """Deliver ``bursts`` at their times and, whenever it comes first, call ``advance_to`` at the
    session's next deadline, until the source clock reaches ``until``; nothing is flushed.
    ``patch`` may alter the session first (the tests' broken variants)."""
    sink = ClockedSink()
    session = Session(config, sinks=[sink], seed=seed, source="driver")
    if patch is not None:
        patch(session)
    seen: list[Ticks] = []
    privatizer = session.gaze.privatizer if session.gaze is not None else None
    if privatizer is not None:
        update = privatizer.update

        def noting(ticks: Ticks) -> list[PrivateRelease]:
            seen.append(ticks)
            return update(ticks)

        privatizer.update = noting  # type: ignore[method-assign]
    calls, releasing = deliver(session, sink, bursts, until)
    pack = msgpack.Packer(use_bin_type=True).pack
    return LiveRun(
        session=session,
        t=np.array([float(r.t[0]) for r in sink.ticks]),
        at=np.array(sink.at),
        messages=[pack(r.to_message()) for r in sink.ticks],
        ticks=Ticks.concat(seen),
        calls=calls,
        releasing_calls=releasing,
    )


def all_bursts(parts: Iterable[list[Burst]]) -> list[Burst]:
    """Bursts from several sources merged by time (stable)."""
    return sorted(itertools.chain.from_iterable(parts), key=lambda b: b[0])
