"""The 52 sliding-window features (DESIGN.md §3), computed incrementally.

Rules, decided once and documented here:

- An event belongs to the window in which it ends: window k covers end times in
  ``(t_k - window, t_k]``; ``t_k = segment start + window + k * step``. Nothing is emitted
  before the first full window of a segment.
- Rates divide by the nominal window length (events per second).
- Ratios with an empty denominator are 0; means, variances and maxima over no event are 0.
- Variances are population variances (ddof = 0).
- Positive (rightward) saccades have dx > 0, negative dx < 0; a saccade with dx == 0 exactly
  (straight vertical) is neither.
- Pupil features use the fixations during which a diameter was measured.
- Wordbook n-grams are n consecutive saccades of the segment, all inside the window; statistics
  run over all 24**n possible n-grams (mean and variance) or over those seen (distinct, max, min).

Every step costs O(1) amortised: counts and sums come from running prefix sums and binary
searches, maxima from monotone queues, wordbooks from counters updated as events enter and leave.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ..events import EventBatch, Fixations, Saccades
from ..gaze import BlinkEvents
from ..kernels.wordbook import ALPHABET_SIZE, NgramCounter
from ..schema import FEATURE_INDEX, N_FEATURES, WORDBOOK_ORDERS
from .base import Stage

if TYPE_CHECKING:
    import pandas as pd

_F64 = NDArray[np.float64]


@dataclass(frozen=True)
class WindowConfig:
    """Sliding window: ``window`` seconds long, a feature vector every ``step`` seconds.

    Defaults follow MPIIDPEye (30 s, 0.5 s); PrivacEye used 1 s steps.
    """

    window: float = 30.0
    step: float = 0.5

    def __post_init__(self) -> None:
        for name in ("window", "step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"WindowConfig.{name} must be a number, got {v!r}")
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"WindowConfig.{name} must be finite and > 0, got {v!r}")
        if self.step > self.window:
            raise ValueError(f"WindowConfig.step ({self.step}) must not exceed window ({self.window})")


@dataclass(frozen=True, eq=False)
class FeatureRows:
    """Feature vectors: ``t`` (m,) step times, ``values`` (m, 52) in schema order; unsanitized.

    Examples
    --------
    >>> rows = FeatureRows(np.array([30.0, 30.5]), np.zeros((2, N_FEATURES)))
    >>> df = rows.to_pandas()
    >>> df.shape, df.columns[0], len(FeatureRows.from_pandas(df))
    ((2, 53), 't', 2)
    """

    t: _F64 = field(default_factory=lambda: np.empty(0))
    values: _F64 = field(default_factory=lambda: np.empty((0, N_FEATURES)))

    def __len__(self) -> int:
        return int(self.t.shape[0])

    def to_pandas(self) -> pd.DataFrame:
        """``t`` and the 52 features as a DataFrame (:func:`streamdp.frames.rows_to_pandas`)."""
        from ..frames import rows_to_pandas

        return rows_to_pandas(self)

    @classmethod
    def from_pandas(cls, df: pd.DataFrame) -> FeatureRows:
        """Rows from a DataFrame with ``t`` and the 52 features (:func:`streamdp.frames.rows_from_pandas`;
        a missing column raises :class:`~streamdp.errors.InputError` naming it)."""
        from ..frames import rows_from_pandas

        return rows_from_pandas(df)

    @staticmethod
    def concat(parts: list[FeatureRows]) -> FeatureRows:
        parts = [p for p in parts if len(p)]
        if not parts:
            return FeatureRows()
        return FeatureRows(np.concatenate([p.t for p in parts]), np.concatenate([p.values for p in parts]))


class _Column:
    """Events of one kind in end-time order, with running sums of shifted values and squares."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.end = np.empty(0)
        self.shift: dict[str, float] = {}
        self.s1 = {n: np.zeros(1) for n in names}
        self.s2 = {n: np.zeros(1) for n in names}
        self.cnt = {n: np.zeros(1, dtype=np.int64) for n in names}
        self.values: dict[str, _F64] = {n: np.empty(0) for n in names}
        self.base = 0  # index of end[0] among all events of the segment

    def append(self, end: _F64, values: dict[str, _F64]) -> None:
        if end.shape[0] == 0:
            return
        self.end = np.concatenate((self.end, end))
        for n in self.names:
            v = values[n]
            finite = np.isfinite(v)
            if n not in self.shift and np.any(finite):
                self.shift[n] = float(v[finite][0])
            d = np.where(finite, v - self.shift.get(n, 0.0), 0.0)
            # continued sequentially from the last running sum: the same bits for any batch split
            self.s1[n] = np.concatenate((self.s1[n], np.cumsum(np.concatenate(([self.s1[n][-1]], d)))[1:]))
            self.s2[n] = np.concatenate((self.s2[n], np.cumsum(np.concatenate(([self.s2[n][-1]], d * d)))[1:]))
            self.cnt[n] = np.concatenate((self.cnt[n], self.cnt[n][-1] + np.cumsum(finite)))
            self.values[n] = np.concatenate((self.values[n], v))

    def bounds(self, t: _F64, window: float) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        return (
            np.searchsorted(self.end, t - window, side="right"),
            np.searchsorted(self.end, t, side="right"),
        )

    def total(self, name: str, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> _F64:
        """Sum of the finite values of events ``lo..hi-1``."""
        n = self.cnt[name][hi] - self.cnt[name][lo]
        return (self.s1[name][hi] - self.s1[name][lo]) + n * self.shift.get(name, 0.0)

    def mean_var(self, name: str, lo: NDArray[np.intp], hi: NDArray[np.intp]) -> tuple[_F64, _F64, NDArray[np.int64]]:
        n = self.cnt[name][hi] - self.cnt[name][lo]
        s1 = self.s1[name][hi] - self.s1[name][lo]
        s2 = self.s2[name][hi] - self.s2[name][lo]
        safe = np.maximum(n, 1)
        m = s1 / safe
        var = np.maximum(s2 / safe - m * m, 0.0)
        mean = np.where(n > 0, m + self.shift.get(name, 0.0), 0.0)
        return mean, np.where(n > 0, var, 0.0), n

    def trim(self, keep_from: int) -> None:
        """Forget events before local index ``keep_from`` (they left every future window)."""
        if keep_from <= 0:
            return
        self.end = self.end[keep_from:]
        for n in self.names:
            self.s1[n] = self.s1[n][keep_from:]
            self.s2[n] = self.s2[n][keep_from:]
            self.cnt[n] = self.cnt[n][keep_from:]
            self.values[n] = self.values[n][keep_from:]
        self.base += keep_from


#: (events, quantity, feature of its mean, feature of its variance over the window's events)
_MEAN_VAR_FEATURES = (
    ("sac", "amplitude", "saccade_amplitude_mean", "saccade_amplitude_var"),
    ("fix", "duration", "fixation_duration_mean", "fixation_duration_var"),
    ("fix", "var_x", "fixation_var_x_mean", "fixation_var_x_var"),
    ("fix", "var_y", "fixation_var_y_mean", "fixation_var_y_var"),
    ("fix", "pupil_mean", "pupil_mean_mean", "pupil_mean_var"),
    ("fix", "pupil_var", "pupil_var_mean", "pupil_var_var"),
    ("blk", "duration", "blink_duration_mean", "blink_duration_var"),
)


class _SlidingMax:
    """Maximum over the events in the window, by a monotone queue of global indices."""

    def __init__(self) -> None:
        self.q: deque[int] = deque()
        self.next = 0  # global index of the next event to enter


class WindowFeatures(Stage[EventBatch, FeatureRows]):
    """:class:`~streamdp.events.EventBatch` in, :class:`FeatureRows` out (a
    :class:`~streamdp.stages.base.Stage`).

    A window is emitted once every event that could end in it is known, i.e. once the event
    batch's ``final_before`` has passed its step time. Only the event detector knows where the
    stream ends: its ``flush`` batch carries a ``final_before`` just past the last sample, so
    feeding that batch emits the last windows, and :meth:`flush` itself has nothing left to add.

    Examples
    --------
    >>> from streamdp.stages.events import EventDetector
    >>> from streamdp.synthetic import generate
    >>> gaze = generate(duration=12.0, rate=120.0, seed=1).recording.gaze
    >>> detector, features = EventDetector(), WindowFeatures(WindowConfig(window=10.0, step=0.5))
    >>> rows = FeatureRows.concat([features.update(detector.update(gaze)), features.update(detector.flush())])
    >>> rows.values.shape, len(features.flush())
    ((4, 52), 0)
    """

    def __init__(self, config: WindowConfig | None = None) -> None:
        self.config = config or WindowConfig()
        self.reset()

    def flush(self) -> FeatureRows:
        """End of stream: every window the events allow was emitted by :meth:`update`; forget the
        stream and return no rows."""
        self.reset()
        return FeatureRows()

    def reset(self) -> None:
        """Forget the stream: the next event batch must start a segment (its ``restarts``)."""
        self._seg_start: float | None = None
        self._k = 0
        self._fix = _Column(("duration", "var_x", "var_y", "pupil_mean", "pupil_var"))
        self._sac = _Column(("amplitude", "small", "large", "pos", "neg"))
        self._blk = _Column(("duration",))
        self._letters: list[int] = []
        self._letters_base = 0
        self._max_amp = _SlidingMax()
        self._max_dur = _SlidingMax()
        self._words = [NgramCounter(n) for n in WORDBOOK_ORDERS]
        self._w_next = 0  # next saccade (global index) to enter the wordbooks
        self._w_first = 0  # first saccade (global index) still inside the window

    def update(self, events: EventBatch) -> FeatureRows:
        """Take the detector's next event batch; return the windows it completed."""
        out: list[FeatureRows] = []
        fx, sc, bl = events.fixations, events.saccades, events.blinks
        for r, seg_end in zip(events.restarts.tolist(), events.segment_ends.tolist(), strict=False):
            old_f, old_s, old_b = fx.end < r, sc.end < r, bl.end < r
            self._add(fx.select(old_f), sc.select(old_s), BlinkEvents(bl.start[old_b], bl.end[old_b]))
            if self._seg_start is not None and not math.isnan(seg_end):
                out.append(self._emit(float(np.nextafter(seg_end, np.inf))))
            self.reset()
            self._seg_start = r
            fx, sc = fx.select(~old_f), sc.select(~old_s)
            bl = BlinkEvents(bl.start[~old_b], bl.end[~old_b])
        if self._seg_start is None:
            return FeatureRows.concat(out)
        self._add(fx, sc, bl)
        out.append(self._emit(events.final_before))
        return FeatureRows.concat(out)

    def _add(self, fx: Fixations, sc: Saccades, bl: BlinkEvents) -> None:
        if self._seg_start is None:
            return
        self._fix.append(
            fx.end,
            {
                "duration": fx.duration,
                "var_x": fx.var_x,
                "var_y": fx.var_y,
                "pupil_mean": fx.pupil_mean,
                "pupil_var": np.where(np.isfinite(fx.pupil_mean), fx.pupil_var, np.nan),
            },
        )
        large = sc.letter >= 8
        self._sac.append(
            sc.end,
            {
                "amplitude": sc.amplitude,
                "small": (~large).astype(np.float64),
                "large": large.astype(np.float64),
                "pos": (sc.dx > 0).astype(np.float64),
                "neg": (sc.dx < 0).astype(np.float64),
            },
        )
        self._letters.extend(sc.letter.tolist())
        self._blk.append(bl.end, {"duration": bl.end - bl.start})

    def _step_times(self, before: float) -> _F64:
        assert self._seg_start is not None
        w, s = self.config.window, self.config.step
        if not math.isfinite(before):
            return np.empty(0)
        # smallest k with seg_start + w + k*s >= before, computed exactly on the integer grid
        k_stop = max(self._k, math.ceil((before - self._seg_start - w) / s) + 1)
        ks = np.arange(self._k, k_stop)
        t = np.asarray(self._seg_start + (w + ks * s), dtype=np.float64)
        t = t[t < before]
        self._k += t.shape[0]
        return t

    def _emit(self, before: float) -> FeatureRows:
        t = self._step_times(before)
        if t.shape[0] == 0:
            return FeatureRows()
        w = self.config.window
        v = np.zeros((t.shape[0], N_FEATURES))
        col = FEATURE_INDEX

        flo, fhi = self._fix.bounds(t, w)
        slo, shi = self._sac.bounds(t, w)
        blo, bhi = self._blk.bounds(t, w)
        n_fix = (fhi - flo).astype(np.float64)
        n_sac = (shi - slo).astype(np.float64)
        n_blk = (bhi - blo).astype(np.float64)
        counts = {}
        for name in ("small", "large", "pos", "neg"):
            counts[name] = self._sac.total(name, slo, shi)
        v[:, col["fixation_rate"]] = n_fix / w
        v[:, col["saccade_rate"]] = n_sac / w
        v[:, col["small_saccade_rate"]] = counts["small"] / w
        v[:, col["large_saccade_rate"]] = counts["large"] / w
        v[:, col["positive_saccade_rate"]] = counts["pos"] / w
        v[:, col["negative_saccade_rate"]] = counts["neg"] / w
        v[:, col["saccades_per_fixation"]] = np.where(n_fix > 0, n_sac / np.maximum(n_fix, 1), 0.0)
        for name, feat in (
            ("small", "small_saccade_ratio"),
            ("large", "large_saccade_ratio"),
            ("pos", "positive_saccade_ratio"),
            ("neg", "negative_saccade_ratio"),
        ):
            v[:, col[feat]] = np.where(n_sac > 0, counts[name] / np.maximum(n_sac, 1), 0.0)
        spans = {"sac": (self._sac, slo, shi), "fix": (self._fix, flo, fhi), "blk": (self._blk, blo, bhi)}
        for kind, quantity, mean_name, var_name in _MEAN_VAR_FEATURES:
            column, lo, hi = spans[kind]
            m, var, _ = column.mean_var(quantity, lo, hi)
            v[:, col[mean_name]] = m
            v[:, col[var_name]] = var
        v[:, col["blink_rate"]] = n_blk / w

        self._sequential(t, v)
        self._trim(float(t[-1]) - w)
        return FeatureRows(t, v)

    def _sequential(self, t: _F64, v: _F64) -> None:
        """Maxima and wordbooks: one pass over steps, each event entering and leaving once."""
        w = self.config.window
        fix, sac = self._fix, self._sac
        f_end, f_dur, f_base = fix.end.tolist(), fix.values["duration"].tolist(), fix.base
        s_end, s_amp, s_base = sac.end.tolist(), sac.values["amplitude"].tolist(), sac.base
        letters, l_base = self._letters, self._letters_base
        col_amp = FEATURE_INDEX["saccade_amplitude_max"]
        col_dur = FEATURE_INDEX["fixation_duration_max"]
        col_wb = FEATURE_INDEX["wordbook1_distinct"]
        words = self._words
        orders = WORDBOOK_ORDERS
        q_amp, q_dur = self._max_amp, self._max_dur
        for row, tk in enumerate(t.tolist()):
            lo_t = tk - w
            _slide_max(q_dur, f_end, f_dur, f_base, tk, lo_t)
            _slide_max(q_amp, s_end, s_amp, s_base, tk, lo_t)
            v[row, col_dur] = f_dur[q_dur.q[0] - f_base] if q_dur.q else 0.0
            v[row, col_amp] = s_amp[q_amp.q[0] - s_base] if q_amp.q else 0.0
            # saccades entering the window add the n-grams they end
            while self._w_next - s_base < len(s_end) and s_end[self._w_next - s_base] <= tk:
                j = self._w_next
                # codes are base-24 numbers, first letter most significant, as in ngram_code
                code = 0
                for n in orders:
                    first = j - n + 1
                    if first < self._w_first:
                        break
                    code += letters[first - l_base] * ALPHABET_SIZE ** (n - 1)
                    words[n - 1].add(code)
                self._w_next += 1
            # saccades leaving the window remove the n-grams they start
            while self._w_first < self._w_next and s_end[self._w_first - s_base] <= lo_t:
                i = self._w_first
                code = 0
                for n in orders:
                    last = i + n - 1
                    if last >= self._w_next:
                        break
                    code = code * ALPHABET_SIZE + letters[last - l_base]
                    words[n - 1].remove(code)
                self._w_first += 1
            c = col_wb
            for counter in words:
                v[row, c : c + 6] = counter.stats()
                c += 6

    def _trim(self, oldest_t: float) -> None:
        for column in (self._fix, self._sac, self._blk):
            dead = int(np.searchsorted(column.end, oldest_t, side="right"))
            if dead > 1024 and dead > column.end.shape[0] // 2:
                if column is self._sac:
                    dead = min(dead, self._w_first - column.base, self._max_amp.next - column.base)
                    drop = self._w_first - self._letters_base - 4
                    if drop > 0:
                        del self._letters[:drop]
                        self._letters_base += drop
                if column is self._fix:
                    dead = min(dead, self._max_dur.next - column.base)
                column.trim(dead)


def _slide_max(state: _SlidingMax, end: list[float], vals: list[float], base: int, tk: float, lo_t: float) -> None:
    q = state.q
    while state.next - base < len(end) and end[state.next - base] <= tk:
        val = vals[state.next - base]
        while q and vals[q[-1] - base] <= val:
            q.pop()
        q.append(state.next)
        state.next += 1
    while q and end[q[0] - base] <= lo_t:
        q.popleft()
