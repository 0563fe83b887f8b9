"""The 52 sliding-window features (DESIGN.md §3), computed incrementally.

Rules, decided once and documented here:

- An event belongs to the window in which it ends: window k covers end times in
  ``(t_k - window, t_k]``; ``t_k = k * step`` of the source clock (the public grid of
  :mod:`streamdp.stages.schedule`). The first step is the first whose window starts at or after
  the stream's first sample; gaps do not restart the windows (a window over a gap holds fewer
  events). An event known only after a step at or past its end was computed (at a chunk's
  deadline) counts from the next step on.
- Rates divide by the nominal window length (events per second).
- Ratios with an empty denominator are 0; means, variances and maxima over no event are 0.
- Variances are population variances (ddof = 0).
- Positive (rightward) saccades have dx > 0, negative dx < 0; a saccade with dx == 0 exactly
  (straight vertical) is neither.
- Pupil features use the fixations during which a diameter was measured.
- Wordbook n-grams are n consecutive saccades of the stream, all inside the window; statistics
  run over all 24**n possible n-grams (mean and variance) or over those seen (distinct, max, min).

Counts come from integer prefix sums and binary searches, maxima from a sparse table of the
window's events (:func:`~streamdp.kernels.sparse_table.range_max`), wordbooks from integer counters
updated as events enter and leave: O(1) amortised per step. Means and
variances are merged from parts of the window cut at public group boundaries, each part from its
own events (:mod:`._window_stats`: O(events per group + window / group) per step), never from float
running sums: those carry the rounding of every earlier event into every later window, and one
raw sample would then change bits far beyond the reach the ledger states
(:mod:`streamdp.privacy.reach`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..events import EventBatch, Fixations, Saccades
from ..gaze import BlinkEvents
from ..kernels.sparse_table import range_max
from ..kernels.wordbook import ALPHABET_SIZE, NgramCounter
from ..schedule_defaults import DEFAULT_MAX_EVENT_DURATION
from ..schema import FEATURE_INDEX, N_FEATURES, WORDBOOK_ORDERS
from ._window_state import EventColumn
from .base import Stage
from .feature_rows import FeatureRows
from .schedule import ReleaseSchedule, first_full_step

_F64 = NDArray[np.float64]


@dataclass(frozen=True)
class WindowConfig:
    """Sliding window: ``window`` seconds long, a feature vector every ``step`` seconds, on the
    public schedule (:mod:`streamdp.stages.schedule`).

    Defaults follow MPIIDPEye (30 s, 0.5 s); PrivacEye used 1 s steps.

    Parameters
    ----------
    window, step : float
        Window length and step in s; steps lie at multiples of ``step`` of the source clock.
    max_event_duration : float
        Public block length ``M`` in s: events never span a multiple of it (see
        :class:`~streamdp.stages.events.EventDetector`), which bounds how far one raw sample
        reaches. Default 8 s: fixations are rarely longer, so few are split (3.1 % of 4,249 on
        synthetic and real recordings, ≈ mean fixation duration / M; docs/events.md); it divides
        the chunk duration of every chunk length ≥ 16 at 0.5 s steps, so one sample reaches 3
        chunks at n = 32 and 2 at n = 64 or 128
        (:func:`~streamdp.privacy.reach.raw_gaze_reach`).
    chunk_length : int or None
        Steps per chunk; with it, steps are computed at each chunk's deadline with what is known
        (the private pipeline sets it from its mechanism). None: only when every event up to the
        step is known (local feature rows).
    deadline_slack : float
        s after a chunk's last step (data time) at which it is computed (default 0: at the last
        step; a live session then holds the release for its own ``deadline_slack`` before it
        publishes it, so the computation never delays the public release time).
    """

    window: float = 30.0
    step: float = 0.5
    max_event_duration: float = DEFAULT_MAX_EVENT_DURATION
    chunk_length: int | None = None
    deadline_slack: float = 0.0

    def __post_init__(self) -> None:
        for name in ("window", "step", "max_event_duration"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise TypeError(f"WindowConfig.{name} must be a number, got {v!r}")
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"WindowConfig.{name} must be finite and > 0, got {v!r}")
        if self.step > self.window:
            raise ValueError(f"WindowConfig.step ({self.step}) must not exceed window ({self.window})")
        if self.chunk_length is not None:
            self.schedule()  # validates chunk_length and deadline_slack

    def schedule(self) -> ReleaseSchedule | None:
        """The release schedule, when a chunk length is set."""
        if self.chunk_length is None:
            return None
        return ReleaseSchedule(self.window, self.step, self.chunk_length, self.deadline_slack)


#: steps per public group of the window means and variances (:mod:`._window_stats`): a window
#: of 60 steps merges 7 or 8 whole groups and two parts of at most one group's events each
_GROUP_STEPS = 8

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
        """Forget the stream: the next event batch must start one (its ``restarts``)."""
        self._start: float | None = None
        self._k = 0  # next step to emit
        self._floor = -np.inf  # time of the last step emitted
        self._fix = EventColumn(("duration", "var_x", "var_y", "pupil_mean", "pupil_var"))
        self._sac = EventColumn(("amplitude",), flags=("small", "large", "pos", "neg"))
        self._blk = EventColumn(("duration",))
        self._letters: list[int] = []
        self._letters_base = 0
        self._words = [NgramCounter(n) for n in WORDBOOK_ORDERS]
        self._w_next = 0  # next saccade (global index) to enter the wordbooks
        self._w_first = 0  # first saccade (global index) still inside the window

    def update(self, events: EventBatch) -> FeatureRows:
        """Take the detector's next event batch; return the steps it completed (those before its
        ``final_before``)."""
        if self._start is None:
            if not events.restarts.shape[0]:
                return FeatureRows()
            self._start = float(events.restarts[0])
            self._k = first_full_step(self._start, self.config.window, self.config.step)
        self._add(events.fixations, events.saccades, events.blinks)
        return self._emit(events.final_before)

    def emit_until(self, until: float) -> FeatureRows:
        """Compute every step at or before ``until`` with the events known now (a chunk's
        deadline): an event that ends before a computed step but arrives later counts from the
        next step on."""
        if self._start is None:
            return FeatureRows()
        return self._emit(float(np.nextafter(until, np.inf)))

    def _late(self, end: _F64) -> _F64:
        """Ends as counted: an event known only after a step at or past its end was computed is
        taken to end just after that step (the order of ends is kept)."""
        if not math.isfinite(self._floor) or end.shape[0] == 0:
            return end
        return np.maximum(end, np.nextafter(self._floor, np.inf))

    def _add(self, fx: Fixations, sc: Saccades, bl: BlinkEvents) -> None:
        self._fix.append(
            self._late(fx.end),
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
            self._late(sc.end),
            {
                "amplitude": sc.amplitude,
                "small": ~large,
                "large": large,
                "pos": sc.dx > 0,
                "neg": sc.dx < 0,
            },
        )
        self._letters.extend(sc.letter.tolist())
        order = np.argsort(bl.end, kind="stable")  # a source's blinks may come in any order
        self._blk.append(self._late(bl.end[order]), {"duration": (bl.end - bl.start)[order]})

    def _step_times(self, before: float) -> _F64:
        s = self.config.step
        if not math.isfinite(before):
            return np.empty(0)
        k_stop = max(self._k, math.ceil(before / s) + 1)
        t = np.arange(self._k, k_stop, dtype=np.float64) * s
        t = t[t < before]
        self._k += t.shape[0]
        if t.shape[0]:
            self._floor = float(t[-1])
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
        group = _GROUP_STEPS * self.config.step
        stats = {
            "sac": self._sac.mean_var(slo, shi, t, w, group),
            "fix": self._fix.mean_var(flo, fhi, t, w, group),
            "blk": self._blk.mean_var(blo, bhi, t, w, group),
        }
        for kind, quantity, mean_name, var_name in _MEAN_VAR_FEATURES:
            v[:, col[mean_name]], v[:, col[var_name]] = stats[kind][quantity]
        v[:, col["blink_rate"]] = n_blk / w
        v[:, col["fixation_duration_max"]] = range_max(self._fix.values["duration"], flo, fhi)
        v[:, col["saccade_amplitude_max"]] = range_max(self._sac.values["amplitude"], slo, shi)

        self._sequential(t, v)
        self._trim(float(t[-1]) - w)
        return FeatureRows(t, v)

    def _sequential(self, t: _F64, v: _F64) -> None:
        """Wordbooks: one pass over steps, each saccade entering and leaving once."""
        w = self.config.window
        s_end, s_base = self._sac.end.tolist(), self._sac.base
        letters, l_base = self._letters, self._letters_base
        col_wb = FEATURE_INDEX["wordbook1_distinct"]
        words = self._words
        orders = WORDBOOK_ORDERS
        # the rows' statistics gathered in one list and written into ``v`` once: a slice
        # assignment into an array per step and order costs as much as the step's own work
        stats: list[float] = []
        extend = stats.extend
        for tk in t.tolist():
            lo_t = tk - w
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
            for counter in words:
                extend(counter.stats())
        v[:, col_wb : col_wb + 6 * len(words)] = np.reshape(stats, (t.shape[0], 6 * len(words)))

    def _trim(self, oldest_t: float) -> None:
        for column in (self._fix, self._sac, self._blk):
            dead = int(np.searchsorted(column.end, oldest_t, side="right"))
            if dead > 1024 and dead > column.end.shape[0] // 2:
                if column is self._sac:
                    dead = min(dead, self._w_first - column.base)
                    drop = self._w_first - self._letters_base - 4
                    if drop > 0:
                        del self._letters[:drop]
                        self._letters_base += drop
                column.trim(dead)
