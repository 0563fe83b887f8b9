from __future__ import annotations

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.schema import FEATURE_NAMES

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
