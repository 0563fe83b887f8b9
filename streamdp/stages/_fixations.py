"""I-DT fixation detection over usable gaze samples: the private fixation part of
:class:`~streamdp.stages.events.EventDetector`.

:class:`_FixationDetector` takes arrays of usable samples (time, position in signal units,
diameter) and returns the fixations they finished, with the gap id of each so that the event
detector can tell whether a saccade may join two of them. It is not a
:class:`~streamdp.stages.base.Stage` on its own; :class:`~streamdp.stages.events.EventDetector` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..events import Fixations
from ..kernels.dispersion import grow_extent, segment_mean_var, window_dispersion

if TYPE_CHECKING:
    from .event_config import EventConfig

_F64 = NDArray[np.float64]


@dataclass
class _Samples:
    """Usable samples held by the fixation detector, in signal units."""

    t: _F64
    x: _F64
    y: _F64
    d: _F64
    brk: NDArray[np.bool_]  # a gap longer than max_sample_gap precedes this sample
    gid: NDArray[np.int64]  # running count of such gaps: equal ids mean no gap in between

    @staticmethod
    def empty() -> _Samples:
        e = np.empty(0)
        return _Samples(e, e, e, e, np.empty(0, dtype=bool), np.empty(0, dtype=np.int64))

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def take(self, start: int, stop: int | None = None) -> _Samples:
        s = slice(start, stop)
        return _Samples(self.t[s], self.x[s], self.y[s], self.d[s], self.brk[s], self.gid[s])

    @staticmethod
    def concat(parts: list[_Samples]) -> _Samples:
        parts = [p for p in parts if len(p)]
        if not parts:
            return _Samples.empty()
        if len(parts) == 1:
            return parts[0]
        return _Samples(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("t", "x", "y", "d", "brk", "gid")))


@dataclass
class _OpenFixation:
    parts: list[_Samples]
    box: tuple[float, float, float, float]
    t_limit: float


def _fixation_stats(s: _Samples, starts: NDArray[np.intp], stops: NDArray[np.intp]) -> Fixations:
    mx, vx, _ = segment_mean_var(s.x, starts, stops)
    my, vy, _ = segment_mean_var(s.y, starts, stops)
    md, vd, _ = segment_mean_var(s.d, starts, stops)
    return Fixations(s.t[starts], s.t[stops - 1], mx, my, vx, vy, md, vd)


class _FixationDetector:
    """Incremental dispersion-threshold (I-DT) fixation detector.

    A fixation starts at the first usable sample whose next ``min_fixation_duration`` seconds of
    samples have a dispersion within ``max_dispersion`` and no gap, and grows sample by sample
    while the dispersion stays within the threshold. Work is O(1) amortised per sample: window
    dispersions come from vectorized range queries, growth from block-wise running extrema, and
    an open fixation keeps its bounding box instead of re-reading its samples.
    """

    def __init__(self, config: EventConfig) -> None:
        self.config = config
        self.reset()

    def reset(self) -> None:
        self._pend = _Samples.empty()
        self._open: _OpenFixation | None = None
        self._last_t = -np.inf
        self._gid = 0
        self._t_seen = -np.inf

    @property
    def final_before(self) -> float:
        """Every fixation ending before this time has been emitted."""
        if self._open is not None:
            return float(self._open.parts[0].t[0])
        if len(self._pend):
            return float(self._pend.t[0])
        return float(np.nextafter(self._t_seen, np.inf))

    def update(self, t: _F64, x: _F64, y: _F64, d: _F64, raw_last_t: float) -> tuple[Fixations, NDArray[np.int64]]:
        """Feed usable samples; return finished fixations and the gap id of each one."""
        cfg = self.config
        if t.shape[0]:
            prev = np.concatenate(([self._last_t], t[:-1]))
            brk = (t - prev) > cfg.max_sample_gap
            gid = self._gid + np.cumsum(brk, dtype=np.int64)
            self._gid = int(gid[-1])
            self._last_t = float(t[-1])
            new = _Samples(t, x, y, d, brk, gid)
        else:
            new = _Samples.empty()
        self._t_seen = max(self._t_seen, raw_last_t)
        out: list[Fixations] = []
        gids: list[NDArray[np.int64]] = []
        if self._open is not None and len(new):
            stop, box = grow_extent(
                new.x,
                new.y,
                new.brk,
                0,
                self._open.box,
                cfg.max_dispersion,
                new.t,
                self._open.t_limit,
            )
            self._open.parts.append(new.take(0, stop))
            self._open.box = box
            if stop < len(new):
                fx, g = self._close_open()
                out.append(fx)
                gids.append(g)
                new = new.take(stop)
            else:
                new = _Samples.empty()
        if self._open is None:
            fx, g = self._detect(_Samples.concat([self._pend, new]))
            out.append(fx)
            gids.append(g)
        return Fixations.concat(out), (np.concatenate(gids) if gids else np.empty(0, dtype=np.int64))

    def close_idle(self, clock: float) -> tuple[Fixations, NDArray[np.int64]]:
        """Every sample up to ``clock`` has been seen: an open fixation whose last usable sample
        is more than ``max_sample_gap`` before it has ended (the next usable sample would break
        it), so it is emitted now rather than when that sample comes. Its content is the same."""
        self._t_seen = max(self._t_seen, clock)
        if self._open is None or clock - self._last_t <= self.config.max_sample_gap:
            return Fixations(), np.empty(0, dtype=np.int64)
        return self._close_open()

    def flush(self) -> tuple[Fixations, NDArray[np.int64]]:
        """End of stream or of a public block: an open fixation ends at its last sample; pending
        samples are too short. The gap count and the last usable time carry on, so that a
        saccade may join the block's last fixation to the next block's first."""
        self._pend = _Samples.empty()
        if self._open is None:
            return Fixations(), np.empty(0, dtype=np.int64)
        return self._close_open()

    def _close_open(self) -> tuple[Fixations, NDArray[np.int64]]:
        assert self._open is not None
        s = _Samples.concat(self._open.parts)
        self._open = None
        fx = _fixation_stats(s, np.array([0]), np.array([len(s)]))
        return fx, s.gid[:1].copy()

    def _detect(self, s: _Samples) -> tuple[Fixations, NDArray[np.int64]]:
        cfg = self.config
        n = len(s)
        if n == 0:
            self._pend = s
            return Fixations(), np.empty(0, dtype=np.int64)
        j_of = np.searchsorted(s.t, s.t + cfg.min_fixation_duration, side="left")
        n_decidable = int(np.searchsorted(j_of, n, side="left"))  # j_of is non-decreasing
        idx = np.arange(n_decidable)
        j = j_of[:n_decidable]
        no_gap = s.gid[j] == s.gid[idx]
        disp = window_dispersion(s.x, s.y, idx, j)
        candidates = np.flatnonzero(no_gap & (disp <= cfg.max_dispersion))
        starts: list[int] = []
        stops: list[int] = []
        pos = 0
        while True:
            c = int(np.searchsorted(candidates, pos, side="left"))
            if c == candidates.shape[0]:
                break
            i = int(candidates[c])
            box = (float(s.x[i]), float(s.x[i]), float(s.y[i]), float(s.y[i]))
            limit = np.inf if cfg.max_fixation_duration is None else float(s.t[i]) + cfg.max_fixation_duration
            stop, box = grow_extent(s.x, s.y, s.brk, i + 1, box, cfg.max_dispersion, s.t, limit)
            if stop == n:
                self._open = _OpenFixation([s.take(i)], box, limit)
                pos = n
                break
            starts.append(i)
            stops.append(stop)
            pos = stop
        self._pend = s.take(max(pos, n_decidable)) if self._open is None else _Samples.empty()
        if not starts:
            return Fixations(), np.empty(0, dtype=np.int64)
        st = np.asarray(starts, dtype=np.intp)
        sp = np.asarray(stops, dtype=np.intp)
        return _fixation_stats(s, st, sp), s.gid[st]
