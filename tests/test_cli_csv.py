"""A CSV of any layout through the command line (``--csv-columns`` and its options): the same
rows and releases as the reader and the session give in-process."""

from __future__ import annotations

import json

import msgpack
import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.readers import read_gaze_csv
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate, generate_eye_camera


@pytest.fixture(scope="module")
def eye_csv(tmp_path_factory):
    """Eye-camera pupil positions (MPIIDPEye-like, ~30 Hz, diameters in px) as a headerless
    ``;``-separated file with times in ms; missing positions are empty cells."""
    rec = generate_eye_camera(duration=90.0, seed=1).recording
    g = rec.gaze
    path = tmp_path_factory.mktemp("csv") / "eye.csv"
    lines = [
        f"{t * 1000:.3f};{x!r};{y!r};{c!r};{d!r}".replace("nan", "")
        for t, x, y, c, d in zip(g.t.tolist(), g.x.tolist(), g.y.tolist(), g.confidence.tolist(),
                                 g.diameter.tolist(), strict=True)
    ]  # fmt: skip
    path.write_text("\n".join(lines) + "\n")
    return rec, path


EYE_OPTIONS = ["--csv-columns", "t=0,x=1,y=2,confidence=3,diameter=4", "--csv-delimiter", ";", "--csv-no-header",
               "--time-unit", "ms", "--signal", "eye-camera-norm"]  # fmt: skip


def test_features_of_a_headerless_semicolon_csv_with_the_eye_camera_signal(tmp_path, eye_csv):
    original, path = eye_csv
    out = tmp_path / "f.npz"
    assert main(["features", str(path), "--out", str(out), *EYE_OPTIONS]) == 0
    config = SessionConfig(signal="eye-camera-norm")
    rec = read_gaze_csv(path, columns={"t": 0, "x": 1, "y": 2, "confidence": 3, "diameter": 4}, delimiter=";",
                        header=False, time_unit="ms", diameter_unit="px")  # fmt: skip
    want = Session.for_recording(config, rec).feature_rows(rec)
    with np.load(out) as z:
        np.testing.assert_array_equal(z["t"], want.t)
        np.testing.assert_array_equal(z["values"], want.values)
        got = z["values"]
    # the file holds the synthetic gaze (times to 1 µs): the features are the original's, all 120 rows
    close = Session.for_recording(config, original).feature_rows(original)
    np.testing.assert_allclose(got, close.values, rtol=1e-6, atol=1e-5)  # durations to ~1 µs
    # the signal matters: read as scene-camera degrees the same file gives other features
    other = tmp_path / "deg.npz"
    argv = ["features", str(path), "--out", str(other), *EYE_OPTIONS[:-2], "--diameter-unit", "px"]
    assert main(argv) == 0
    with np.load(other) as z:
        assert z["values"].shape == got.shape and not np.array_equal(z["values"], got)


def test_replay_of_named_columns_in_pixels_gives_the_sessions_releases(tmp_path):
    gaze = generate(duration=80.0, rate=120.0, seed=6).recording.gaze
    path = tmp_path / "scene.csv"
    px, py = gaze.x * 1088.0, (1.0 - gaze.y) * 1080.0  # pixels, origin top-left
    rows = ["time_ns,gx,gy,conf"] + [
        f"{round(t * 1e9)},{x!r},{y!r},{c!r}".replace("nan", "")
        for t, x, y, c in zip(gaze.t.tolist(), px.tolist(), py.tolist(), gaze.confidence.tolist(), strict=True)
    ]
    path.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out"
    argv = ["replay", str(path), "--out", str(out), "--chunk-length", "32", "--seed", "5", "--jobs", "1", "-q",
            "--csv-columns", "t=time_ns,x=gx,y=gy,confidence=conf", "--time-unit", "ns", "--position-unit", "px",
            "--scene-size", "1088x1080"]  # fmt: skip
    assert main(argv) == 0
    rec = read_gaze_csv(path, columns={"t": "time_ns", "x": "gx", "y": "gy", "confidence": "conf"}, time_unit="ns",
                        position_unit="px", size=(1088.0, 1080.0))  # fmt: skip
    sink = CollectingSink()
    Session.for_recording(SessionConfig(chunk_length=32), rec, sinks=[sink], seed=5).run(rec)
    with open(out / "scene.msgpack", "rb") as fh:
        stored = list(msgpack.Unpacker(fh, raw=False))
    assert len(stored) == len(sink.releases) >= 2
    for message, release in zip(stored, sink.releases, strict=True):
        assert message["values"] == np.asarray(release.to_message()["values"]).tolist()
    summary = json.loads((out / "replay.json").read_text())
    assert summary["noise"] == "reproducible, not private" and summary["config"]["seed"] is None
