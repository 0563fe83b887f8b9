"""Public plausibility bounds on input (issue #27 item 3): positions beyond 10 scene widths,
timestamps beyond a public rate or pause, diameters beyond physiology are left out, counted, and
said with their fraction in the command's one-line summary; gaze with nothing plausible left is
refused naming the input. The same for every command that reads recorded gaze."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from streamdp.cli import main
from streamdp.gaze import GazeBatch, Recording
from streamdp.plausibility import (
    MAX_GAP_S,
    MAX_SAMPLES_PER_SECOND,
    MAX_SCENE_WIDTHS,
    Implausible,
    implausible,
    within_bounds,
)
from streamdp.readers import read_recording
from streamdp.readers.pldata_order import NotStreamable, OrderedPldataGaze
from streamdp.synthetic import generate

from .conftest import shared
from .recording_files import write_capture_recording


def _batch(t, x, y=None, diameter=None, unit="mm"):
    n = len(t)
    return GazeBatch.from_arrays(
        t=t, x=x, y=np.full(n, 0.5) if y is None else y,
        diameter=np.full(n, 3.0) if diameter is None else diameter, diameter_unit=unit,
    )  # fmt: skip


def test_positions_beyond_ten_scene_widths_are_invalid_and_nothing_else_changes():
    t = np.arange(6) * 0.01
    x = np.array([0.5, -0.4, 3.2, 0.5 + MAX_SCENE_WIDTHS + 1e-9, 1e300, -1e6])
    kept, what = within_bounds(_batch(t, x))
    assert kept.valid.tolist() == [True, True, True, False, False, False]
    assert np.isnan(kept.x[3:]).all() and kept.x[:3].tolist() == x[:3].tolist()  # Capture's off-screen gaze stays
    assert what == Implausible(6, positions=3)
    assert what.describe().startswith("3 of 6 gaze samples (50%) beyond the public plausibility bounds (3 positions")


def test_gaze_within_the_bounds_is_returned_as_it_is():
    gaze = generate(duration=5.0, seed=1).recording.gaze
    kept, what = within_bounds(gaze)
    assert kept is gaze and what == Implausible(len(gaze)) and what.describe() == ""


def test_a_second_holding_more_samples_than_any_eye_tracker_is_left_out():
    crowded = np.linspace(5.0, 5.999, MAX_SAMPLES_PER_SECOND + 1)
    t = np.concatenate([np.arange(0, 5, 0.005), crowded, 6 + np.arange(0, 5, 0.005)])
    kept, what = within_bounds(_batch(t, np.full(t.size, 0.5)))
    assert what.times == crowded.size and len(kept) == t.size - crowded.size
    assert not np.any((kept.t >= 5) & (kept.t < 6))
    # as many as the bound allows: kept
    ok = np.linspace(5.0, 5.999, MAX_SAMPLES_PER_SECOND)
    assert not implausible(ok, np.full(ok.size, 0.5), np.full(ok.size, 0.5), np.full(ok.size, 3.0), "mm")[1].any()


def test_samples_cut_off_by_a_pause_longer_than_an_hour_are_dropped_so_they_set_no_work():
    t = np.concatenate([[-1e9], np.arange(0, 60, 0.01), [60 + MAX_GAP_S + 1, 1e12]])
    kept, what = within_bounds(_batch(t, np.full(t.size, 0.5)))
    assert what.times == 3 and kept.t[0] == 0.0 and kept.t[-1] == pytest.approx(59.99)
    # a pause of an hour exactly is a pause
    t = np.array([0.0, 0.01, 0.01 + MAX_GAP_S, 0.02 + MAX_GAP_S])
    assert within_bounds(_batch(t, np.full(4, 0.5)))[1].times == 0


@pytest.mark.parametrize(
    ("unit", "diameters", "unknown"),
    [("mm", [0.2, 0.6, 3.0, 14.9, 40.0, np.inf], [0, 4, 5]), ("px", [0.0, 1.0, 80.0, 999.0, 5000.0, 1e9], [0, 4, 5])],
)
def test_diameters_beyond_physiology_become_unknown_and_the_gaze_still_counts(unit, diameters, unknown):
    t = np.arange(6) * 0.01
    d = np.array(diameters)
    if np.isinf(d).any():
        pos = implausible(t, np.full(6, 0.5), np.full(6, 0.5), d, unit)[2]
        assert pos.tolist() == [i in unknown for i in range(6)]
        return
    kept, what = within_bounds(_batch(t, np.full(6, 0.5), diameter=d, unit=unit))
    assert np.flatnonzero(np.isnan(kept.diameter)).tolist() == unknown
    assert kept.valid.all() and what == Implausible(6, diameters=len(unknown))
    assert what.describe() == f"{len(unknown)} pupil diameters (50%) beyond physiology, unknown"


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """Capture recordings of 40 s: "far" with every tenth position at 10⁶ scene widths, "nowhere"
    with every position at 10³⁰⁰."""
    folder = tmp_path_factory.mktemp("implausible")
    rec = generate(duration=40.0, rate=200.0, seed=0).recording
    x = rec.gaze.x.copy()
    x[::10] = 1e6
    write_capture_recording(replace(rec, gaze=replace(rec.gaze, x=x)), folder / "far")
    nowhere = np.full_like(rec.gaze.x, 1e300)
    write_capture_recording(replace(rec, gaze=replace(rec.gaze, x=nowhere)), folder / "nowhere")
    return folder


def test_the_reader_counts_what_it_left_out_and_refuses_gaze_with_nothing_plausible(recordings):
    got: list[Implausible] = []
    rec = read_recording(recordings / "far", report=got.append)
    assert got == [Implausible(8000, positions=800)] and int(np.count_nonzero(~rec.gaze.valid)) == 800
    with pytest.raises(Exception, match=r"nowhere: no plausible gaze left: 8000 of 8000 gaze samples \(100%\)"):
        read_recording(recordings / "nowhere")


def test_the_streamed_reader_leaves_implausible_gaze_to_the_whole_file_reader(recordings):
    with pytest.raises(NotStreamable, match="beyond the public plausibility bounds"):
        list(OrderedPldataGaze(recordings / "far" / "gaze.pldata"))


def test_every_command_that_reads_recorded_gaze_says_what_it_left_out(recordings, tmp_path, capsys):
    far = str(recordings / "far")
    said = "800 of 8000 gaze samples (10%) beyond the public plausibility bounds"
    assert main(["features", far, "--out", str(tmp_path / "f.csv")]) == 0
    summary = capsys.readouterr().err.splitlines()
    assert len(summary) == 1 and summary[0].startswith("wrote ") and said in summary[0]
    assert main(["heatmap", far, "--out", str(tmp_path / "m.npy")]) == 0
    assert said in capsys.readouterr().err.splitlines()[-1]
    assert main(["replay", far, "--out", str(tmp_path / "o"), "--chunk-length", "8"]) == 0
    (summary,) = capsys.readouterr().out.splitlines()  # the replay's one line per recording
    assert summary.startswith(f"{far}: ") and said in summary
    for argv in (["features", str(recordings / "nowhere"), "--out", str(tmp_path / "g.csv")],
                 ["heatmap", str(recordings / "nowhere"), "--out", str(tmp_path / "n.npy")]):  # fmt: skip
        assert main(argv) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"streamdp {argv[0]}: error: {recordings / 'nowhere'}: no plausible gaze left: ")
    assert not (tmp_path / "g.csv").exists() and not (tmp_path / "n.npy").exists()


def test_real_recordings_are_within_the_bounds():
    for path in (
        shared("pupil_core_tutorial"),
        shared("neon_demo_recording"),
        shared("cateyes_119hz", "test_data_full.csv"),
    ):
        got: list[Implausible] = []
        read_recording(path, report=got.append)
        assert got[0].samples == 0 and got[0].diameters == 0, (path, got[0].describe())


def test_a_recording_object_keeps_its_blinks_and_name(recordings):
    rec = read_recording(recordings / "far")
    assert isinstance(rec, Recording) and rec.name == "far" and Path(rec.gaze.source).name == "gaze.pldata"
