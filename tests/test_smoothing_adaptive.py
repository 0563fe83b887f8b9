"""The adaptive median (``adaptive<k>``, issue #38): a one-tick step lag where ``median<k>`` has
``(k - 1)/2``, no jump on a single outlier, the same bytes however the ticks are batched, released
positions on the noise's lattice, accepted by the channel and the study."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.kernels.smoothing import causal_smooth, check_smoothing, smoothing_lag
from streamdp.offline.gaze_study import check_filter, smooth


def measured_lag(name: str, old: tuple[float, float], new: tuple[float, float], before: int = 40) -> int:
    """Ticks from a noise-free step (``old`` until tick ``before``, ``new`` from it on) to the
    first output equal to ``new``."""
    values = np.array([old] * before + [new] * 40, dtype=np.float64)
    out = smooth(values, name)
    reached = np.flatnonzero(np.all(out[before:] == np.asarray(new), axis=1))
    assert len(reached), f"{name} never reached {new}"
    return int(reached[0])


STEPS = [((0.0, 0.0), (15.0, 0.0)), ((3.0, -2.0), (2.5, -2.0)), ((-7.0, 4.0), (5.0, -9.0)), ((0.0, 0.0), (0.0, 1e-3))]


@pytest.mark.parametrize("k", [5, 7, 9, 31])
@pytest.mark.parametrize(("old", "new"), STEPS, ids=["15 deg", "half a degree", "diagonal", "tiny"])
def test_a_noise_free_step_is_followed_one_tick_late_whatever_its_size(k, old, new):
    assert measured_lag(f"adaptive{k}", old, new) == smoothing_lag(f"adaptive{k}") == 1
    assert measured_lag(f"median{k}", old, new) == smoothing_lag(f"median{k}") == (k - 1) // 2


def test_the_step_lag_of_each_filter_is_its_definition():
    assert [smoothing_lag(n) for n in ("none", "median3", "median5", "median9", "adaptive3", "adaptive5")] == [
        0,
        1,
        2,
        4,
        1,
        1,
    ]
    assert measured_lag("mean4", (0.0, 0.0), (8.0, 0.0)) == smoothing_lag("mean4") == 3


@pytest.mark.parametrize("k", [5, 9])
def test_single_outliers_in_noise_move_nothing_the_median_would_not(k):
    rng = np.random.default_rng(k)
    values = rng.laplace(scale=3.0, size=(600, 2))
    at = np.arange(20, 600, 37)
    values[at] += rng.choice([-1.0, 1.0], size=(len(at), 2)) * 40.0  # one far tick at a time
    adaptive, median = smooth(values, f"adaptive{k}"), smooth(values, f"median{k}")
    for i in at:  # the far tick and the ticks after it: never the outlier, never pulled towards it
        assert np.array_equal(adaptive[i : i + k], median[i : i + k])
    assert np.abs(adaptive).max() < 20.0


def test_two_agreeing_ticks_off_a_noisy_fixation_are_a_jump():
    rng = np.random.default_rng(1)
    values = np.concatenate([rng.laplace(scale=0.3, size=(30, 2)), [[15.0, 0.2], [15.1, 0.0]]])
    out = smooth(values, "adaptive9")
    assert np.hypot(*out[-2]) < 2.0 and np.hypot(out[-1, 0] - 15.0, out[-1, 1]) < 0.5
    assert np.hypot(*smooth(values, "median9")[-1]) < 2.0


@pytest.mark.parametrize("k", [5, 9])
def test_batches_give_the_whole_stream_s_bytes_both_in_python_and_numpy(k):
    rng = np.random.default_rng(k)
    # fixations and jumps, so that the jump branch runs in both implementations
    centres = np.repeat(rng.uniform(-15, 15, size=(40, 2)), rng.integers(3, 30, size=40), axis=0)
    values = np.round((centres + rng.laplace(scale=2.0, size=centres.shape)) / 0.25) * 0.25
    whole, _ = causal_smooth(values, f"adaptive{k}")
    assert not np.array_equal(whole, causal_smooth(values, f"median{k}")[0])
    for cuts in ([1, 2, 17, 18, 90, len(values) - 1], list(range(1, len(values)))):
        history, parts = None, []
        for chunk in np.split(values, cuts):
            out, history = causal_smooth(chunk, f"adaptive{k}", history)
            parts.append(out)
        assert np.array_equal(np.concatenate(parts), whole)
    # on the lattice: each output coordinate is one of the last k inputs of its axis
    padded = np.concatenate([np.repeat(values[:1], k - 1, axis=0), values])
    for i, (x, y) in enumerate(whole):
        assert x in padded[i : i + k, 0] and y in padded[i : i + k, 1]


def test_the_channel_and_the_study_accept_it_and_refuse_an_even_one_by_name():
    assert SessionConfig(gaze_channel=True, gaze_smoothing="adaptive5").gaze_smoothing == "adaptive5"
    assert check_filter("adaptive9") == "adaptive9" and check_smoothing("adaptive31", max_ticks=31, median_only=True)
    refused = r"gaze_smoothing must be none, median<k> or adaptive<k> with k odd, .* got 'adaptive4'"
    with pytest.raises(ValueError, match=refused):
        SessionConfig(gaze_channel=True, gaze_smoothing="adaptive4")
    with pytest.raises(ValueError, match="3 ≤ k ≤ 31 ticks, got 'adaptive33'"):
        SessionConfig(gaze_channel=True, gaze_smoothing="adaptive33")
    with pytest.raises(ValueError, match="adaptive<k> with k odd, got 'adaptive8'"):
        check_filter("adaptive8")


def test_the_live_channel_releases_the_adaptive_median_of_its_mechanism_s_outputs():
    from streamdp.synthetic import generate

    gaze = generate(duration=6.0, rate=120.0, seed=2).recording.gaze
    # little noise (ε_w 600): the saccades are jumps, where the adaptive median leaves median5
    base = SessionConfig(gaze_channel=True, seed=1, gaze_epsilon=600.0, gaze_smoothing="none").gaze_channel_for()
    adaptive = SessionConfig(gaze_channel=True, seed=1, gaze_epsilon=600.0, gaze_smoothing="adaptive5")
    adaptive = adaptive.gaze_channel_for()
    assert base is not None and adaptive is not None
    raw = np.concatenate([r.values for r in base.update(gaze) + base.flush()])
    got = np.concatenate([r.values for r in adaptive.update(gaze) + adaptive.flush()])
    assert np.array_equal(got[:, :2], smooth(raw[:, :2], "adaptive5"))
    assert not np.array_equal(got[:, :2], smooth(raw[:, :2], "median5"))
