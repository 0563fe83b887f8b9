"""No silent wrong output from the readers (issue #10): recordings without valid gaze, with
timestamps in another unit, going backwards, or with damaged streams are refused with an
:class:`InputError` naming the file (and the row, column or stream) and the problem; an optional
stream that is absent is skipped visibly.

The damaged files are the real recordings of ../shared/data edited here where the case allows
(the tests skip without them), and files written here in the same formats otherwise. Native Neon
recordings: tests/test_bad_neon_recordings.py.
"""

from __future__ import annotations

import csv
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from streamdp import InputError
from streamdp.readers import read_recording
from streamdp.readers._checks import PLDATA_REORDER_TOLERANCE

from .conftest import shared
from .test_readers import _datum, _neon_cloud, _write_pldata, _write_recording

# ----------------------------------------------------------------------------- file editing


def _edit_csv(src: Path, dst: Path, edit: Callable[[list[str], list[list[str]]], None], limit: int = 0) -> Path:
    """Copy a CSV (its first ``limit`` data rows, all when 0) through ``edit(header, rows)``."""
    with open(src, newline="") as fh:
        header, *rows = list(csv.reader(fh))
    rows = rows[:limit] if limit else rows
    edit(header, rows)
    dst.parent.mkdir(parents=True, exist_ok=True)
    with open(dst, "w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    return dst


def _set(*names: str, value: Callable[[float], object]) -> Callable[[list[str], list[list[str]]], None]:
    """Replace every non-empty cell of the named columns by ``value`` of its number."""

    def edit(header: list[str], rows: list[list[str]]) -> None:
        for j in map(header.index, names):
            for r in rows:
                r[j] = str(value(float(r[j]))) if r[j] else r[j]

    return edit


def _swap(row_a: int, row_b: int) -> Callable[[list[str], list[list[str]]], None]:
    """Swap two data rows, numbered as the file's rows (the header is row 1)."""

    def edit(header: list[str], rows: list[list[str]]) -> None:
        rows[row_a - 2], rows[row_b - 2] = rows[row_b - 2], rows[row_a - 2]

    return edit


def _blank(*names: str) -> Callable[[list[str], list[list[str]]], None]:
    def edit(header: list[str], rows: list[list[str]]) -> None:
        for name in names:
            j = header.index(name)
            for r in rows:
                r[j] = "nan"

    return edit


def _tutorial(tmp: Path, edit: Callable, limit: int = 0) -> Path:
    return _edit_csv(shared("pupil_core_tutorial", "gaze_positions.csv"), tmp / "gaze_positions.csv", edit, limit)


def _music(tmp: Path, edit: Callable) -> Path:
    return _edit_csv(shared("pupil_core_music_discovery", "pupil_positions.csv"), tmp / "pupil_positions.csv", edit)


def _cateyes(tmp: Path, edit: Callable) -> Path:
    src = shared("cateyes_119hz", "test_data_full.csv")
    return _edit_csv(src, tmp / "angles.csv", edit, limit=3000)


def _pldata(tmp: Path, stamps: list[float], conf: float = 0.95, x: float = 0.5) -> Path:
    return _write_pldata(tmp, "gaze", [_datum(t, x, conf) for t in stamps], "gaze.3d.01.")


def _cloud(tmp: Path, file: str, edit: Callable) -> Path:
    folder = _neon_cloud(tmp / "export")
    _edit_csv(folder / file, folder / file, edit)
    return folder


def _refused(path: Path, names: tuple[str, ...], problem: str) -> InputError:
    with pytest.raises(InputError, match=problem) as caught:
        read_recording(path)
    for name in names:
        assert name in str(caught.value), f"{name!r} not named in: {caught.value}"
    return caught.value


# ----------------------------------------------------------------------------- no valid gaze

NO_VALID_GAZE = [
    pytest.param(
        lambda tmp: _tutorial(tmp, _blank("norm_pos_x", "norm_pos_y")),
        ("gaze_positions.csv",),
        r"no valid gaze: of its 9302 samples 9302 have no gaze position",
        id="player-csv-norm-pos-all-nan",
    ),
    pytest.param(
        lambda tmp: _tutorial(tmp, _set("norm_pos_x", value=lambda v: "")),
        ("gaze_positions.csv",), r"no valid gaze", id="player-csv-norm-pos-all-empty",
    ),
    pytest.param(
        lambda tmp: _tutorial(tmp, _set("confidence", value=lambda v: 0.0)),
        ("gaze_positions.csv",), r"no valid gaze: .* 9302 have confidence 0", id="player-csv-confidence-all-zero",
    ),
    pytest.param(
        lambda tmp: _pldata(tmp, [100.0 + i / 120 for i in range(200)], conf=0.0),
        ("gaze.pldata",),
        r"no valid gaze: of its 200 samples 0 have no gaze position .* 200 have confidence 0",
        id="pldata-confidence-all-zero",
    ),
    pytest.param(
        lambda tmp: _pldata(tmp, [100.0 + i / 120 for i in range(200)], x=float("nan")),
        ("gaze.pldata", "datum 0", "norm_pos[0]"),
        r"not a finite number",  # Capture writes no NaN position: a datum holding one is refused
        id="pldata-norm-pos-all-nan",
    ),
    pytest.param(
        lambda tmp: _music(tmp, _blank("norm_pos_x")),
        ("pupil_positions.csv", "eye"), r"no valid gaze", id="pupil-positions-all-nan",
    ),
    pytest.param(
        lambda tmp: _cateyes(tmp, _set("Theta", value=lambda v: "")),
        ("angles.csv",), r"no valid gaze: of its 3000 samples 3000 have no gaze position", id="angles-all-empty",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "gaze.csv", _set("worn", value=lambda v: 0)),
        ("gaze.csv",), r"no valid gaze: .* headset not worn", id="neon-cloud-never-worn",
    ),
]


@pytest.mark.parametrize(("write", "names", "problem"), NO_VALID_GAZE)
def test_recording_without_valid_gaze_is_refused(tmp_path, write, names, problem):
    _refused(write(tmp_path), names, problem)


# ----------------------------------------------------------------------------- timestamp units

WRONG_UNIT = [
    pytest.param(
        lambda tmp: _tutorial(tmp, _set("gaze_timestamp", value=lambda v: v * 1000)),
        ("gaze_positions.csv", "column gaze_timestamp"),
        r"timestamps look like milliseconds, not seconds: median step 4\.\d+ — divide by 1000",
        id="player-csv-in-ms",
    ),
    pytest.param(
        lambda tmp: _tutorial(tmp, _set("gaze_timestamp", value=lambda v: round(v * 1e9))),
        ("gaze_positions.csv", "column gaze_timestamp"),
        r"look like nanoseconds, not seconds: .* — divide by 1e9",
        id="player-csv-in-ns",
    ),
    pytest.param(
        lambda tmp: _pldata(tmp, [100_000.0 + i * 1000 / 120 for i in range(200)]),
        ("gaze.pldata", "field timestamp"),
        r"look like milliseconds, not seconds: median step 8\.33\d* — divide by 1000",
        id="pldata-in-ms",
    ),
    pytest.param(
        lambda tmp: _music(tmp, _set("pupil_timestamp", value=lambda v: v * 1000)),
        ("pupil_positions.csv", "column pupil_timestamp"),
        r"look like milliseconds, not seconds: .* — divide by 1000",
        id="pupil-positions-in-ms",
    ),
    pytest.param(
        lambda tmp: _cateyes(tmp, _set("Timestamp", value=lambda v: v * 1000)),
        ("angles.csv", "column Timestamp"),
        r"look like milliseconds, not seconds: median step 8\.4\d* — divide by 1000",
        id="angles-in-ms",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "gaze.csv", _set("timestamp [ns]", value=lambda v: repr(v * 1e-9))),
        ("gaze.csv", "column timestamp [ns]"),
        r"look like seconds, not nanoseconds: median step 0\.005\d* — multiply by 1e9",
        id="neon-cloud-in-s",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "gaze.csv", _set("timestamp [ns]", value=lambda v: round(v / 1e6))),
        ("gaze.csv", "column timestamp [ns]"),
        r"look like milliseconds, not nanoseconds: median step 5 — multiply by 1e6",
        id="neon-cloud-in-ms",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "3d_eye_states.csv", _set("timestamp [ns]", value=lambda v: round(v / 1e6))),
        ("3d_eye_states.csv", "column timestamp [ns]"),
        r"look like milliseconds, not nanoseconds",
        id="neon-cloud-eye-states-in-ms",
    ),
    pytest.param(
        lambda tmp: _tutorial(tmp, _set("gaze_timestamp", value=lambda v: v * 0.05), limit=500),
        ("gaze_positions.csv", "column gaze_timestamp"),
        r"median step 0\.0002\d* s between timestamps means \d{4} Hz, no eye tracker's sampling rate",
        id="player-csv-5-khz",
    ),
    pytest.param(
        lambda tmp: _pldata(tmp, [100.0 + i * 0.2 for i in range(50)]),
        ("gaze.pldata", "field timestamp"),
        r"median step 0\.2 s between timestamps means 5 Hz, no eye tracker's sampling rate .*: check the unit",
        id="pldata-5-hz",
    ),
]


@pytest.mark.parametrize(("write", "names", "problem"), WRONG_UNIT)
def test_timestamps_at_no_plausible_sampling_rate_are_refused_with_the_unit_they_look_like(
    tmp_path, write, names, problem
):
    _refused(write(tmp_path), names, problem)


# ----------------------------------------------------------------------------- going backwards


def _player_with_pupil_positions(tmp: Path, swap_pupil: bool) -> Path:
    """A Player export with a ``pupil_positions.csv`` beside the gaze, one of them going back."""
    t = (50.0 + np.arange(300) / 120).tolist()
    gaze = ["gaze_timestamp,confidence,norm_pos_x,norm_pos_y", *(f"{v!r},0.9,0.5,0.5" for v in t)]
    pupil = ["pupil_timestamp,eye_id,confidence,diameter,diameter_3d"]
    pupil += [f"{v!r},{e},0.9,40,3.5" for v in t for e in (0, 1)]
    if swap_pupil:
        pupil[100], pupil[102] = pupil[102], pupil[100]
    else:
        gaze[100], gaze[101] = gaze[101], gaze[100]
    (tmp / "gaze_positions.csv").write_text("\n".join(gaze) + "\n")
    (tmp / "pupil_positions.csv").write_text("\n".join(pupil) + "\n")
    return tmp


def _mapped(tmp: Path, stamps: list[float]) -> Path:
    folder = tmp / "rec"
    mapped = folder / "offline_data" / "gaze-mappings"
    mapped.mkdir(parents=True)
    _write_pldata(mapped, "mapper", [_datum(t, 0.5) for t in stamps], "gaze")
    return folder


_STEADY = [100.0 + i / 120 for i in range(300)]
# datum 150 lies 1.5 s behind datum 149: more than Capture's interleaving
_JUMP_BACK = [*_STEADY[:150], _STEADY[149] - PLDATA_REORDER_TOLERANCE - 0.5, *_STEADY[151:]]

BACKWARDS = [
    pytest.param(
        lambda tmp: _tutorial(tmp, _swap(500, 501)),
        ("gaze_positions.csv", "column gaze_timestamp", "row 501"), id="player-csv",
    ),
    pytest.param(
        lambda tmp: _player_with_pupil_positions(tmp, swap_pupil=False),
        ("gaze_positions.csv", "row 102"), id="player-csv-written",
    ),
    pytest.param(
        lambda tmp: _player_with_pupil_positions(tmp, swap_pupil=True),
        ("pupil_positions.csv", "column pupil_timestamp", "row 103"), id="player-pupil-positions-beside-gaze",
    ),
    pytest.param(
        lambda tmp: _music(tmp, _swap(1001, 1002)),
        ("pupil_positions.csv", "column pupil_timestamp", "row 1002"), id="pupil-positions-csv",
    ),
    pytest.param(
        lambda tmp: _cateyes(tmp, _swap(700, 701)),
        ("angles.csv", "column Timestamp", "row 701"), id="angles-csv",
    ),
    pytest.param(
        lambda tmp: _pldata(tmp, _JUMP_BACK),
        ("gaze.pldata", "datum 150", "more than the 3 s"), id="pldata-beyond-tolerance",
    ),
    pytest.param(
        lambda tmp: _mapped(tmp, _JUMP_BACK),
        ("mapper.pldata", "datum 150"), id="offline-mapping-beyond-tolerance",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "gaze.csv", _swap(50, 51)),
        ("gaze.csv", "column timestamp [ns]", "row 51"), id="neon-cloud-gaze",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "3d_eye_states.csv", _swap(50, 51)),
        ("3d_eye_states.csv", "row 51"), id="neon-cloud-eye-states",
    ),
]


@pytest.mark.parametrize(("write", "names"), BACKWARDS)
def test_timestamps_going_backwards_are_refused_naming_the_row(tmp_path, write, names):
    _refused(write(tmp_path), names, r"timestamps go backwards at .* does not re-sort it")


def test_pldata_gaze_interleaved_within_the_tolerance_is_sorted(tmp_path):
    """Capture writes monocular gaze up to ~90 ms behind binocular gaze already written."""
    stamps = list(_STEADY)
    for i in range(20, 280, 25):
        stamps[i], stamps[i + 10] = stamps[i + 10], stamps[i]  # 83 ms back
    g = read_recording(_pldata(tmp_path, stamps)).gaze
    np.testing.assert_array_equal(g.t, _STEADY)


# ----------------------------------------------------------------------------- side streams off the gaze's clock


def _tutorial10_blinks_in_ms(tmp: Path) -> Path:
    src = shared("pupil_core_tutorial", "tutorial10")
    shutil.copy(src / "gaze_positions.csv", tmp / "gaze_positions.csv")
    in_ms = _set("start_timestamp", "end_timestamp", value=lambda v: v * 1000)
    _edit_csv(src / "blinks.csv", tmp / "blinks.csv", in_ms)
    return tmp


def _capture_blinks_elsewhere(tmp: Path) -> Path:
    folder = _write_recording(tmp / "rec")
    _write_pldata(
        folder,
        "blinks",
        [
            {"topic": "blinks", "type": "onset", "timestamp": 5000.5, "confidence": 0.9},
            {"topic": "blinks", "type": "offset", "timestamp": 5000.7, "confidence": 0.9},
        ],
        "blinks",
    )
    return folder


OFF_CLOCK = [
    pytest.param(_tutorial10_blinks_in_ms, ("blinks.csv",), r"none of its blinks", id="player-blinks-in-ms"),
    pytest.param(_capture_blinks_elsewhere, ("blinks.pldata",), r"none of its blinks", id="capture-blinks-elsewhere"),
    pytest.param(
        lambda tmp: _cloud(
            tmp, "blinks.csv", _set("start timestamp [ns]", "end timestamp [ns]", value=lambda v: round(v - 3.6e12))
        ),
        ("blinks.csv",),
        r"none of its blinks .* another clock or another unit",
        id="neon-cloud-blinks-an-hour-off",
    ),
    pytest.param(
        lambda tmp: _cloud(tmp, "3d_eye_states.csv", _set("timestamp [ns]", value=lambda v: round(v + 3.6e12))),
        ("3d_eye_states.csv",), r"none of its pupil samples", id="neon-cloud-pupil-an-hour-off",
    ),
]


@pytest.mark.parametrize(("write", "names", "problem"), OFF_CLOCK)
def test_side_stream_that_misses_the_gaze_is_refused(tmp_path, write, names, problem):
    _refused(write(tmp_path), names, problem)
