from __future__ import annotations

import msgpack
import numpy as np
import pytest

from streamdp import BudgetExhausted, GazeBatch
from streamdp.pipeline import FeaturePipeline, PrivatePipeline
from streamdp.privacy import dcfpa, default_profile, make_mechanism, secure_generator
from streamdp.privacy.accountant import PrivacyUnit
from streamdp.privacy.release import PrivateRelease, is_sealed
from streamdp.stages.schedule import ReleaseSchedule
from streamdp.synthetic import generate

REC = generate(duration=100.0, rate=100.0, seed=3).recording
B = default_profile()


def _run(batch_size=None, seed=1, mech="dcfpa", unit=None):
    m = make_mechanism(mech, epsilon=1.0, bounds=B, chunk_length=32)
    return PrivatePipeline(m, unit=unit, rng=secure_generator(seed)).run(REC, batch_size=batch_size)


def test_releases_are_whole_chunks_with_their_ledger():
    rel = _run()
    rows = FeaturePipeline().run(REC)
    first = int(np.flatnonzero(np.rint(rows.t / 0.5) % 32 == 0)[0])  # chunks are public slots of the grid
    assert len(rel) == (len(rows) - first) // 32 == 3
    for i, r in enumerate(rel):
        assert r.values.shape == (32, 52)
        np.testing.assert_array_equal(r.t, rows.t[first + 32 * i : first + 32 * (i + 1)])
        assert r.ledger["chunk_index"] == i and r.ledger["mechanism"] == "dcfpa"
        # ε is the total per chunk (all 52 features together), not per feature
        assert r.ledger["epsilon_chunk"] == 1.0 and r.ledger["epsilon_spent"] == 1.0 * (i + 1)
        # one raw sample reaches 3 chunks of 32 steps: its 8 s block + the link saccade + the
        # 30 s window (raw_gaze_reach); one second of gaze 4 (it may straddle a block boundary)
        assert r.ledger["raw_gaze_epsilon"] == 3 * 1.0 and r.ledger["raw_gaze_epsilon_second"] == 4 * 1.0
        assert r.ledger["raw_gaze_guarantee"].startswith("raw gaze: one sample changes at most 3 chunks (ε ≤ 3)")
        assert r.topic == "streamdp.features.dcfpa"


@pytest.mark.parametrize("batch_size", [1, 97, 5000])
def test_same_seed_same_releases_whatever_the_batches(batch_size):
    a, b = _run(), _run(batch_size=batch_size)
    assert len(a) == len(b)
    for x, y in zip(a, b, strict=True):
        assert np.array_equal(x.values, y.values) and np.array_equal(x.t, y.t)


def test_values_are_perturbed():
    rows = FeaturePipeline().run(REC)
    rel = _run()
    assert not np.allclose(rel[0].values, rows.values[:32])


def test_every_chunk_slot_between_start_and_stop_is_released_through_a_gap():
    a = generate(duration=50.0, rate=100.0, seed=1).recording.gaze
    b = generate(duration=50.0, rate=100.0, seed=2, start_time=float(a.t[-1]) + 60.0).recording.gaze
    m = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    pipe = PrivatePipeline(m, rng=secure_generator(0))
    rel = pipe.update(GazeBatch.concat([a, b])) + pipe.flush()
    slots = ReleaseSchedule(30.0, 0.5, 32).chunks_between(float(a.t[0]), float(b.t[-1]))
    assert len(rel) == len(slots) == 7  # the 60 s gap moves nothing
    for c, r in zip(slots, rel, strict=True):
        np.testing.assert_array_equal(r.t, np.arange(32 * c, 32 * c + 32) * 0.5)


def test_session_budget_reached_mid_session_stops_releases():
    m = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    budget = m.describe()["epsilon_chunk"] * 2.5 if "epsilon_chunk" in m.describe() else m.epsilon_chunk * 2.5
    pipe = PrivatePipeline(m, unit=PrivacyUnit("session", budget=budget), rng=secure_generator(0))
    rel = pipe.update(REC.gaze)
    assert len(rel) == 2 and pipe.privatizer.exhausted
    assert "nothing more is released" in pipe.privatizer.exhausted_message
    more = generate(duration=40.0, rate=100.0, seed=9, start_time=float(REC.gaze.t[-1]) + 0.01).recording.gaze
    with pytest.raises(BudgetExhausted):
        pipe.update(more)


def test_a_release_cannot_be_made_outside_the_privatizer():
    with pytest.raises(TypeError, match="made only by the privatizer"):
        PrivateRelease(np.zeros(32), np.zeros((32, 52)), ("a",), {}, 0.0)


def test_releases_are_read_only_and_sealed():
    r = _run()[0]
    assert is_sealed(r)
    with pytest.raises(ValueError, match="read-only"):
        r.values[0, 0] = 0.0
    with pytest.raises(TypeError):
        r.ledger["epsilon_spent"] = 0.0


def test_release_message_packs_with_msgpack_and_round_trips():
    r = _run()[0]
    msg = r.to_message()
    back = msgpack.unpackb(msgpack.packb(msg, use_bin_type=True), raw=False)
    assert back["schema_version"] == 1 and back["names"][0] == "fixation_rate"
    np.testing.assert_array_equal(np.array(back["values"]), r.values)
    assert back["ledger"]["bounds_digest"] == B.digest()
