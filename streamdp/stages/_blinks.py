"""Blink detection from confidence with Pupil's step filter: the private blink part of
:class:`~streamdp.stages.events.EventDetector`.

:class:`_BlinkDetector` takes sample times and confidences (0 where a sample is invalid) and
returns the blinks whose response is final. It is not a :class:`~streamdp.stages.base.Stage` on
its own; :class:`~streamdp.stages.events.EventDetector` is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..gaze import BlinkEvents
from ..kernels.blinkfilter import step_response

if TYPE_CHECKING:
    from .event_config import EventConfig

_F64 = NDArray[np.float64]


class _BlinkDetector:
    """Streaming blink detection from confidence with Pupil's step filter (see
    :mod:`streamdp.kernels.blinkfilter`).

    An onset run (response above ``blink_onset``) followed by an offset run (response below
    ``-blink_offset``) is a blink from the first sample of the onset run to the last sample of
    the offset run. A second
    onset before any offset replaces the first. Responses need half a filter length of future
    samples, so detection lags the stream by ``blink_filter_length / 2``.
    """

    def __init__(self, config: EventConfig) -> None:
        self.config = config
        self.reset()

    def reset(self) -> None:
        self._t = np.empty(0)
        self._prefix = np.zeros(1)  # running confidence sum before each held sample, and after
        self._n_final = 0  # held samples whose response has been used
        self._onset_t: float | None = None
        self._run: tuple[int, float, float] | None = None  # sign, first t, last t of the run

    @property
    def final_before(self) -> float:
        if self._run is not None and self._run[0] < 0:
            return self._run[1]
        if self._n_final < self._t.shape[0]:
            return float(self._t[self._n_final])
        return np.inf

    def update(self, t: _F64, conf: _F64) -> BlinkEvents:
        if t.shape[0]:
            self._prefix = np.concatenate((self._prefix, np.cumsum(np.concatenate(([self._prefix[-1]], conf)))[1:]))
            self._t = np.concatenate((self._t, t))
        if self._t.shape[0] == 0:
            return BlinkEvents(np.empty(0), np.empty(0))
        # a response is final once a sample at least half a filter length later has arrived
        return self.advance(float(self._t[-1]))

    def advance(self, clock: float) -> BlinkEvents:
        """Every sample up to ``clock`` has been seen: responses half a filter length before it
        are final."""
        half = self.config.blink_filter_length / 2.0
        if self._t.shape[0] == 0:
            return BlinkEvents(np.empty(0), np.empty(0))
        n_ready = max(self._n_final, int(np.searchsorted(self._t, clock - half, side="right")))
        blinks = self._scan(self._n_final, n_ready, half)
        self._n_final = n_ready
        self._trim(half)
        return blinks

    def flush(self) -> BlinkEvents:
        half = self.config.blink_filter_length / 2.0
        blinks = self._scan(self._n_final, self._t.shape[0], half, closing=True)
        self.reset()
        return blinks

    def _scan(self, a: int, b: int, half: float, closing: bool = False) -> BlinkEvents:
        cfg = self.config
        starts: list[float] = []
        ends: list[float] = []
        if b > a:
            q = np.arange(a, b)
            r = step_response(self._t, self._prefix, q, half)
            sign = np.where(r > cfg.blink_onset, 1, np.where(r < -cfg.blink_offset, -1, 0))
            change = np.flatnonzero(np.diff(sign)) + 1
            bounds = np.concatenate(([0], change, [sign.shape[0]]))
            for k in range(bounds.shape[0] - 1):
                lo, hi = int(bounds[k]), int(bounds[k + 1])
                sg = int(sign[lo])
                if sg == 0:
                    self._end_run(starts, ends)
                    continue
                last_t = float(self._t[a + hi - 1])
                run = self._run
                if run is not None and run[0] == sg:
                    self._run = (sg, run[1], last_t)
                else:
                    self._end_run(starts, ends)
                    self._run = (sg, float(self._t[a + lo]), last_t)
                if hi < sign.shape[0]:
                    self._end_run(starts, ends)
        if closing:
            self._end_run(starts, ends)
        return BlinkEvents(np.asarray(starts), np.asarray(ends))

    def _end_run(self, starts: list[float], ends: list[float]) -> None:
        run = self._run
        if run is None:
            return
        self._run = None
        if run[0] > 0:
            self._onset_t = run[1]  # a blink starts where the onset run starts
            return
        if self._onset_t is None:
            return
        dur = run[2] - self._onset_t  # and ends where the offset run ends
        if self.config.min_blink_duration <= dur <= self.config.max_blink_duration:
            starts.append(self._onset_t)
            ends.append(run[2])
        self._onset_t = None

    def _trim(self, half: float) -> None:
        # keep every sample still needed as the past half-window of a response not yet final
        if self._n_final == 0:
            return
        keep_from = int(np.searchsorted(self._t, self._t[self._n_final - 1] - half - 1e-9, side="left"))
        keep_from = min(keep_from, self._n_final)
        if keep_from > 4096 or keep_from > self._t.shape[0] // 2:
            self._t = self._t[keep_from:]
            self._prefix = self._prefix[keep_from:]
            self._n_final -= keep_from
