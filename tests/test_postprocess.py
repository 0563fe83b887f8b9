"""Post-processing of releases (issue #21 item 3): consistency with public facts, smoothing across
chunks with the noise variance the ledger determines, dropped features untouched, validation."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from streamdp.postprocess import CONSTRAINTS, DEFAULT_DRIFT, FilterState, PostProcessor, noise_model, postprocess
from streamdp.postprocess._kernel import COMPILED
from streamdp.privacy import cfpa, dcfpa, default_profile, make_mechanism, secure_generator
from streamdp.schema import FEATURE_INDEX, FEATURE_NAMES, WORDBOOK_ORDERS
from streamdp.stages.chunker import Chunk
from streamdp.stages.privatizer import Privatizer
from tests.reference_postprocess import ReferencePostProcessor


def _ledger(mech, bounds):
    return {**mech.describe(), "bounds_digest": bounds.digest()}


def _consistent_chunk(rng, n=32):
    """A chunk meeting every public fact: what the feature kernels can produce."""
    b = default_profile()
    x = rng.uniform(0.1, 0.9, (n, 52)) * b.width + b.lo
    col = FEATURE_INDEX
    small = rng.uniform(0, 3, n)
    large = rng.uniform(0, 3, n)
    pos = rng.uniform(0, 1, n) * (small + large)
    x[:, col["small_saccade_rate"]], x[:, col["large_saccade_rate"]] = small, large
    x[:, col["saccade_rate"]] = small + large
    x[:, col["positive_saccade_rate"]], x[:, col["negative_saccade_rate"]] = pos, (small + large) - pos
    r = rng.uniform(0, 1, n)
    x[:, col["small_saccade_ratio"]], x[:, col["large_saccade_ratio"]] = r, 1.0 - r
    x[:, col["positive_saccade_ratio"]], x[:, col["negative_saccade_ratio"]] = 1.0 - r, r
    for n_ in WORDBOOK_ORDERS:
        mx = rng.uniform(10, 180, n)
        mn = rng.uniform(0, 1, n) * mx
        x[:, col[f"wordbook{n_}_max"]], x[:, col[f"wordbook{n_}_min"]] = mx, mn
        x[:, col[f"wordbook{n_}_range"]] = mx - mn
    for mean, top in (("saccade_amplitude_mean", "saccade_amplitude_max"),
                      ("fixation_duration_mean", "fixation_duration_max")):
        x[:, col[top]] = np.maximum(x[:, col[top]], x[:, col[mean]])
    return x


@pytest.fixture(scope="module", autouse=True, params=["compiled", "numpy"])
def path(request):
    """Every test on both paths: the compiled pass (numba, the extra ``fast``) and NumPy's."""
    if request.param == "compiled" and not COMPILED:
        pytest.skip("numba is not installed (the extra 'fast'): the NumPy path alone")
    with pytest.MonkeyPatch.context() as patch:
        if request.param == "numpy":
            patch.setattr("streamdp.postprocess.compiled_pass", lambda: None)
        yield request.param


@pytest.fixture(scope="module")
def dcfpa_pp(path):
    b = default_profile()
    return PostProcessor(ledger=_ledger(dcfpa(epsilon=52.0, bounds=b, chunk_length=32), b))


def test_the_table_names_only_schema_features_and_gives_a_reason_per_row():
    for kind, feats, why in CONSTRAINTS:
        assert kind in ("box", "sum", "order") and why
        assert all(f in FEATURE_NAMES or f == "1" for f in feats)


def test_consistency_never_moves_a_consistent_chunk(dcfpa_pp):
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = _consistent_chunk(rng)
        assert dcfpa_pp.violation(x) <= 1.0
        out = dcfpa_pp.project(x)
        assert np.array_equal(out, x)  # bit for bit
        assert out is not x


def test_consistency_output_meets_every_constraint_and_moves_no_further_from_a_consistent_truth(dcfpa_pp):
    rng = np.random.default_rng(1)
    b = default_profile()
    for scale in (0.01, 0.3, 3.0):
        truth = _consistent_chunk(rng)
        noisy = truth + rng.normal(size=truth.shape) * b.width * scale
        out = dcfpa_pp.project(noisy)
        assert dcfpa_pp.violation(out) <= 1.0
        assert np.all(out >= 0) and np.all(out <= b.hi)
        # equal variances, so the metric is plain: the projections never move away from the truth
        assert np.sum(((out - truth) / b.width) ** 2) <= np.sum(((noisy - truth) / b.width) ** 2)


def test_ratio_pairs_sum_to_one_and_rates_add_up_after_projection(dcfpa_pp):
    rng = np.random.default_rng(2)
    out = dcfpa_pp.project(rng.normal(size=(32, 52)) * 5)
    col = FEATURE_INDEX
    np.testing.assert_allclose(out[:, col["small_saccade_ratio"]] + out[:, col["large_saccade_ratio"]], 1.0)
    np.testing.assert_allclose(out[:, col["small_saccade_rate"]] + out[:, col["large_saccade_rate"]],
                               out[:, col["saccade_rate"]])
    np.testing.assert_allclose(out[:, col["wordbook2_max"]] - out[:, col["wordbook2_min"]],
                               out[:, col["wordbook2_range"]], atol=1e-9)
    assert np.all(out[:, col["saccade_amplitude_mean"]] <= out[:, col["saccade_amplitude_max"]])


def test_the_stated_variance_is_the_mechanisms_own():
    b = default_profile()
    mech = dcfpa(epsilon=520.0, bounds=b, chunk_length=16)
    model = noise_model(_ledger(mech, b))
    rng = secure_generator(3)
    x = np.tile(b.midpoint, (16, 1))
    outs = np.array([mech.privatize(x, rng).values for _ in range(600)])
    ratio = outs.mean(axis=1).var(axis=0) / model.level_variance
    assert 0.8 < np.median(ratio) < 1.2
    ratio = outs.var(axis=0).mean(axis=0) / model.step_variance
    assert 0.8 < np.median(ratio) < 1.2


def _slow_stream(rng, chunks, n, b):
    """True chunks whose features drift slowly, and the chunks a mechanism released of them."""
    level = b.lo + b.width * rng.uniform(0.3, 0.7, 52)
    truth = []
    for _ in range(chunks):
        level = np.clip(level + rng.normal(size=52) * 0.005 * b.width, b.lo, b.hi)
        truth.append(np.tile(level, (n, 1)))
    return truth


@pytest.mark.parametrize("make", [dcfpa, cfpa])
def test_smoothing_reduces_the_error_to_the_true_values(make):
    b = default_profile()
    n = 16
    mech = make(epsilon=52.0 * 5, bounds=b, chunk_length=n)
    rng = np.random.default_rng(4)
    noise = secure_generator(5)
    truth = _slow_stream(rng, 40, n, b)
    noisy = [mech.privatize(t, noise).values for t in truth]
    ledger = _ledger(mech, b)

    def mse(pp):
        out, state = [], None
        for x in noisy:
            y, state = pp(x, state)
            out.append(y)
        return np.mean([(((y - t) / b.width) ** 2).mean() for y, t in zip(out[5:], truth[5:], strict=True)])

    raw = np.mean([(((y - t) / b.width) ** 2).mean() for y, t in zip(noisy[5:], truth[5:], strict=True)])
    smoothed = mse(PostProcessor(ledger=ledger, consistent=False))
    assert smoothed < 0.5 * raw
    # with a variance far below the stated one the filter trusts each chunk: little gain; the
    # stated variance is what buys the reduction
    trusting = mse(PostProcessor(ledger=ledger, consistent=False, drift=1e3))
    assert smoothed < 0.5 * trusting
    # weighting inverted (new chunks trusted for their noise): worse than the stated weighting
    pp = PostProcessor(ledger=ledger, consistent=False)
    out, state = [], None
    for x in noisy:
        level = x.mean(axis=0)
        if state is None:
            state = FilterState(level, pp.noise.level_variance)
        else:
            prior = state.variance + (DEFAULT_DRIFT * b.width) ** 2
            gain = pp.noise.level_variance / (prior + pp.noise.level_variance)  # inverted
            est = state.estimate + gain * (level - state.estimate)
            state = FilterState(est, (1 - gain) * prior)
        out.append(x + (state.estimate - level))
    inverted = np.mean([(((y - t) / b.width) ** 2).mean() for y, t in zip(out[5:], truth[5:], strict=True)])
    assert smoothed < inverted


def test_dropped_features_are_left_exactly_as_released():
    b = default_profile("task")
    assert not b.released.all()
    mech = dcfpa(epsilon=25.0, bounds=b, chunk_length=8)
    priv = Privatizer(mech, rng=secure_generator(6))
    rng = np.random.default_rng(6)
    chunks = [Chunk(np.arange(8) * 0.5 + 4 * i, rng.uniform(0, 1, (8, 52)) * b.width + b.lo) for i in range(6)]
    rels = priv.update(chunks)
    out = postprocess(rels, bounds=b)
    dropped = ~b.released
    for rel, y in zip(rels, out, strict=True):
        assert np.array_equal(y[:, dropped], rel.values[:, dropped])
        assert not np.array_equal(y[:, ~dropped], rel.values[:, ~dropped])
    assert noise_model(rels[0].ledger, b).level_variance[dropped].max() == 0.0


def test_a_stream_of_releases_and_its_gaps():
    b = default_profile()
    priv = Privatizer(cfpa(epsilon=52.0, bounds=b, chunk_length=8), rng=secure_generator(7))
    rels = priv.update([Chunk(np.arange(8) * 0.5 + 4 * i, np.full((8, 52), 0.1)) for i in range(4)])
    pp = PostProcessor(ledger=rels[0].ledger)
    assert len(pp.run(rels)) == 4
    assert len(pp.run([rels[0], rels[2]])) == 2  # a gap: more drift, still fine
    with pytest.raises(ValueError, match="chunk_index"):
        pp.run([rels[2], rels[1]])
    other = Privatizer(cfpa(epsilon=26.0, bounds=b, chunk_length=8), rng=secure_generator(7))
    (rel,) = other.update([Chunk(np.arange(8) * 0.5, np.zeros((8, 52)))])
    with pytest.raises(ValueError, match="epsilon"):
        pp.run([rel])
    with pytest.raises(TypeError, match="releases"):
        pp.run([np.zeros((8, 52))])


def test_parameters_are_keyword_only_validated_and_immutable(dcfpa_pp):
    b = default_profile()
    ledger = _ledger(dcfpa(epsilon=52.0, bounds=b, chunk_length=32), b)
    with pytest.raises(TypeError):
        PostProcessor(ledger)  # type: ignore[misc]
    with pytest.raises(TypeError, match="drift"):
        PostProcessor(ledger=ledger, drift="0.1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="drift"):
        PostProcessor(ledger=ledger, drift=-1.0)
    with pytest.raises(TypeError, match="smooth"):
        PostProcessor(ledger=ledger, smooth=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ledger"):
        PostProcessor(ledger=[("mechanism", "dcfpa")])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ledger"):
        PostProcessor(ledger={**ledger, "mechanism": "steil"})
    with pytest.raises(ValueError, match="ledger"):
        PostProcessor(ledger={k: v for k, v in ledger.items() if k != "k"})
    with pytest.raises(ValueError, match="bounds"):
        PostProcessor(ledger={**ledger, "bounds_digest": "0" * 16})
    with pytest.raises(TypeError, match="bounds"):
        PostProcessor(ledger=ledger, bounds={"lo": 0})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="values"):
        dcfpa_pp([[0.0] * 52] * 32)
    with pytest.raises(ValueError, match="values"):
        dcfpa_pp(np.zeros((31, 52)))
    with pytest.raises(ValueError, match="values"):
        dcfpa_pp(np.full((32, 52), np.nan))
    with pytest.raises(TypeError, match="state"):
        dcfpa_pp(np.zeros((32, 52)), state=(0, 0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="gap"):
        dcfpa_pp(np.zeros((32, 52)), gap=0)
    with pytest.raises(AttributeError):
        dcfpa_pp.drift = 1.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del dcfpa_pp.smooth
    assert not dcfpa_pp.noise.level_variance.flags.writeable
    released = np.zeros((32, 52))
    released.setflags(write=False)
    out, _ = dcfpa_pp(released)
    assert out.flags.writeable and out is not released


def _agreement_cases():
    """(name, mechanism, bounds): chunk mechanisms of each kind, dropped features included."""
    eq, task = default_profile(), default_profile("task")
    yield "dcfpa-64", dcfpa(epsilon=25.0, bounds=eq, chunk_length=64), eq
    yield "cfpa-16-task", cfpa(epsilon=25.0, bounds=task, chunk_length=16), task
    yield "dcfpa-8-task", dcfpa(epsilon=200.0, bounds=task, chunk_length=8), task
    yield "lpa-8", make_mechanism("lpa", epsilon=52.0, bounds=eq, chunk_length=8), eq
    yield "bozkir-32", make_mechanism("dcfpa-bozkir", epsilon=52.0, bounds=eq, chunk_length=32, transform="dft", k=4,
                                      sensitivity="bound"), eq


def _seeded_chunks(mech, b, seed):
    """Releases of a slowly moving truth, a consistent chunk, the same within and beyond the
    tolerance, and noise far beyond the bounds; dropped features at their public constant."""
    rng, n = np.random.default_rng(seed), mech.chunk_length
    truth = np.clip(b.midpoint + np.cumsum(rng.uniform(-1, 1, (n, 52)) * b.step_bound / 2, axis=0), b.lo, b.hi)
    noise = secure_generator(seed)
    chunks = [mech.privatize(truth, noise).values for _ in range(3)]
    ok = _consistent_chunk(rng, n)
    chunks += [ok, ok + rng.normal(size=ok.shape) * b.width * rng.choice([1e-11, 1e-9, 1e-7], size=ok.shape),
               rng.normal(size=ok.shape) * b.width * 3, rng.normal(size=ok.shape) * 1e6]
    for x in chunks:
        x[:, ~b.released] = b.midpoint[~b.released]
    return chunks


@pytest.mark.parametrize("smooth, consistent", [(True, True), (True, False), (False, True)])
def test_the_fast_path_agrees_with_the_plain_reference(smooth, consistent):
    # the hot path is restructured for speed (work rows, in-place steps); its results are the
    # plain reading's (tests/reference_postprocess.py) up to the order of float operations
    for _, mech, b in _agreement_cases():
        ledger = _ledger(mech, b)
        for drift in (DEFAULT_DRIFT, 1e3):
            kw = dict(ledger=ledger, bounds=b, drift=drift, smooth=smooth, consistent=consistent)
            fast, ref = PostProcessor(**kw), ReferencePostProcessor(**kw)
            width = np.where(b.released, b.width, 1.0)

            def close(got, want, width=width, scale=0.0):
                # relative 1e-12, or 1e-12 of the public range where cancellation left a small value,
                # or of the values a level sums (``scale``: the compiled pass sums them in another order)
                bad = np.abs(got - want) > 1e-12 * np.abs(want) + 1e-12 * width + 1e-12 * scale
                assert not bad.any(), f"{np.count_nonzero(bad)} values differ, largest {np.max(np.abs(got - want))}"
            for seed in (0, 1):
                state = ref_state = None
                for i, x in enumerate(_seeded_chunks(mech, b, seed)):
                    gap = 3 if i == 2 else 1
                    x = x.astype(np.float32) if i == 1 else x
                    out, state = fast(x, state, gap=gap)
                    want, ref_state = ref(x, ref_state, gap=gap)
                    scale = np.abs(x).mean(axis=0)
                    close(out, want, scale=scale)
                    if smooth:
                        close(state.estimate, ref_state.estimate, scale=scale)
                        np.testing.assert_allclose(state.variance, ref_state.variance, rtol=1e-12)
                if consistent:
                    x = _seeded_chunks(mech, b, seed)[0][:3]  # any number of steps
                    close(fast.project(x), ref.projection(x))


def test_calls_share_nothing_they_return_and_threads_do_not_mix(dcfpa_pp):
    rng = np.random.default_rng(8)
    chunks = [rng.normal(size=(32, 52)) * 3 for _ in range(8)]
    out0, state0 = dcfpa_pp(chunks[0])
    kept = out0.copy(), state0.estimate.copy()
    out1, state1 = dcfpa_pp(chunks[1], state0)
    dcfpa_pp(chunks[2], state1)
    assert np.array_equal(out0, kept[0]) and np.array_equal(state0.estimate, kept[1])
    assert not np.shares_memory(out0, out1) and not np.shares_memory(state1.estimate, out1)

    def stream(xs):
        state, outs = None, []
        for x in xs:
            y, state = dcfpa_pp(x, state)
            outs.append(y)
        return outs

    want = [stream(chunks[i:] + chunks[:i]) for i in range(4)]

    def again(i):  # the same stream, many times over, while the other threads run theirs
        return all(all(np.array_equal(a, b) for a, b in zip(stream(chunks[i:] + chunks[:i]), want[i], strict=True))
                   for _ in range(30))

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(again, range(4)))
