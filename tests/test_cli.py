from __future__ import annotations

import argparse
import dataclasses
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from streamdp.cli import build_parser, main
from streamdp.cli.format import format_chunk, format_status
from streamdp.cli.options import add_config_options, config_fields, config_from, option_name
from streamdp.config import SessionConfig
from streamdp.kernels.geometry import CAMERA_FOV_DEG
from streamdp.schema import FEATURE_NAMES
from streamdp.synthetic import generate

from .conftest import shared


def test_features_of_synthetic_gaze_to_csv(tmp_path, capsys):
    out = tmp_path / "f.csv"
    assert main(["features", "--synthetic", "45", "--out", str(out)]) == 0
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    assert data.shape == (30, 53)
    assert out.read_text().splitlines()[0] == ",".join(("t", *FEATURE_NAMES))
    assert "UNSANITIZED" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.partial"))


def test_features_of_a_real_recording_to_npz(tmp_path):
    out = tmp_path / "f.npz"
    assert (
        main(
            [
                "features",
                str(shared("cateyes_119hz", "test_data_full.csv")),
                "--out",
                str(out),
                "--step",
                "1",
            ]
        )
        == 0
    )
    with np.load(out) as z:
        assert z["values"].shape[1] == 52 and z["values"].shape[0] == 268
        assert list(z["names"]) == list(FEATURE_NAMES)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["features", "/no/such/recording", "--out", "x.csv"],
            "no such file or folder",
            id="missing-recording",
        ),
        pytest.param(
            ["features", "--synthetic", "40", "--window", "-1", "--out", "x.csv"],
            "window must be finite and > 0",
            id="bad-window",
        ),
        pytest.param(
            ["features", "--synthetic", "40", "--blinks", "given", "--step", "0", "--out", "x.csv"],
            "step must be finite",
            id="bad-step",
        ),
    ],
)
def test_bad_input_exits_2_with_a_message_and_no_traceback(tmp_path, capsys, argv, message):
    assert main([*argv[:-1], str(tmp_path / argv[-1])]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.csv").exists()


def test_demo_prints_sanitized_chunks_with_their_ledger(capsys):
    assert main(["demo", "--seed", "3", "--seconds", "100"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("chunk 0: streamdp.features.dcfpa")
    assert sum(line.startswith("chunk ") for line in lines) == 2  # steps at 30..99.5 s: 140, two chunks of 64
    assert "ε/chunk=52" in out and "raw-gaze ε≤104" in out


def test_demo_prints_the_same_chunks_offline_as_over_the_network(capsys):
    # one session and one formatter: the simulated Capture's wire, the relay and the subscriber
    # change nothing in what is released or how it is shown
    assert main(["demo", "--seed", "3", "--seconds", "100"]) == 0
    networked = capsys.readouterr().out
    assert main(["demo", "--offline", "--seed", "3", "--seconds", "100"]) == 0
    assert capsys.readouterr().out == networked


def test_demo_with_a_session_budget_reports_exhaustion(capsys):
    assert main(["demo", "--seed", "1", "--chunk-length", "32", "--unit", "session", "--budget", "104"]) == 0
    captured = capsys.readouterr()
    assert sum(line.startswith("chunk ") for line in captured.out.splitlines()) == 2
    assert "nothing more is released" in captured.err


def test_demo_refuses_bad_privacy_options(capsys):
    assert main(["demo", "--epsilon", "0"]) == 2
    assert "epsilon must be finite and > 0, got 0.0" in capsys.readouterr().err
    assert main(["demo", "--chunk-length", "48"]) == 2
    assert "chunk_length must be a power of two" in capsys.readouterr().err
    assert main(["demo", "--k", "many"]) == 2
    assert "--k must be an integer or 'private'" in capsys.readouterr().err


def test_audit_command_passes_for_correct_mechanisms(capsys):
    argv = [
        "audit",
        "--mechanisms",
        "dcfpa",
        "lpa",
        "--transforms",
        "dft",
        "--sensitivities",
        "bound",
        "--runs",
        "2000",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "dcfpa" in out and "lpa" in out and "VIOLATED" not in out


def test_heatmap_command_writes_npy_and_png(tmp_path, capsys):
    out = tmp_path / "map.npy"
    rec = str(shared("cateyes_119hz", "test_data_full.csv"))
    assert (
        main(["heatmap", rec, rec, "--out", str(out), "--mechanism", "laplace", "--shape", "12x16", "--seed", "0"]) == 0
    )
    assert np.load(out).shape == (12, 16)
    assert (tmp_path / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "-DP per observer" in capsys.readouterr().err


# ---------------------------------------------------------------- options from one configuration

#: the commands that build a pipeline, and the configuration groups each offers
PIPELINE_COMMANDS = {
    "features": ("features",),
    "demo": ("privacy", "features", "live"),
    "relay": ("privacy", "features", "live"),
    "replay": ("privacy", "features"),
}


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(PIPELINE_COMMANDS))
def test_every_configuration_field_of_its_groups_is_an_option_of_each_pipeline_command(command, capsys):
    text = _help(command, capsys)
    assert {"--max-dispersion", "--diameter-unit", "--camera"} <= set(text.split())
    for group in PIPELINE_COMMANDS[command]:
        for f in config_fields(group):
            assert option_name(f.name) in text, f"{command} lacks {option_name(f.name)} ({group})"
    if "privacy" not in PIPELINE_COMMANDS[command]:
        assert "--mechanism" not in text  # features are unsanitized: no privacy option pretends otherwise


@pytest.mark.parametrize("command", sorted(PIPELINE_COMMANDS))
def test_the_options_of_a_pipeline_command_build_the_configuration(command):
    required = {"features": ["--out", "x.csv"], "replay": ["rec", "--out", "out"]}.get(command, [])
    parser = build_parser()
    assert config_from(parser.parse_args([command, *required])) == SessionConfig()
    given = ["--max-dispersion", "1.5", "--diameter-unit", "px", "--camera", "neon", "--max-fixation-duration", "2"]
    want = {"max_dispersion": 1.5, "diameter_unit": "px", "camera": "neon", "max_fixation_duration": 2.0}
    if "privacy" in PIPELINE_COMMANDS[command]:
        given += ["--k", "private", "--chunk-length", "32", "--bounds", "b.toml"]
        want |= {"k": "private", "chunk_length": 32, "bounds": "b.toml"}
    assert config_from(parser.parse_args([command, *required, *given])) == SessionConfig(**want)


def test_a_field_added_to_the_configuration_becomes_an_option_with_no_cli_edit():
    @dataclasses.dataclass(frozen=True)
    class Extended(SessionConfig):
        smoothing: float | None = dataclasses.field(
            default=None, metadata={"help": "gaze smoothing in s", "group": "features"}
        )
        merge_blinks: bool = dataclasses.field(default=False, metadata={"help": "merge", "group": "features"})

    parser = argparse.ArgumentParser()
    add_config_options(parser, ["features"], config_type=Extended)
    cfg = config_from(parser.parse_args(["--smoothing", "0.02", "--merge-blinks", "--window", "20"]))
    assert cfg == Extended(smoothing=0.02, merge_blinks=True, window=20.0)
    assert config_from(parser.parse_args([])) == Extended()


def _neon_cloud_export(folder: Path, seconds: float = 75.0) -> Path:
    """Synthetic gaze written as a Pupil Cloud export of a Neon (scene camera 1600 × 1200 px)."""
    gaze = generate(duration=seconds, rate=200.0, seed=4, fov_deg=CAMERA_FOV_DEG["neon"]).recording.gaze
    folder.mkdir()
    lines = ["section id,recording id,timestamp [ns],gaze x [px],gaze y [px],worn"]
    px, py = gaze.x * 1600.0, (1.0 - gaze.y) * 1200.0
    for t, x, y in zip(gaze.t.tolist(), px.tolist(), py.tolist(), strict=True):
        lines.append(f"s,r,{round(t * 1e9)},{x!r},{y!r},1".replace("nan", ""))  # a missing sample: empty cells
    (folder / "gaze.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_features_of_a_neon_recording_use_its_camera_unless_camera_is_given(tmp_path):
    from streamdp.readers import read_recording

    folder = _neon_cloud_export(tmp_path / "neon_export")
    rec = read_recording(folder)
    assert rec.camera == "neon"
    for extra, camera in (([], "neon"), (["--camera", "pupil_core_720p"], "pupil_core_720p")):
        out = tmp_path / f"{camera}.npz"
        assert main(["features", str(folder), "--out", str(out), *extra]) == 0
        want = SessionConfig(camera=camera).feature_pipeline().run(rec)
        with np.load(out) as z:
            np.testing.assert_array_equal(z["values"], want.values)
    with np.load(tmp_path / "neon.npz") as neon, np.load(tmp_path / "pupil_core_720p.npz") as core:
        amplitude = FEATURE_NAMES.index("saccade_amplitude_mean")
        assert not np.allclose(neon["values"][:, amplitude], core["values"][:, amplitude])


# ---------------------------------------------------------------- one formatter, extras by use


def test_subscribe_prints_a_published_chunk_and_status_as_the_in_process_formatter_does(capsys):
    from streamdp.network.sink import ReleasePublisher
    from streamdp.session import Session

    publisher = ReleasePublisher("tcp://127.0.0.1:0")
    codes: list[int] = []
    reader = threading.Thread(
        target=lambda: codes.append(main(["subscribe", publisher.endpoint, "--count", "1", "--timeout", "10"]))
    )
    reader.start()
    try:
        assert publisher.wait_for_subscribers(2, timeout=10.0)
        session = Session(SessionConfig(chunk_length=32, seed=2), sinks=[publisher])
        status = session.publish_status()
        releases = session.run(generate(duration=50.0, seed=1).recording)
        reader.join(15)
    finally:
        publisher.close()
    assert codes == [0] and len(releases) == 1
    want = [format_status(status), format_chunk(releases[0].to_message())]
    assert capsys.readouterr().out.splitlines() == "\n".join(want).splitlines()


@pytest.mark.parametrize(
    ("argv", "missing", "extra"),
    [
        (["evaluate", "--people", "2"], "sklearn", "evaluate"),
        (["heatmap", "rec", "--out", "map.npy"], "matplotlib", "plot"),
    ],
)
def test_a_command_whose_extra_is_missing_says_which_to_install(tmp_path, monkeypatch, capsys, argv, missing, extra):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed: importing it raises ImportError
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"streamdp {argv[0]} needs the optional extra: pip install 'streamdp[{extra}]'"
    assert list(tmp_path.iterdir()) == []
