"""A straightforward full-window reference of the 52 features: every window recomputed from
scratch from the events it holds. Slow on purpose; the incremental stage must agree with it.

Steps lie on the public grid ``t_k = k·step`` of the source clock, from the first whose window
starts at or after the first sample to the last sample; gaps restart nothing (a window over a gap
holds fewer events, or none: the public defaults)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from streamdp.events import EventBatch
from streamdp.schema import FEATURE_INDEX, N_FEATURES, WORDBOOK_ORDERS


def _mv(a: np.ndarray) -> tuple[float, float]:
    a = a[np.isfinite(a)]
    if a.size == 0:
        return 0.0, 0.0
    return float(a.mean()), float(a.var())


def window_vector(events: EventBatch, tk: float, window: float) -> np.ndarray:
    f, s, b = events.fixations, events.saccades, events.blinks
    fin = (f.end > tk - window) & (f.end <= tk)
    sin = (s.end > tk - window) & (s.end <= tk)
    bin_ = (b.end > tk - window) & (b.end <= tk)
    v = np.zeros(N_FEATURES)
    c = FEATURE_INDEX
    n_f, n_s, n_b = int(fin.sum()), int(sin.sum()), int(bin_.sum())
    letters = s.letter[sin]
    small = int((letters < 8).sum())
    large = n_s - small
    pos = int((s.dx[sin] > 0).sum())
    neg = int((s.dx[sin] < 0).sum())
    v[c["fixation_rate"]] = n_f / window
    v[c["saccade_rate"]] = n_s / window
    v[c["small_saccade_rate"]] = small / window
    v[c["large_saccade_rate"]] = large / window
    v[c["positive_saccade_rate"]] = pos / window
    v[c["negative_saccade_rate"]] = neg / window
    v[c["saccades_per_fixation"]] = n_s / n_f if n_f else 0.0
    if n_s:
        v[c["small_saccade_ratio"]] = small / n_s
        v[c["large_saccade_ratio"]] = large / n_s
        v[c["positive_saccade_ratio"]] = pos / n_s
        v[c["negative_saccade_ratio"]] = neg / n_s
        amp = s.amplitude[sin]
        v[c["saccade_amplitude_mean"]], v[c["saccade_amplitude_var"]] = _mv(amp)
        v[c["saccade_amplitude_max"]] = amp.max()
    if n_f:
        dur = f.duration[fin]
        v[c["fixation_duration_mean"]], v[c["fixation_duration_var"]] = _mv(dur)
        v[c["fixation_duration_max"]] = dur.max()
        v[c["fixation_var_x_mean"]], v[c["fixation_var_x_var"]] = _mv(f.var_x[fin])
        v[c["fixation_var_y_mean"]], v[c["fixation_var_y_var"]] = _mv(f.var_y[fin])
        v[c["pupil_mean_mean"]], v[c["pupil_mean_var"]] = _mv(f.pupil_mean[fin])
        pv = np.where(np.isfinite(f.pupil_mean[fin]), f.pupil_var[fin], np.nan)
        v[c["pupil_var_mean"]], v[c["pupil_var_var"]] = _mv(pv)
    if n_b:
        v[c["blink_duration_mean"]], v[c["blink_duration_var"]] = _mv(b.end[bin_] - b.start[bin_])
    v[c["blink_rate"]] = n_b / window
    # wordbooks over the saccade string of the window
    word = "".join(chr(65 + int(x)) for x in s.letter[sin])
    col = c["wordbook1_distinct"]
    for n in WORDBOOK_ORDERS:
        grams = Counter(word[i : i + n] for i in range(len(word) - n + 1))
        counts = np.array(list(grams.values()), dtype=float)
        n_possible = 24**n
        if counts.size:
            mx, mn = counts.max(), counts.min()
            mean = counts.sum() / n_possible
            var = (counts**2).sum() / n_possible - mean**2
            v[col : col + 6] = [len(grams), mx, mn, mx - mn, mean, var]
        col += 6
    return v


def grid_steps(start: float, last: float, window: float, step: float) -> np.ndarray:
    """Grid times ``k·step`` with ``k·step − window ≥ start`` and ``k·step ≤ last``, by search."""
    k = int(np.floor(start / step)) - 1
    while k * step - window < start:
        k += 1
    ts = []
    while k * step <= last:
        ts.append(k * step)
        k += 1
    return np.asarray(ts, dtype=np.float64)


def reference_features(
    events: EventBatch, start: float, last: float, window: float, step: float
) -> tuple[np.ndarray, np.ndarray]:
    """Features at every grid step of a stream from ``start`` (first sample) to ``last``."""
    ts = grid_steps(start, last, window, step)
    rows = [window_vector(events, tk, window) for tk in ts]
    return ts, np.asarray(rows).reshape(-1, N_FEATURES)
