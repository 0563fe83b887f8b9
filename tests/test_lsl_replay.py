"""``streamdp replay --lsl`` (issue #22, item 1) on loopback, and the replay's one-line summary of
what the public plausibility bounds left out (issue #27, item 3).

A replay plays each recording on its own LSL streams, ``streamdp-<recording>-features`` (and
``-gaze``): a pylsl inlet resolves them, and receives exactly the releases the replay wrote to its
files, stamped with the recording's own timestamps plus the offset each stream's description
states. The recordings are short (a few seconds of play: the streams keep the recording's pace)
and named uniquely: LSL resolves across the machine, where other tests may publish at once.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path

import msgpack
import numpy as np
import pytest

pylsl = pytest.importorskip("pylsl")

from streamdp.cli import main  # noqa: E402
from streamdp.config import SessionConfig  # noqa: E402
from streamdp.offline.lsl_playback import LslReplay  # noqa: E402
from streamdp.offline.replay import replay  # noqa: E402
from streamdp.synthetic import generate  # noqa: E402

from .recording_files import write_capture_recording  # noqa: E402

TIMEOUT = 20.0
#: a chunk every 4 s of recording: a 12-14 s recording plays in a few seconds past its first chunk
SMALL = ["--chunk-length", "8", "--window", "4", "--step", "0.5"]
CONFIG = SessionConfig(chunk_length=8, window=4.0, step=0.5, seed=5)


def _recording(tmp_path: Path, seconds: float = 14.0, seed: int = 4) -> tuple[str, str]:
    name = f"rec-{uuid.uuid4().hex[:10]}"
    rec = generate(duration=seconds, rate=120.0, seed=seed).recording
    return str(write_capture_recording(rec, tmp_path / name)), name


def _messages(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return list(msgpack.Unpacker(fh, raw=False))


def _inlet(name: str, stream_type: str):
    (info,) = pylsl.resolve_bypred(f"name='{name}' and type='{stream_type}'", 1, TIMEOUT)
    inlet = pylsl.StreamInlet(info, max_buflen=60, processing_flags=0)  # no clock correction: raw stamps
    inlet.open_stream(timeout=TIMEOUT)
    offset = float(ET.fromstring(inlet.info(timeout=TIMEOUT).as_xml()).findtext("desc/streamdp/clock/offset") or "nan")
    return inlet, offset


def _pull(inlets: list, wanted: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Samples from each inlet until each has its ``wanted`` count (or TIMEOUT passes)."""
    got: list[tuple[list, list]] = [([], []) for _ in inlets]
    deadline = time.monotonic() + TIMEOUT
    while any(len(g[0]) < n for g, n in zip(got, wanted, strict=True)) and time.monotonic() < deadline:
        for inlet, (values, stamps) in zip(inlets, got, strict=True):
            chunk, ts = inlet.pull_chunk(timeout=0.1)
            values.extend(chunk)
            stamps.extend(ts)
    return [(np.array(v, dtype=np.float64), np.array(s, dtype=np.float64)) for v, s in got]


def test_replay_lsl_plays_exactly_the_written_releases_at_the_recordings_timestamps(tmp_path):
    path, name = _recording(tmp_path)
    # the same seed without LSL: the releases the played run must write and push
    (plain,) = replay([path], tmp_path / "plain", CONFIG, jobs=1, progress=False)
    expected = _messages(tmp_path / "plain" / f"{name}.msgpack")
    assert plain.chunks == len(expected) >= 2
    out = tmp_path / "played"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamdp.cli", "replay", path, "--out", str(out), *SMALL, "--seed", "5",
         "--lsl", "--lsl-wait", "60", "--publish-reproducible-noise-not-private"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        inlet, offset = _inlet(f"streamdp-{name}-features", "Features")
        ((values, stamps),) = _pull([inlet], [8 * len(expected)])
        inlet.close_stream()  # the replay's streams stay up until their inlets close them
        stdout, stderr = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert (out / f"{name}.msgpack").read_bytes() == (tmp_path / "plain" / f"{name}.msgpack").read_bytes()
    np.testing.assert_array_equal(values, np.concatenate([m["values"] for m in expected]))
    t = np.concatenate([m["t"] for m in expected])
    np.testing.assert_array_equal(stamps, t + offset)  # the recording's own timestamps, one offset
    assert np.isfinite(offset) and abs(t[-1] + offset - pylsl.local_clock()) < 60.0  # on the LSL clock
    assert f"streamdp replay: LSL streams streamdp-{name}-features are up" in stderr
    assert "waiting for 60 s for an inlet" in stderr
    assert f"→ {out}/{name}.* and LSL streamdp-{name}-features" in stdout


def test_the_gaze_channel_plays_on_its_own_stream_with_the_same_offset(tmp_path):
    path, name = _recording(tmp_path, seconds=12.0, seed=6)
    config = dataclasses.replace(CONFIG, gaze_channel=True)
    replay([path], tmp_path / "plain", config, jobs=1, progress=False)
    chunks = _messages(tmp_path / "plain" / f"{name}.msgpack")
    ticks = _messages(tmp_path / "plain" / f"{name}.gaze.msgpack")
    results: list = []
    lsl = LslReplay(wait=60.0, publish_reproducible_noise_not_private=True)
    worker = threading.Thread(
        target=lambda: results.extend(replay([path], tmp_path / "played", config, progress=False, lsl=lsl))
    )
    worker.start()
    try:
        features, offset = _inlet(f"streamdp-{name}-features", "Features")
        gaze, gaze_offset = _inlet(f"streamdp-{name}-gaze", "Gaze")
        (values, stamps), (tick_values, tick_stamps) = _pull([features, gaze], [8 * len(chunks), len(ticks)])
        features.close_stream()
        gaze.close_stream()
    finally:
        worker.join(TIMEOUT)
    assert not worker.is_alive() and len(results) == 1
    assert results[0].lsl == (f"streamdp-{name}-features", f"streamdp-{name}-gaze") and not results[0].lsl_problem
    assert gaze_offset == offset
    np.testing.assert_array_equal(values, np.concatenate([m["values"] for m in chunks]))
    np.testing.assert_array_equal(stamps, np.concatenate([m["t"] for m in chunks]) + offset)
    np.testing.assert_array_equal(tick_values, np.concatenate([m["values"] for m in ticks]))
    np.testing.assert_array_equal(tick_stamps, np.concatenate([m["t"] for m in ticks]) + offset)
    assert (tmp_path / "played" / f"{name}.gaze.msgpack").read_bytes() == (
        tmp_path / "plain" / f"{name}.gaze.msgpack"
    ).read_bytes()


def test_a_recording_no_inlet_takes_is_written_and_exits_1_naming_its_stream(tmp_path, capsys):
    path, name = _recording(tmp_path, seconds=10.0)
    out = tmp_path / "out"
    argv = ["replay", path, "--out", str(out), *SMALL, "--seed", "5", "--quiet"]
    code = main([*argv, "--lsl", "--lsl-wait", "0.3", "--publish-reproducible-noise-not-private"])
    captured = capsys.readouterr()
    assert code == 1
    assert f"no LSL inlet on streamdp-{name}-features within 0.3 s: its releases went to the files only" in captured.err
    assert (out / f"{name}.msgpack").exists() and "and LSL" not in captured.out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--lsl-wait", "5"], "--lsl-wait needs --lsl"),
        (["--publish-reproducible-noise-not-private"], "--publish-reproducible-noise-not-private needs --lsl"),
        (["--lsl", "--jobs", "2"], "--lsl and --jobs contradict each other"),
        (["--lsl", "--executor", "dask"], "--lsl and --executor dask contradict each other"),
        (["--lsl", "--lsl-wait", "0"], "argument --lsl-wait: must be a number > 0, got '0'"),
        (["--lsl", "--seed", "3"], "--lsl: seed 3: seeded noise is reproducible, not private"),
    ],
)
def test_lsl_options_that_cannot_work_are_refused_before_any_work(tmp_path, capsys, extra, message):
    path, _ = _recording(tmp_path, seconds=6.0)
    out = tmp_path / "out"
    try:
        code = main(["replay", path, "--out", str(out), *extra])
    except SystemExit as exc:  # a value argparse refuses ends the parse
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_lsl_replay_settings_are_checked():
    with pytest.raises(ValueError, match="wait must be"):
        LslReplay(wait=float("inf"))
    with pytest.raises(TypeError, match="linger"):
        LslReplay(linger="5")
    with pytest.raises(TypeError, match="publish_reproducible"):
        LslReplay(publish_reproducible_noise_not_private=1)
    with pytest.raises(ValueError, match="jobs=1"):
        replay(["x"], "out", CONFIG, jobs=2, lsl=LslReplay(publish_reproducible_noise_not_private=True))
    with pytest.raises(TypeError, match="LslReplay"):
        replay(["x"], "out", CONFIG, lsl=True)


def test_the_summary_says_what_the_plausibility_bounds_left_out(tmp_path, capsys):
    rec = generate(duration=14.0, rate=120.0, seed=4).recording
    x = rec.gaze.x.copy()
    x[[100, 200, 300]] = 1e6  # gaze a million scene widths away: no place anyone looked
    bad = dataclasses.replace(rec, gaze=dataclasses.replace(rec.gaze, x=x))
    path = write_capture_recording(bad, tmp_path / "far")
    assert main(["replay", str(path), "--out", str(tmp_path / "out"), *SMALL, "--seed", "1", "--quiet"]) == 0
    line = capsys.readouterr().out.strip()
    total = len(rec.gaze)
    assert line.endswith(
        f"; 3 of {total} gaze samples (0.18%) beyond the public plausibility bounds "
        "(3 positions beyond 10 scene widths), counted as invalid"
    ), line
    # a raw count of the gaze: said to the person who ran the command, never written
    assert "plausib" not in (tmp_path / "out" / "replay.json").read_text()
    main(["replay", str(write_capture_recording(rec, tmp_path / "near")), "--out", str(tmp_path / "o2"), *SMALL])
    assert "plausibility" not in capsys.readouterr().out


def test_ctrl_c_while_waiting_for_an_inlet_leaves_nothing_partial(tmp_path):
    import selectors
    import signal

    path, name = _recording(tmp_path, seconds=10.0)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamdp.cli", "replay", path, "--out", str(out), *SMALL, "--lsl"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        said = ""
        with selectors.DefaultSelector() as sel:  # the line that says what it waits for, then Ctrl-C
            sel.register(proc.stderr, selectors.EVENT_READ)
            deadline = time.monotonic() + TIMEOUT
            while "waiting until stopped (Ctrl-C)" not in said and time.monotonic() < deadline:
                if sel.select(timeout=0.5):
                    said += proc.stderr.readline()
        assert f"LSL streams streamdp-{name}-features are up" in said, said
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "streamdp replay: interrupted" in err and not out.exists()
    assert not list(tmp_path.glob(".out*"))  # nor its staging folder
