"""The evaluation's post-processed variant of a grid point's releases (:mod:`streamdp.postprocess`).

Each recording's released chunks go through the post-processor in order, as an app would apply
it live. The smoother carries what it learnt from one chunk to the next; so that the
re-identification's chunked split stays honest (no noise drawn for a training chunk may reach a
test chunk), the filter restarts at each recording's first test chunk
(:func:`~streamdp.offline.splits.chunked_split`), whatever the metric.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..config import SessionConfig
from ..postprocess import SUPPORTED_MECHANISMS, FilterState, PostProcessor
from .classify import Released
from .splits import chunked_split


def post_processor(config: SessionConfig) -> PostProcessor | None:
    """The post-processor of the releases ``config``'s chunk privatizer makes (its ledger: the
    mechanism's public parameters and the bounds' digest), or None for a mechanism without a
    stated noise model."""
    mech = config.mechanism_instance()
    if mech.name not in SUPPORTED_MECHANISMS:
        return None
    bounds = config.bounds_profile()
    return PostProcessor(ledger={**mech.describe(), "bounds_digest": bounds.digest()}, bounds=bounds)


def postprocess_parts(parts: Sequence[Released], processor: PostProcessor, window: float) -> list[Released]:
    """Each recording's noisy steps post-processed chunk by chunk (a chunk: the steps of one
    ``chunk`` value, consecutive), the filter restarted at the first test chunk of the chunked
    split with ``window`` s between training and test.

    Examples
    --------
    >>> from streamdp.privacy.bounds import default_profile
    >>> cfg = SessionConfig(mechanism="dcfpa", epsilon=52.0, chunk_length=8, weights="equal")
    >>> pp = post_processor(cfg)
    >>> noisy = np.full((32, 52), -1.0)
    >>> part = Released(noisy, noisy, np.arange(32) * 0.5, np.repeat(np.arange(4), 8))
    >>> (out,) = postprocess_parts([part], pp, 0.5)
    >>> float(out.noisy.min()), out.clean is part.clean
    (0.0, True)
    """
    out = []
    for part in parts:
        noisy = np.empty_like(part.noisy)
        test = chunked_split(part.t, part.chunk, window)[1]
        restart = int(part.chunk[test[0]]) if len(test) else -1
        starts = np.flatnonzero(np.r_[True, part.chunk[1:] != part.chunk[:-1]])
        state: FilterState | None = None
        for a, b in zip(starts, np.r_[starts[1:], len(part.chunk)], strict=True):
            if int(part.chunk[a]) == restart:
                state = None
            noisy[a:b], state = processor(part.noisy[a:b], state)
        out.append(Released(part.clean, noisy, part.t, part.chunk))
    return out
