"""Confidence step filter for blink detection, in the manner of Pupil's blink detector.

Pupil convolves the confidence signal with a step filter (+1/L for one half, -1/L for the other)
over a 0.2 s history and calls a blink onset where the response exceeds 0.5 and an offset where
it falls below -0.5. streamdp uses the same filter measured in time instead of samples, so that it
works on irregular sampling and on a stream: ``r(t) = mean conf in [t - h/2, t) - mean conf in
[t, t + h/2)``. A drop in confidence (eye closing) gives a positive response, a rise a negative one.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray


def step_response(
    t: NDArray[np.float64], prefix: NDArray[np.float64], query: NDArray[np.intp], half: float
) -> NDArray[np.float64]:
    """Filter response at samples ``query`` given the running sum ``prefix`` of confidence.

    ``prefix[i]`` is the sum of confidence over samples ``0..i-1`` (so ``prefix`` has one more
    element than ``t``). Samples whose past or future half-window holds no sample get 0.

    Examples
    --------
    >>> t = np.arange(6) * 0.1; conf = np.array([1, 1, 1, 0, 0, 0.0])
    >>> p = np.concatenate([[0.0], np.cumsum(conf)])
    >>> step_response(t, p, np.arange(6), 0.2).round(3).tolist()
    [0.0, 0.0, 0.5, 1.0, 0.5, 0.0]
    """
    tq = t[query]
    a = np.searchsorted(t, tq - half - 1e-12, side="left")
    b = np.searchsorted(t, tq + half - 1e-12, side="left")
    n_past = query - a
    n_future = b - query
    ok = (n_past > 0) & (n_future > 0)
    out = np.zeros(query.shape[0])
    q = query[ok]
    past = (prefix[q] - prefix[a[ok]]) / n_past[ok]
    future = (prefix[b[ok]] - prefix[q]) / n_future[ok]
    out[ok] = past - future
    return out
