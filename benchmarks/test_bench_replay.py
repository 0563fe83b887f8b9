"""Replay speed (issue: one hour of 200 Hz gaze to sanitized DCFPA chunks ≤ 1.5 s on one core;
16 recordings on 2 local processes against 1, ratio in one run)."""

from __future__ import annotations

import pytest

from streamdp.offline import replay as replay_mod
from streamdp.offline.replay import ReplayConfig, replay, replay_one
from streamdp.readers import read_recording
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.schedule import ReleaseSchedule
from streamdp.synthetic import generate
from tests.recording_files import write_capture_recording

GROUP = "replay of 16 recordings: 1 process / 2 processes"


def test_replay_one_hour_200hz_to_sanitized_chunks(benchmark, hour_of_gaze, tmp_path):
    """The session core (pipeline, DCFPA, accountant) and the relay's messages, from the recording
    in memory."""
    config = ReplayConfig(chunk_length=64, seed=0)
    benchmark.extra_info["target"] = "(target <= 1.5 s)"

    def run():
        sink = CollectingSink()
        Session.for_recording(config, hour_of_gaze, sinks=[sink], seed=0).run(hour_of_gaze)
        (tmp_path / "hour.msgpack").write_bytes(replay_mod.release_messages(sink.releases))
        return sink.releases

    releases = benchmark.pedantic(run, rounds=3, iterations=1)
    # every chunk slot of the public grid between the first sample and the last
    slots = ReleaseSchedule(30.0, 0.5, 64).chunks_between(float(hour_of_gaze.gaze.t[0]), float(hour_of_gaze.gaze.t[-1]))
    assert len(releases) == len(slots)


@pytest.fixture(scope="module")
def ten_minutes_on_disk(tmp_path_factory):
    rec = generate(duration=600.0, rate=200.0, seed=42).recording
    return str(write_capture_recording(rec, tmp_path_factory.mktemp("ten") / "rec"))


STREAMED = "10 min Capture recording end to end: read whole / streamed"


@pytest.mark.parametrize(("streamed", "role"), [(False, "baseline"), (True, "candidate")])
def test_replay_ten_minutes_from_a_capture_recording_end_to_end(
    benchmark, ten_minutes_on_disk, tmp_path, streamed, role
):
    """Reading Capture's gaze.pldata (120,000 msgpack datums) included; an hour is six times this.
    Streamed (``replay_one``: blocks, 1 s reorder buffer, bounded memory) against the recording
    read whole into memory, which it replaces for ``.pldata``."""
    benchmark.group = STREAMED
    benchmark.extra_info["role"] = role
    if streamed:
        benchmark.extra_info["target"] = "(10 min of 200 Hz, reading .pldata included; no slower than whole)"
    counter = iter(range(100))
    config = ReplayConfig(chunk_length=64, seed=0)

    def run():
        out = tmp_path / f"out{next(counter)}"
        out.mkdir()
        if streamed:
            return replay_one(ten_minutes_on_disk, "ten", config, 0, str(out))
        return replay_mod._replay_whole(ten_minutes_on_disk, "ten", config, 0, str(out), None)

    result = benchmark.pedantic(run, rounds=2, iterations=1)
    assert result.chunks == 1140 // 64


def test_read_ten_minutes_capture_recording(benchmark, ten_minutes_on_disk):
    benchmark.extra_info["target"] = "(reader alone: 120,000 datums)"
    rec = benchmark.pedantic(lambda: read_recording(ten_minutes_on_disk), rounds=1, iterations=1)
    assert len(rec.gaze) == 120_000


@pytest.fixture(scope="module")
def sixteen(tmp_path_factory):
    base = tmp_path_factory.mktemp("sixteen")
    return [
        str(write_capture_recording(generate(duration=120.0, rate=200.0, seed=s).recording, base / f"r{s}"))
        for s in range(16)
    ]


@pytest.mark.parametrize(("jobs", "role"), [(1, "baseline"), (2, "candidate")])
def test_replay_16_recordings(benchmark, sixteen, tmp_path, jobs, role):
    benchmark.group = GROUP
    benchmark.extra_info["role"] = role
    if role == "candidate":
        benchmark.extra_info["target"] = "(speed-up of 2 processes over 1 on 2 cores)"
    counter = iter(range(100))

    def run():
        return replay(
            sixteen, tmp_path / f"out{next(counter)}", ReplayConfig(chunk_length=32, seed=0), jobs=jobs, progress=False
        )

    results = benchmark.pedantic(run, rounds=2, iterations=1)
    assert sum(r.chunks for r in results) == 16 * 5
