"""The plugin inside a recording Capture (the stand-in's world loop with Capture's Recorder) and
on Capture's clock: releases recorded and read back by streamdp's own ``.pldata`` reader, and
chunks released at their public deadline by the world frames' Pupil time, gaze or not."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.readers import iter_pldata
from streamdp.stages.schedule import ReleaseSchedule
from streamdp.synthetic import generate

from .pupil_standin import capture_plugin_environment, idle_frames, world_frames

SMALL = {"chunk_length": 8, "window": 4.0, "step": 0.25, "bind": None}


@pytest.fixture
def capture():
    with capture_plugin_environment() as env:
        pub = env.world.IPCPublisher("tcp://127.0.0.1:9")  # nobody listens: recording is tested here
        try:
            yield env, pub
        finally:
            pub.close()


def test_ten_minutes_recorded_by_captures_recorder_read_back_through_streamdp(capture, tmp_path):
    env, pub = capture
    world = env.world
    rec = generate(duration=600.0, rate=120.0, seed=21).recording
    g_pool = world.make_g_pool(pub)
    settings = {"epsilon": 1.0, "chunk_length": 32, "blinks_from_capture": True, "bind": None}
    env.plugin.Plugin_List(g_pool, [(env.module.StreamDP, settings), (env.Recorder, {"rec_dir": str(tmp_path)})])
    recorder = next(p for p in g_pool.plugins if isinstance(p, env.Recorder))
    recorder.start()
    published = []
    for events in world_frames(rec, untidy=True):  # a PLData_Writer KeyError would end the loop here
        published += world.run_frame(g_pool, events).get("streamdp", [])
    recorder.stop()
    # 600 s: 1200 steps from 30 s on, 32 a chunk (35 whole), each released at its deadline; the
    # last one's (2.05 s after its last step) may come after the recording stops
    assert len(published) >= 34
    stored = list(iter_pldata(tmp_path / "streamdp.pldata"))
    assert [topic for topic, _ in stored] == ["streamdp.features.dcfpa"] * len(published)
    for (_, got), sent in zip(stored, published, strict=True):
        assert got["timestamp"] == sent["timestamp"] == sent["t"][-1]
        assert list(got["t"]) == sent["t"] and got["ledger"]["chunk_index"] == sent["ledger"]["chunk_index"]
        np.testing.assert_array_equal(np.array(got["values"]), np.array(sent["values"]))
    stamps = np.load(tmp_path / "streamdp_timestamps.npy")
    np.testing.assert_array_equal(stamps, [d["t"][-1] for d in published])
    assert np.all(np.diff(stamps) > 0)
    # the rest of the recording is written as Capture writes it, every datum with its timestamp
    gaze = list(iter_pldata(tmp_path / "gaze.pldata"))
    assert len(gaze) == len(np.load(tmp_path / "gaze_timestamps.npy")) > 60_000


def test_a_chunk_is_released_at_its_deadline_when_gaze_stops(capture):
    env, pub = capture
    world = env.world
    rec = generate(duration=20.0, rate=200.0, seed=2).recording
    g_pool = world.make_g_pool(pub)
    env.plugin.Plugin_List(g_pool, [(env.module.StreamDP, SMALL)])
    plugin = next(iter(g_pool.plugins))
    frame = None
    for events in world_frames(rec):
        world.run_frame(g_pool, events)
        frame = events["frame"]
    assert frame is not None and plugin.session.next_deadline is not None
    schedule = ReleaseSchedule(SMALL["window"], SMALL["step"], SMALL["chunk_length"])
    released_before = plugin.released
    # the wearer takes the headset off: no gaze, but Capture's world loop runs on
    seen = []
    previous = frame.timestamp
    for events in idle_frames(frame.timestamp, 6.0, first_index=frame.index):
        due = plugin.session.next_deadline
        out = world.run_frame(g_pool, events).get("streamdp", [])
        now = events["frame"].timestamp
        if out:
            (datum,) = out
            # in the first frame after the deadline, not one frame later nor earlier
            assert previous <= due < now
            slot = datum["ledger"]["chunk_index"] + schedule.first_chunk(float(rec.gaze.t[0]))
            assert datum["t"] == schedule.chunk_times(slot).tolist()  # the public grid
            seen.append(datum)
        else:
            assert due is None or now <= due
        previous = now
    # one release per chunk slot whose deadline passed in the 6 s: the schedule, not the gaze
    assert len(seen) == 3 and plugin.released == released_before + 3

