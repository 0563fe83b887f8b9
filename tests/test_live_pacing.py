"""The live shells' pacing (streamdp/live_pacing.py): the relay, the Neon relay and the Capture
plugin have their session run its stages every few steps and at each chunk's last step, not with
every burst. It changes when rows are computed, never which, nor when they are released; a session
without a pacing (replay, evaluate) runs its stages with every batch."""

from __future__ import annotations

import types

import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.gaze import GazeColumns
from streamdp.live_pacing import FeedPacing
from streamdp.network.neon import NeonRelay
from streamdp.network.relay import Relay
from streamdp.pupil_wire import encode, recording_datums
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

from .pupil_standin import capture_plugin_environment

REC = generate(duration=50.0, rate=120.0, seed=4).recording


@pytest.fixture(scope="module")
def gaze() -> GazeColumns:
    return GazeColumns.from_batch(REC.gaze)


def _counted(session: Session) -> list[int]:
    """How often the session's stages take gaze (a one-element list, counted as it runs)."""
    runs, update = [0], session.pipeline.update

    def counted(*args, **kwargs):
        runs[0] += 1
        return update(*args, **kwargs)

    session.pipeline.update = counted  # type: ignore[method-assign]
    return runs


def _sample_by_sample(gaze: GazeColumns, chunk_length: int, pacing: FeedPacing | None):
    """Feed the gaze one sample per call, as a live source at its slowest: the releases' bytes,
    how often the stages ran, after how many calls a chunk was computed and still held, and
    after how many the ordered gaze was held back from the stages."""
    sink = CollectingSink()
    session = Session(SessionConfig(chunk_length=chunk_length, seed=0), sinks=[sink], pacing=pacing)
    runs = _counted(session)
    computed_ahead = held_back = 0
    for i in range(len(gaze)):
        session.update(gaze.take(slice(i, i + 1)))
        computed_ahead += len(session._hold) > 0
        order = session._order
        assert order is not None
        held_back += order.released_until < order.clock - order.window
    return [r.to_message()["values"] for r in sink.releases], runs[0], computed_ahead, held_back


@pytest.mark.parametrize("chunk_length", [2, 4, 8])
def test_the_stages_run_once_every_few_steps_and_at_each_chunks_last_step(gaze, chunk_length):
    pacing = FeedPacing()
    unpaced, runs_unpaced, _, held_unpaced = _sample_by_sample(gaze, chunk_length, None)
    releases, runs, computed_ahead, held = _sample_by_sample(gaze, chunk_length, pacing)
    steps = (float(gaze.t[-1]) - float(gaze.t[0])) / SessionConfig().step
    assert len(releases) >= 2 and releases == unpaced  # byte for byte
    assert runs <= steps / pacing.steps + steps / chunk_length + 2
    # every chunk is still computed when the gaze passes its last step, before its public time
    assert computed_ahead >= len(releases)
    # without a pacing the stages take the gaze with every call, held back by the reorder window
    # only: thousands of runs (a call that hands on no sample runs nothing)
    assert held_unpaced == 0 and held > 0
    assert runs_unpaced > 10 * runs


def test_paced_gaze_waits_in_the_decoder_and_gives_the_same_releases():
    # the relay's path: backbone messages one by one; paced, a message costs its decoding only
    frames = [encode(d) for d in recording_datums(REC) if d["topic"].startswith("gaze.")]
    out, waited = [], []
    for pacing in (None, FeedPacing()):
        sink = CollectingSink()
        session = Session(SessionConfig(chunk_length=4, seed=0), sinks=[sink], pacing=pacing)
        runs, pending = _counted(session), 0
        for message in frames:
            session.receive_frames([message])
            pending = max(pending, session.decoder.pending)
        session.flush()
        out.append(([r.to_message()["values"] for r in sink.releases], runs[0]))
        waited.append(pending)
    (unpaced, runs_unpaced), (paced, runs_paced) = out
    assert len(paced) >= 5 and paced == unpaced
    assert waited[0] == 0 and waited[1] > 0  # unpaced, nothing stays in the decoder
    assert runs_paced < runs_unpaced / 10


def test_a_paced_release_goes_out_with_the_first_gaze_at_its_public_time(gaze):
    config = SessionConfig(chunk_length=4, seed=0)
    offset = config.chunk_hold
    sink = CollectingSink()
    session = Session(config, sinks=[sink], pacing=FeedPacing())
    t = np.asarray(gaze.t)
    for i in range(len(gaze)):
        for rel in session.update(gaze.take(slice(i, i + 1))):
            due = float(rel.t[-1]) + offset
            assert t[i] == t[np.searchsorted(t, due)]  # the first sample at or after its public time
    assert len(sink.releases) >= 5


def test_the_live_shells_pace_their_sessions_and_a_recording_is_not_paced():
    relay = Relay(Session(SessionConfig(seed=0)))
    assert isinstance(relay.session.pacing, FeedPacing) and relay.session.pacing.steps == FeedPacing.STEPS
    own = FeedPacing(steps=1)
    assert Relay(Session(SessionConfig(seed=0), pacing=own)).session.pacing is own  # kept
    neon = SessionConfig(seed=0, blinks="given")
    assert isinstance(NeonRelay(Session(neon, camera="neon"), device=object()).session.pacing, FeedPacing)
    assert Session.for_recording(SessionConfig(), REC).pacing is None
    assert Session(SessionConfig()).pacing is None


def test_the_capture_plugin_paces_each_session_it_builds():
    with capture_plugin_environment() as env:
        plugin = env.module.StreamDP(types.SimpleNamespace(), seed=0, bind=None)
        first = plugin.session.pacing
        assert isinstance(first, FeedPacing) and first.steps == FeedPacing.STEPS
        assert plugin.update_settings(epsilon=2.0)
        # a new session after a settings change: its own pacing, starting afresh
        assert isinstance(plugin.session.pacing, FeedPacing) and plugin.session.pacing is not first


def test_a_restart_sends_the_next_gaze_straight_in():
    pacing = FeedPacing(steps=4)
    pacing.ran(8.2, step=0.5, next_deadline=None)
    assert pacing.run_at == 10.0 and not pacing.due(9.0)
    pacing.restart()
    assert pacing.due(-1e9)


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [({"steps": 0}, ValueError, "steps must be >= 1"), ({"steps": 2.0}, TypeError, "steps must be an int"),
     ({"steps": True}, TypeError, "steps must be an int"), ({"max_pending": 0}, ValueError, "max_pending must be")],
)  # fmt: skip
def test_a_bad_pacing_is_refused(changes, error, message):
    with pytest.raises(error, match=message):
        FeedPacing(**changes)
