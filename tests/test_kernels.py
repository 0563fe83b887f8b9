from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdp.kernels.dispersion import grow_extent, segment_mean_var, window_dispersion
from streamdp.kernels.geometry import degrees_to_norm, degrees_to_norm_one, norm_to_degrees
from streamdp.kernels.sparse_table import range_max
from streamdp.kernels.wordbook import NgramCounter, encode_saccades, ngram_code


def test_window_dispersion_matches_brute_force():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=500), rng.normal(size=500)
    lo = rng.integers(0, 450, 300)
    hi = lo + rng.integers(0, 50, 300)
    got = window_dispersion(x, y, lo, hi)
    want = [
        (x[a : b + 1].max() - x[a : b + 1].min()) + (y[a : b + 1].max() - y[a : b + 1].min())
        for a, b in zip(lo, hi, strict=False)
    ]
    np.testing.assert_allclose(got, want, rtol=0, atol=0)


def test_grow_extent_stops_at_the_first_sample_over_the_threshold_or_after_a_gap():
    x = np.array([0.0, 0.1, 0.2, 0.3, 5.0, 0.1])
    y = np.zeros(6)
    brk = np.zeros(6, dtype=bool)
    stop, box = grow_extent(x, y, brk, 1, (0.0, 0.0, 0.0, 0.0), 1.0)
    assert stop == 4 and box == (0.3, 0.0, 0.0, 0.0)
    brk[2] = True
    assert grow_extent(x, y, brk, 1, (0.0, 0.0, 0.0, 0.0), 1.0)[0] == 2


def test_grow_extent_is_the_same_for_long_fixations_crossing_block_edges():
    x = np.zeros(1000)
    x[777] = 9.0
    stop, _ = grow_extent(x, np.zeros(1000), np.zeros(1000, dtype=bool), 0, (0.0, 0.0, 0.0, 0.0), 1.0)
    assert stop == 777


def test_segment_mean_var_equals_numpy_per_segment():
    rng = np.random.default_rng(1)
    v = rng.normal(5, 2, 200)
    v[rng.integers(0, 200, 20)] = np.nan
    v[50] = np.nan  # a segment with no finite value
    starts = np.array([0, 10, 50, 120])
    stops = np.array([5, 40, 51, 200])
    m, var, n = segment_mean_var(v, starts, stops)
    for i, (a, b) in enumerate(zip(starts, stops, strict=False)):
        seg = v[a:b][np.isfinite(v[a:b])]
        assert n[i] == seg.size
        if seg.size == 0:
            assert np.isnan(m[i]) and np.isnan(var[i])
            continue
        np.testing.assert_allclose(m[i], seg.mean(), rtol=1e-12)
        np.testing.assert_allclose(var[i], seg.var(), rtol=1e-10, atol=1e-14)


def test_degrees_round_trip():
    ax = np.array([-40.0, -3.0, 0.0, 12.5, 45.0])
    nx, ny = degrees_to_norm(ax, ax / 2, (99.0, 53.0))
    bx, by = norm_to_degrees(nx, ny, (99.0, 53.0))
    np.testing.assert_allclose(bx, ax, atol=1e-12)
    np.testing.assert_allclose(by, ax / 2, atol=1e-12)


@pytest.mark.parametrize("fov", [(99.0, 53.0), (139.0, 83.0), (82.0, 82.0)])
def test_one_position_in_python_floats_is_the_arrays_scene_units_bit_for_bit(fov):
    """A live tick's scene units (one NumPy ``tan`` for both axes) are the bits the replay's arrays
    get, whatever the arrays' length, across the field and at signed zeros and the clip."""
    ax = np.concatenate([np.random.default_rng(2).uniform(-89.999, 89.999, 500), [0.0, -0.0, 89.999, -89.999]])
    ay = ax[::-1].copy()
    nx, ny = degrees_to_norm(ax, ay, fov)
    one = np.array([degrees_to_norm_one(x, y, fov) for x, y in zip(ax.tolist(), ay.tolist(), strict=True)])
    assert one.tobytes() == np.column_stack([nx, ny]).tobytes()


def test_alphabet_has_24_letters_in_the_documented_sectors():
    angles = np.arange(0, 360, 22.5)
    small = encode_saccades(np.ones(16), angles, 3.0)
    large = encode_saccades(np.full(16, 10.0), angles, 3.0)
    assert sorted(set(small.tolist())) == list(range(8))
    assert large.tolist() == list(range(8, 24))
    # straight up / down / left, small and large
    assert encode_saccades(np.array([1.0, 1.0, 1.0]), np.array([90.0, -90.0, 180.0]), 3.0).tolist() == [2, 6, 4]
    assert encode_saccades(np.array([5.0, 5.0]), np.array([90.0, 180.0]), 3.0).tolist() == [12, 16]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 5)), min_size=1, max_size=80))
def test_ngram_counter_matches_a_counter_under_any_adds_and_removes(ops):
    counter = NgramCounter(2)
    ref: Counter[int] = Counter()
    for add, code in ops:
        if add or ref[code] == 0:
            counter.add(code)
            ref[code] += 1
        else:
            counter.remove(code)
            ref[code] -= 1
        counts = np.array([c for c in ref.values() if c > 0], dtype=float)
        distinct, mx, mn, rng_, mean, var = counter.stats()
        assert distinct == counts.size
        assert mx == (counts.max() if counts.size else 0)
        assert mn == (counts.min() if counts.size else 0)
        assert rng_ == mx - mn
        np.testing.assert_allclose(mean, counts.sum() / 576)
        full = np.zeros(576)
        full[: counts.size] = counts
        np.testing.assert_allclose(var, full.var(), atol=1e-15)


def test_ngram_code_is_base_24_first_letter_most_significant():
    assert ngram_code([1, 2]) == 26
    assert ngram_code([23, 0, 5]) == 23 * 576 + 5


@pytest.mark.parametrize("m", [0, 1, 5, 500])  # few ranges go slice by slice, many through the table
@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 1000])
def test_range_max_equals_the_max_of_every_slice(n, m):
    rng = np.random.default_rng(n)
    values = rng.normal(size=n)
    lo = rng.integers(0, n + 1, size=m)
    hi = np.minimum(lo + rng.integers(0, n + 1, size=m), n)
    want = [values[a:b].max() if b > a else -1.0 for a, b in zip(lo, hi, strict=True)]
    np.testing.assert_array_equal(range_max(values, lo, hi, empty=-1.0), want)


def test_range_max_propagates_nan_as_ndarray_max_and_spares_ranges_without_it():
    values = np.array([1.0, np.nan, 3.0, 2.0])
    lo, hi = np.array([0, 2, 0, 1] * 10), np.array([2, 4, 4, 1] * 10)
    for k in (4, 40):  # slice by slice, and through the table
        got = range_max(values, lo[:k], hi[:k])
        np.testing.assert_array_equal(got, [np.nan, 3.0, np.nan, 0.0] * (k // 4))


@pytest.mark.parametrize(
    ("lo", "hi", "match"),
    [
        pytest.param([0, 1], [2], "differ in shape", id="shapes"),
        pytest.param([2], [1], "lo <= hi", id="reversed"),
        pytest.param([-1], [2], "0 <= lo", id="negative"),
        pytest.param([0], [5], "hi <= 4", id="past-the-end"),
        pytest.param([0] * 40, [4] * 39 + [5], "hi <= 4", id="past-the-end-of-many"),
    ],
)
def test_range_max_refuses_ranges_outside_the_array(lo, hi, match):
    with pytest.raises(ValueError, match=match):
        range_max(np.zeros(4), np.array(lo), np.array(hi))
