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
    plain = _releases(recording, mechanism=mechanism)
    done = _releases(recording, mechanism=mechanism, postprocess_releases=True)
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


def test_after_a_reset_the_filter_starts_afresh():
    b = default_profile()
    mech = make_mechanism("dcfpa", epsilon=25.0, bounds=b, chunk_length=8)
    rng = np.random.default_rng(2)
    chunks = [Chunk(np.arange(8) * 0.5 + 4 * i, rng.uniform(b.lo, b.hi, (8, 52))) for i in range(3)]
    priv = Privatizer(mech, rng=secure_generator(9), postprocess=True)
    plain = Privatizer(mech, rng=secure_generator(9))
    first = priv.update(chunks[:2])
    priv.reset()
    (after,) = priv.update(chunks[2:])
    raw = plain.update(chunks)
    pp = PostProcessor(ledger=raw[0].ledger, bounds=b)
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
