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
