from __future__ import annotations

import msgpack
import numpy as np
import pytest

from streamdp import BudgetExhausted, GazeBatch
from streamdp.pipeline import FeaturePipeline, PrivatePipeline
from streamdp.privacy import dcfpa, default_profile, make_mechanism, secure_generator
from streamdp.privacy.accountant import PrivacyUnit
from streamdp.privacy.release import PrivateRelease, is_sealed
from streamdp.synthetic import generate

REC = generate(duration=100.0, rate=100.0, seed=3).recording
B = default_profile()


def _run(batch_size=None, seed=1, mech="dcfpa", unit=None):
    m = make_mechanism(mech, epsilon=1.0, bounds=B, chunk_length=32)
    return PrivatePipeline(m, unit=unit, rng=secure_generator(seed)).run(REC, batch_size=batch_size)


def test_releases_are_whole_chunks_with_their_ledger():
    rel = _run()
    rows = FeaturePipeline().run(REC)
    assert len(rel) == len(rows) // 32 == 4
    for i, r in enumerate(rel):
        assert r.values.shape == (32, 52)
        np.testing.assert_array_equal(r.t, rows.t[32 * i : 32 * (i + 1)])
        assert r.ledger["chunk_index"] == i and r.ledger["mechanism"] == "dcfpa"
        assert r.ledger["epsilon_chunk"] == 52.0 and r.ledger["epsilon_spent"] == 52.0 * (i + 1)
        assert r.ledger["raw_gaze_epsilon"] == 3 * 52.0
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


def test_no_partial_chunk_is_released_across_a_gap_or_at_the_end():
    a = generate(duration=50.0, rate=100.0, seed=1).recording.gaze  # 40 steps: one chunk + 8
    b = generate(duration=50.0, rate=100.0, seed=2, start_time=float(a.t[-1]) + 60.0).recording.gaze
    m = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    pipe = PrivatePipeline(m, rng=secure_generator(0))
    rel = pipe.update(GazeBatch.concat([a, b])) + pipe.flush()
    assert len(rel) == 2
    assert rel[0].t[-1] < a.t[-1] < b.t[0] < rel[1].t[0]
    assert all(np.allclose(np.diff(r.t), 0.5) for r in rel)
    assert pipe.chunker.dropped_steps == 16


def test_session_budget_reached_mid_session_stops_releases():
    m = dcfpa(epsilon=1.0, bounds=B, chunk_length=32)
    pipe = PrivatePipeline(m, unit=PrivacyUnit("session", budget=52.0 * 2.5), rng=secure_generator(0))
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
