"""The gaze channel's public median (``gaze_smoothing``, issue #20): the same bytes however the
ticks are batched, released positions on the noise's lattice, bad names refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.kernels.smoothing import CausalMedian, causal_smooth, check_smoothing
from streamdp.synthetic import generate


@pytest.mark.parametrize("name", ["median3", "median9", "mean4"])
def test_smoothing_in_batches_is_smoothing_the_whole_stream(name):
    values = np.random.default_rng(0).normal(size=(200, 2))
    whole, _ = causal_smooth(values, name)
    history, parts = None, []
    for chunk in np.split(values, [1, 2, 17, 18, 90, 199]):
        out, history = causal_smooth(chunk, name, history)
        parts.append(out)
    assert np.array_equal(np.concatenate(parts), whole)


def test_the_channel_s_median_is_the_same_whatever_the_batches_and_stays_on_the_lattice():
    gaze = generate(duration=6.0, rate=120.0, seed=3).recording.gaze
    config = SessionConfig(gaze_channel=True, seed=1)
    assert config.gaze_smoothing == "median5"

    def released(cuts: list[int]) -> np.ndarray:
        channel = config.gaze_channel_for()
        assert channel is not None
        out = []
        for lo, hi in zip([0, *cuts], [*cuts, len(gaze)], strict=True):
            out += channel.update(gaze.slice(lo, hi))
        out += channel.flush()
        return np.concatenate([r.values for r in out])

    whole = released([])
    assert np.array_equal(released([5, 6, 300, 301, 700]), whole)
    lattice = channel_lattice(config)
    assert np.all((whole[:, :2] / lattice) % 1 == 0)
    # the median moved something: the released positions are not the mechanism's outputs
    raw = SessionConfig(gaze_channel=True, seed=1, gaze_smoothing="none").gaze_channel_for()
    assert raw is not None
    unsmoothed = np.concatenate([r.values for r in raw.update(gaze) + raw.flush()])
    assert not np.array_equal(unsmoothed, whole)


def channel_lattice(config: SessionConfig) -> float:
    mech = config.gaze_mechanism_instance()
    assert mech is not None
    return float(mech.describe()["lattice_deg"])


@pytest.mark.parametrize(
    ("value", "error", "fragment"),
    [
        ("median8", ValueError, "k odd"),
        ("mean9", ValueError, "median<k>"),
        ("median33", ValueError, "3 ≤ k ≤ 31"),
        ("median1", ValueError, "3 ≤ k ≤ 31"),
        ("smooth", ValueError, "got 'smooth'"),
        (9, TypeError, "must be a str"),
    ],
    ids=["even length", "a mean", "too long", "too short", "not a filter", "not a str"],
)
def test_a_bad_gaze_smoothing_is_refused_by_name(value, error, fragment):
    with pytest.raises(error, match=fragment):
        SessionConfig(gaze_channel=True, gaze_smoothing=value)


def test_apps_and_the_evaluation_keep_their_wider_choice_of_filters():
    assert check_smoothing("mean15") == "mean15" and check_smoothing("median600") == "median600"


@pytest.mark.parametrize("k", [3, 9, 31])
def test_few_rows_give_numpy_s_medians_bit_for_bit(k):
    rng = np.random.default_rng(k)
    history = rng.laplace(size=(k - 1, 2))
    for m in (1, 2, 5, 16, 17):
        values = rng.laplace(size=(m, 2))
        out, carried = causal_smooth(values, f"median{k}", history)
        padded = np.concatenate([history, values])
        expected = np.array([np.median(padded[i : i + k], axis=0) for i in range(m)])
        assert np.array_equal(out, expected) and np.array_equal(carried, padded[-(k - 1) :])
        history = carried


@pytest.mark.parametrize("k", [3, 9, 31])
def test_the_channel_s_running_median_is_causal_smooth_bit_for_bit_however_batched(k):
    """:class:`CausalMedian` (the privatizer's, history in Python floats) gives the bits of
    :func:`causal_smooth` on the whole stream, in batches of one tick, of a few and of more than
    it sorts in Python, and starts again after ``reset`` as a new stream does."""
    rng = np.random.default_rng(k)
    values = rng.laplace(size=(300, 2)) * 2.0**-30 // 2.0**-30  # on a lattice: ties, as released
    whole, _ = causal_smooth(values, f"median{k}")
    median = CausalMedian(k)
    cuts = [1, 2, 3, 20, 21, 60, 61, 62, 299]
    parts = [median(part) for part in np.split(values, cuts)]
    assert np.array_equal(np.concatenate(parts), whole)
    median.reset()  # a live wake's tick at a time, through push, between batches
    pushed = [median(values[:3])] + [np.array([median.push(x, y)]) for x, y in values[3:200].tolist()]
    assert np.concatenate([*pushed, median(values[200:])]).tobytes() == whole.tobytes()
    median.reset()
    assert np.array_equal(median(values[100:101]), values[100:101])
    assert np.array_equal(median(values[:0]), values[:0])


@pytest.mark.parametrize("k", [0, 1, 2, 10], ids=["zero", "one", "two", "even"])
def test_a_running_median_of_no_odd_length_is_refused(k):
    with pytest.raises(ValueError, match=f"k must be odd and ≥ 3, got {k}"):
        CausalMedian(k)
