"""A live chunk is computed when the ordered gaze passes its last step and held until its public
time (last step + chunk reorder window + slack): the release time is the schedule's, and the gaze that
reaches it costs no stage work."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.gaze import GazeColumns
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.hold import ReleaseHold
from streamdp.synthetic import generate

CONFIG = SessionConfig(chunk_length=4, seed=0)
OFFSET = CONFIG.chunk_hold


@pytest.fixture(scope="module")
def gaze() -> GazeColumns:
    return GazeColumns.from_batch(generate(duration=50.0, rate=120.0, seed=4).recording.gaze)


def _live(gaze: GazeColumns, batch: int):
    """Feed the gaze in batches of ``batch`` samples; per release, the newest gaze time fed when
    it came out, and per batch whether the pipeline had computed a chunk still held."""
    sink = CollectingSink()
    session = Session(CONFIG, sinks=[sink])
    published_at, computed_ahead = [], 0
    for i in range(0, len(gaze), batch):
        part = gaze.take(slice(i, i + batch))
        for _ in session.update(part):
            published_at.append(float(part.t[-1]))
        if len(session._hold):
            computed_ahead += 1
            # the public deadline stays the held chunk's while the pipeline has moved past it
            assert session.next_deadline == session._hold.next_due
            assert session.pipeline.features.next_deadline > session._hold.next_due - OFFSET
    return sink.releases, published_at, computed_ahead, session


@pytest.mark.parametrize("batch", [1, 7, 64])
def test_a_release_goes_out_with_the_first_gaze_at_its_public_time_never_before(gaze, batch):
    releases, published_at, computed_ahead, _ = _live(gaze, batch)
    # sample by sample, every chunk is computed ~50 ms of gaze before it goes out; a batch that
    # spans both moments computes and publishes at once
    assert len(releases) >= 5 and computed_ahead >= (len(releases) if batch == 1 else 0)
    t = np.asarray(gaze.t)
    for rel, at in zip(releases, published_at, strict=True):
        due = float(rel.t[-1]) + OFFSET
        assert at >= due  # never before its public time
        # and with the first batch whose gaze reaches it
        first = t[np.searchsorted(t, due)]
        assert at <= first + (batch - 1) * 0.01 + 1e-9


def test_the_output_does_not_depend_on_the_batching(gaze):
    bytes_of = [[r.to_message()["values"] for r in _live(gaze, b)[0]] for b in (1, 13, 500)]
    assert bytes_of[0] == bytes_of[1] == bytes_of[2]


def test_without_gaze_the_held_release_goes_out_at_its_public_time(gaze):
    t = np.asarray(gaze.t)
    sink = CollectingSink()
    session = Session(CONFIG, sinks=[sink])
    # gaze up to just past a step the pipeline computes a chunk at, then silence
    session.update(gaze.take(slice(0, int(np.searchsorted(t, 35.0 + t[0])))))
    while not len(session._hold):
        session.advance_to(session._hold.clock + 0.01 if np.isfinite(session._hold.clock) else float(t[0]))
    due = session.next_deadline
    assert due is not None
    assert session.advance_to(due - 1e-6) == []
    out = session.advance_to(due)
    assert len(out) == 1 and float(out[0].t[-1]) + OFFSET == pytest.approx(due)


def test_the_end_of_a_stream_publishes_what_was_computed(gaze):
    releases, _, _, session = _live(gaze, 32)
    before = list(releases)  # the sink's own list: flush publishes into it
    extra = session.flush()
    assert len(extra) >= 1  # the stream ends within the last chunk's hold: computed, not yet due
    assert len(session._hold) == 0
    assert all(not any(r is p for p in before) for r in extra)
    assert releases == before + extra


@pytest.mark.parametrize(
    ("offset", "error"),
    [pytest.param(-0.1, ValueError, id="negative"), pytest.param(float("inf"), ValueError, id="infinite"),
     pytest.param("0.1", TypeError, id="text")],
)  # fmt: skip
def test_a_bad_offset_is_refused(offset, error):
    with pytest.raises(error, match="offset must be"):
        ReleaseHold(offset)
