"""The audited gaze channel: raw gaze streams in, the published tick messages out, decoded as a
subscriber would.

:class:`GazeWire` runs each stream through a fresh :class:`~streamdp.gaze_channel.GazeChannel`
(ticks → :class:`~streamdp.stages.gaze_privatizer.GazePrivatizer` → one sealed release a tick),
packs every tick's ``release.to_message()`` with msgpack — the bytes the relay publishes on
``streamdp.gaze.<mechanism>`` — and decodes them again (:func:`~streamdp.privacy.audit.channel.decode`):
the audit reads the released positions (``x_deg``, ``y_deg``), the ε each tick reports and every
other field from those bytes only, never from the mechanism's return value.

A stream is a :class:`~streamdp.gaze.GazeBatch` of normalized scene positions, one sample per tick
``k = 1 … L`` at ``(k − ½)/rate``, mapped from positions in degrees with
:func:`~streamdp.kernels.geometry.degrees_to_norm` and the channel's field of view (twice the
mechanism's field): the tick grid, the mapping back to degrees, the tick's mean, the clipping and
the sealing are all inside what is audited.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray

from ...gaze import GazeBatch
from ...gaze_channel import GazeChannel
from ...kernels.geometry import degrees_to_norm
from ..gaze_base import GazeMechanism
from ..noise import secure_generator
from .channel import VALUES, decode

_F64 = NDArray[np.float64]

#: the ledger keys holding a tick's ε: public functions of the mechanism's private decisions (for
#: geo-bd whether the tick published, which its position shows), so not compared as fixed fields
EPSILON_TICK = "ledger.epsilon_tick_per_degree"
EPSILON_SPENT = "ledger.epsilon_spent_per_degree"
#: the message fields the mechanism noises or that follow from its noised outputs
NOISED = frozenset({VALUES, EPSILON_TICK, EPSILON_SPENT})

#: builds a channel as :class:`~streamdp.gaze_channel.GazeChannel` does:
#: ``factory(mechanism, rate=…, fov_deg=…, min_confidence=…, rng=…)``
GazeChannelFactory = Callable[..., GazeChannel]

_pack = msgpack.Packer(use_bin_type=True).pack


def channel_fov(mech: GazeMechanism) -> tuple[float, float]:
    """The camera field of view whose channel clips to ``mech.field``: twice its half-extents.

    Raises
    ------
    ValueError
        A half-extent of 90° or more (no camera sees that far).
    """
    fx, fy = mech.field
    if not (fx < 90.0 and fy < 90.0):
        raise ValueError(f"the field {mech.field!r} needs half-extents below 90° to be a camera's field of view")
    return (2.0 * fx, 2.0 * fy)


def gaze_stream(
    deg: _F64,
    rate: float,
    fov_deg: tuple[float, float],
    *,
    keep: NDArray[np.bool_] | None = None,
    confidence: _F64 | None = None,
    start: int = 1,
) -> GazeBatch:
    """Raw gaze with one sample per tick at ``deg[i]`` degrees (L, 2): tick ``start + i`` at
    ``(start + i − ½)/rate``, in normalized scene units; ``keep`` drops samples (a gap),
    ``confidence`` sets theirs (a blink below the threshold).

    Raises
    ------
    ValueError
        A position at 90° or more from the camera's axis (it has no normalized position).
    """
    d = np.asarray(deg, dtype=np.float64).reshape(-1, 2)
    if not np.all(np.abs(d) < 90.0):
        raise ValueError("gaze_stream positions must lie within 90° of the camera's axis")
    nx, ny = degrees_to_norm(d[:, 0], d[:, 1], fov_deg)
    t = (start + np.arange(d.shape[0]) - 0.5) / rate
    conf = np.ones(d.shape[0]) if confidence is None else np.asarray(confidence, dtype=np.float64)
    k = np.ones(d.shape[0], dtype=bool) if keep is None else np.asarray(keep, dtype=bool)
    return GazeBatch.from_arrays(t=t[k], x=nx[k], y=ny[k], confidence=conf[k], source="audit")


@dataclass
class WireRuns:
    """Decoded messages of ``R`` runs of one stream, ``L`` ticks each.

    ``values`` (R, L, 2): released (x_deg, y_deg); ``norm`` (R, L, 2): released (x_norm, y_norm);
    ``epsilon`` and ``spent`` (R, L): the ledger's ε of the tick and spent so far, per degree;
    ``public``: each distinct sequence of the runs' other fields (dotted paths) by its digest;
    ``lengths``: the tick counts seen (one value unless the count varies between runs).
    """

    values: _F64
    norm: _F64
    epsilon: _F64
    spent: _F64
    public: dict[bytes, list[dict[str, Any]]] = field(default_factory=dict)
    lengths: set[int] = field(default_factory=set)

    @property
    def ticks(self) -> int:
        return int(self.values.shape[1])

    def published(self) -> NDArray[np.bool_]:
        """(R, L): ticks whose position is new (the first, or different from the tick before)."""
        changed = np.any(self.values[:, 1:] != self.values[:, :-1], axis=2)
        return np.concatenate([np.ones((self.values.shape[0], 1), dtype=bool), changed], axis=1)


def _digest(fields: Sequence[dict[str, Any]]) -> bytes:
    return hashlib.blake2b(_pack([sorted(f.items()) for f in fields]), digest_size=16).digest()


class GazeWire:
    """A gaze mechanism's release path from raw gaze streams to tick message bytes.

    Every run is a fresh channel (a new stream: the mechanism's state starts afresh), its noise
    drawn from one seeded cryptographic generator (reproducible) shared by the runs in order.

    Examples
    --------
    >>> from streamdp.privacy.gaze_mechanisms import GazeUniform
    >>> wire = GazeWire(GazeUniform(epsilon=4.0, w=4, field=(40.0, 30.0)), seed=0)
    >>> runs = wire.runs(gaze_stream(np.zeros((3, 2)), wire.rate, wire.fov_deg), 5)
    >>> runs.values.shape, runs.epsilon[0].tolist(), len(runs.public)
    ((5, 3, 2), [1.0, 1.0, 1.0], 1)
    """

    def __init__(
        self,
        mechanism: GazeMechanism,
        seed: int,
        *,
        rate: float = 60.0,
        min_confidence: float = 0.6,
        channel: GazeChannelFactory = GazeChannel,
    ) -> None:
        self.mechanism = mechanism
        self.rate = float(rate)
        self.fov_deg = channel_fov(mechanism)
        self.min_confidence = float(min_confidence)
        self._factory = channel
        self._rng = secure_generator(seed)

    def publish(self, stream: GazeBatch) -> list[bytes]:
        """The message bytes of every tick of ``stream`` (a fresh channel, flushed at its end)."""
        ch = self._factory(
            self.mechanism, rate=self.rate, fov_deg=self.fov_deg, min_confidence=self.min_confidence, rng=self._rng
        )
        return [bytes(_pack(r.to_message())) for r in ch.update(stream) + ch.flush()]

    def runs(self, stream: GazeBatch, count: int) -> WireRuns:
        """``count`` runs of ``stream``, decoded. Runs with fewer ticks than the others are cut to
        the shortest (the varying count is kept in ``lengths``)."""
        values, eps, spent, lengths = [], [], [], set()
        public: dict[bytes, list[dict[str, Any]]] = {}
        for _ in range(count):
            v, fields = decode(self.publish(stream))
            lengths.add(len(fields))
            eps.append([float(f.pop(EPSILON_TICK, math.nan)) for f in fields])
            spent.append([float(f.pop(EPSILON_SPENT, math.nan)) for f in fields])
            values.append(v.reshape(len(fields), -1) if fields else np.zeros((0, 4)))
            public.setdefault(_digest(fields), fields)
        n = min(lengths)
        rows = np.stack([v[:n] for v in values]) if n else np.zeros((count, 0, 4))
        if rows.shape[2] != 4:
            raise ValueError(
                f"a gaze tick's message has {rows.shape[2]} values, expected 4 (x_deg, y_deg, x_norm, y_norm)"
            )
        return WireRuns(
            values=np.ascontiguousarray(rows[:, :, :2]),
            norm=np.ascontiguousarray(rows[:, :, 2:]),
            epsilon=np.array([e[:n] for e in eps], dtype=np.float64).reshape(count, n),
            spent=np.array([s[:n] for s in spent], dtype=np.float64).reshape(count, n),
            public=public,
            lengths=lengths,
        )


__all__ = [
    "EPSILON_SPENT",
    "EPSILON_TICK",
    "NOISED",
    "GazeChannelFactory",
    "GazeWire",
    "WireRuns",
    "channel_fov",
    "gaze_stream",
]
