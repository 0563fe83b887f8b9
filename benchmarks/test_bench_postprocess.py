"""Post-processing cost (issue #21: ≤ 10 µs per 64 × 52 chunk): one chunk smoothed and made
consistent (:mod:`streamdp.postprocess`: the compiled pass where numba is installed, the extra
``fast``), against ``np.clip`` of the same array to its public bounds, the least any consistency
step does, against the NumPy path (without numba) and against the plain reference of the same
steps (``tests/reference_postprocess.py``, the implementation before the hot path was
restructured): ratios in one run, since the absolute figure depends on the machine and its load."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.postprocess import PostProcessor
from streamdp.postprocess._kernel import COMPILED
from streamdp.privacy import dcfpa, default_profile, secure_generator
from tests.reference_postprocess import ReferencePostProcessor

GROUP = "post-processing: one 64×52 DCFPA chunk smoothed and made consistent / np.clip of it"
GROUP_REFERENCE = "post-processing: the plain reference (before) / the fast PostProcessor (after), same chunk and state"


@pytest.fixture(scope="module")
def released():
    b = default_profile()
    mech = dcfpa(epsilon=25.0, bounds=b, chunk_length=64)
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.uniform(-1, 1, (64, 52)) * b.step_bound * 0.5, axis=0)
    chunk = np.clip((b.lo + b.hi) / 2 + walk, b.lo, b.hi)
    values = mech.privatize(chunk, secure_generator(0)).values
    return mech, b, values


def _ready(make, released, **kw):
    """A post-processor of the chunk's configuration, and its state after one chunk: every timed
    call is then one step of a running stream (the state's variance is not yet converged)."""
    mech, b, values = released
    pp = make(ledger={**mech.describe(), "bounds_digest": b.digest()}, bounds=b, **kw)
    _, state = pp(values)
    return pp, values, state


def test_postprocess_chunk_64x52(benchmark, released):
    pp, values, state = _ready(PostProcessor, released)
    benchmark.group = GROUP
    benchmark.extra_info.update(role="candidate", target="(target: <= 10 µs per chunk)", compiled=COMPILED)
    out, _ = benchmark(pp, values, state)
    assert out.shape == (64, 52)


def test_postprocess_chunk_64x52_numpy_path(benchmark, released, monkeypatch):
    monkeypatch.setattr("streamdp.postprocess.compiled_pass", lambda: None)
    pp, values, state = _ready(PostProcessor, released)
    benchmark.group = GROUP
    benchmark.extra_info.update(note="the NumPy path, without numba (the extra 'fast')")
    out, _ = benchmark(pp, values, state)
    assert out.shape == (64, 52)


def test_clip_chunk_64x52(benchmark, released):
    _, b, values = released
    benchmark.group = GROUP
    benchmark.extra_info.update(role="baseline", note="np.clip of the same chunk to its public bounds")
    out = benchmark(np.clip, values, b.lo, b.hi)
    assert out.shape == (64, 52)


def test_postprocess_chunk_64x52_fast(benchmark, released):
    pp, values, state = _ready(PostProcessor, released)
    benchmark.group = GROUP_REFERENCE
    benchmark.extra_info.update(role="candidate", target="(the speed-up of the restructured hot path)")
    out, _ = benchmark(pp, values, state)
    assert out.shape == (64, 52)


def test_postprocess_chunk_64x52_reference(benchmark, released):
    ref, values, state = _ready(ReferencePostProcessor, released)
    benchmark.group = GROUP_REFERENCE
    benchmark.extra_info.update(role="baseline", note="the plain reading of the same steps")
    out, _ = benchmark(ref, values, state)
    assert out.shape == (64, 52)


def test_postprocess_chunk_64x52_smoothing_only(benchmark, released):
    pp, values, state = _ready(PostProcessor, released, consistent=False)
    benchmark.group = "post-processing: smoothing only"
    benchmark.extra_info.update(target="(part of the 10 µs)")
    out, _ = benchmark(pp, values, state)
    assert out.shape == (64, 52)
