"""Post-processing on the device (issue #21 item 3, ``postprocess_releases``): each chunk smoothed
and made consistent after the noise and before the seal, its ledger saying so; what an app would
compute from the plain releases, and never applied twice."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.postprocess import DEFAULT_DRIFT, PostProcessor, postprocess
from streamdp.privacy import default_profile, make_mechanism, secure_generator
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.chunker import Chunk
from streamdp.stages.privatizer import POSTPROCESS_KEY, Privatizer
from streamdp.synthetic import generate


@pytest.fixture(scope="module")
def recording():
    return generate(duration=200.0, seed=5).recording


def _releases(recording, **config):
    sink = CollectingSink()
    Session.for_recording(SessionConfig(seed=3, chunk_length=32, **config), recording, sinks=[sink]).run(recording)
    return sink.releases


@pytest.mark.parametrize("mechanism", ["dcfpa", "cfpa", "lpa", "dcfpa-bozkir"])
def test_a_post_processed_session_releases_what_an_app_would_compute_from_the_plain_one(recording, mechanism):
    # ε 200: the task allocation's 26 features, each chunk with one to change (at the default ε it
    # funds one, which a chunk's CFPA level can leave inside its box with nothing to smooth yet)
    plain = _releases(recording, mechanism=mechanism, epsilon=200.0)
    done = _releases(recording, mechanism=mechanism, epsilon=200.0, postprocess_releases=True)
    assert len(done) == len(plain) >= 4
    expected = postprocess(plain)
    for rel, want, raw in zip(done, expected, plain, strict=True):
        np.testing.assert_array_equal(rel.values, want)
        assert not np.array_equal(rel.values, raw.values)  # it did something
        assert rel.ledger[POSTPROCESS_KEY] == {"drift": DEFAULT_DRIFT, "smooth": True, "consistent": True}
        assert rel.ledger["epsilon_spent"] == raw.ledger["epsilon_spent"]  # and cost nothing
        assert POSTPROCESS_KEY not in raw.ledger


def test_post_processing_twice_is_refused(recording):
    done = _releases(recording, postprocess_releases=True)
    with pytest.raises(ValueError, match=r"releases\[0\] was post-processed where it was made .*smooth it twice"):
        postprocess(done)


def _stream(mechanism: str, count: int, seed: int) -> tuple[list[Chunk], Privatizer, list]:
    """``count`` chunks of 8 steps, a post-processing privatizer, and the plain releases of the same
    chunks with the same noise."""
    b = default_profile()
    mech = make_mechanism(mechanism, epsilon=25.0, bounds=b, chunk_length=8)
    rng = np.random.default_rng(seed)
    chunks = [Chunk(np.arange(8) * 0.5 + 4 * i, rng.uniform(b.lo, b.hi, (8, 52))) for i in range(count)]
    raw = Privatizer(mech, rng=secure_generator(seed)).update(chunks)
    return chunks, Privatizer(mech, rng=secure_generator(seed), postprocess=True), raw


def test_after_a_reset_the_filter_starts_afresh():
    chunks, priv, raw = _stream("dcfpa", 3, seed=2)
    first = priv.update(chunks[:2])
    priv.reset()
    (after,) = priv.update(chunks[2:])
    pp = PostProcessor(ledger=raw[0].ledger, bounds=default_profile())
    out, state = pp(raw[0].values)
    np.testing.assert_array_equal(first[0].values, out)
    np.testing.assert_array_equal(first[1].values, pp(raw[1].values, state)[0])
    np.testing.assert_array_equal(after.values, pp(raw[2].values)[0])  # not smoothed toward chunk 1


@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        pytest.param(lambda: SessionConfig(mechanism="steil", postprocess_releases=True), ValueError,
                     r"postprocess_releases needs a mechanism whose noise the ledger states .*got 'steil'",
                     id="config-steil"),
        pytest.param(lambda: SessionConfig(postprocess_releases="yes"), TypeError,
                     r"postprocess_releases must be True or False, got 'yes'", id="config-not-a-bool"),
        pytest.param(lambda: Privatizer(make_mechanism("steil", epsilon=1.0, bounds=default_profile(),
                                                       chunk_length=8), postprocess=True),
                     ValueError, r"^postprocess: .*steil", id="privatizer-steil"),
        pytest.param(lambda: Privatizer(make_mechanism("dcfpa", epsilon=1.0, bounds=default_profile(),
                                                       chunk_length=8), postprocess=1),
                     TypeError, r"postprocess must be True or False, got 1", id="privatizer-not-a-bool"),
    ],
)  # fmt: skip
def test_post_processing_a_mechanism_without_a_stated_noise_is_refused_by_name(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_the_end_of_a_stream_forgets_the_filter():
    chunks, priv, raw = _stream("cfpa", 2, seed=4)
    priv.update(chunks[:1])
    assert priv.flush() == []  # a restart, or the end of a recording
    (after,) = priv.update(chunks[1:])
    pp = PostProcessor(ledger=raw[1].ledger, bounds=default_profile())
    np.testing.assert_array_equal(after.values, pp(raw[1].values)[0])


def test_the_evaluation_never_post_processes_inside_the_privatizer():
    from streamdp.offline.grid import grid_config

    cfg = grid_config(SessionConfig(postprocess_releases=True), "dcfpa", 25.0, 32)
    assert cfg.postprocess_releases is False  # its own post-processing runs per split, with and without


@pytest.mark.parametrize("bad", [np.zeros(3), np.zeros(1), np.zeros(52, dtype=np.float32), [0.0] * 52],
                         ids=["short", "one", "float32", "list"])  # fmt: skip
def test_a_filter_state_of_the_wrong_shape_is_refused_before_any_pass(bad):
    from streamdp.postprocess import FilterState

    b = default_profile()
    mech = make_mechanism("dcfpa", epsilon=25.0, bounds=b, chunk_length=8)
    pp = PostProcessor(ledger={**mech.describe(), "bounds_digest": b.digest()}, bounds=b)
    good = np.ones(52)
    for state in (FilterState(bad, good), FilterState(good, bad)):
        with pytest.raises(ValueError, match=r"state\.(estimate|variance) must be a float64 array of shape \(52,\)"):
            pp(np.zeros((8, 52)), state)
