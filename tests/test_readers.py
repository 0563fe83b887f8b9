"""Readers on the real recordings in ../shared/data, and on files written here in the same
formats for the cases the shared data lack (corrupt, truncated, missing, offline-mapped...)."""

from __future__ import annotations

import json
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp import InputError
from streamdp.readers import (
    iter_pldata,
    read_blinks_csv,
    read_neon_cloud_export,
    read_pupil_positions_csv,
    read_pupil_recording,
    read_recording,
)

from .conftest import shared

# ----------------------------------------------------------------------------- real recordings


def test_pldata_binocular_gaze_with_nested_pupil_data():
    rec = read_recording(shared("pupil_core_binocular_pldata", "binocular_only_gaze.pldata"))
    g = rec.gaze
    assert len(g) == 665
    assert g.diameter_unit == "mm" and 4.0 < np.nanmean(g.diameter) < 8.0
    assert np.all(g.eye_id == 2)
    ts = np.load(shared("pupil_core_binocular_pldata", "binocular_only_gaze_timestamps.npy"))
    np.testing.assert_array_equal(g.t, np.sort(ts))


def test_player_gaze_export():
    rec = read_recording(shared("pupil_core_tutorial", "gaze_positions.csv"))
    assert len(rec.gaze) == 9302
    assert 39.0 < rec.gaze.duration < 39.5
    assert rec.blinks is None


def test_player_export_folder_with_blinks():
    rec = read_recording(shared("pupil_core_tutorial", "tutorial10"))
    assert len(rec.gaze) == 2054 and len(rec.blinks.start) == 3
    np.testing.assert_allclose(rec.blinks.end - rec.blinks.start, [0.375489, 0.450587, 0.435568], atol=1e-5)


def test_pupil_positions_export_as_the_eye_camera_signal():
    g = read_pupil_positions_csv(shared("pupil_core_music_discovery", "pupil_positions.csv"))
    assert g.diameter_unit == "mm"
    assert len(np.unique(g.eye_id)) == 1
    assert np.all(np.diff(g.t) >= 0) and len(g) > 1500
    # one row per pupil datum: the 2d duplicates of each 3d row are not read
    assert np.unique(g.t).size == len(g)


def test_neon_native_recording():
    pytest.importorskip("pupil_labs.neon_recording")
    rec = read_recording(shared("neon_demo_recording"))
    g = rec.gaze
    assert len(g) == 1788 and rec.camera == "neon"
    assert g.diameter_unit == "mm" and 2.0 < np.nanmean(g.diameter) < 6.0
    assert 8.9 < g.duration < 9.0
    assert 0.0 < np.mean(g.x) < 1.0 and 0.0 < np.mean(g.y) < 1.0
    assert len(rec.blinks.start) == 2


def test_angle_csv():
    rec = read_recording(shared("cateyes_119hz", "test_data_full.csv"))
    assert len(rec.gaze) == 35406 and 297 < rec.gaze.duration < 298


@pytest.mark.parametrize(
    ("parts", "samples", "duration"),
    [
        pytest.param(("pupil_core_binocular_pldata", "binocular_only_gaze.pldata"), 665, 1.662166, id="capture-pldata"),
        pytest.param(("pupil_core_tutorial", "gaze_positions.csv"), 9302, 39.198164, id="player-export-csv"),
        pytest.param(("pupil_core_tutorial", "tutorial10"), 2054, 6.932112, id="player-export-folder"),
        pytest.param(("neon_demo_recording",), 1788, 8.963258, id="neon-native"),
        pytest.param(("cateyes_119hz", "test_data_full.csv"), 35406, 297.5616, id="angles-csv"),
    ],
)
def test_readers_report_every_sample_and_the_duration_the_file_spans(parts, samples, duration):
    """Duration is the last timestamp minus the first, in s, whatever unit the file keeps them in
    (Neon: ns); the CLI decides whether that is long enough for a window."""
    if parts[0] == "neon_demo_recording":
        pytest.importorskip("pupil_labs.neon_recording")
    g = read_recording(shared(*parts)).gaze
    assert len(g) == samples
    assert g.duration == pytest.approx(duration, abs=1e-6)
    assert np.all(np.diff(g.t) >= 0)


def test_pupil_positions_duration_is_that_of_the_eye_read():
    g = read_pupil_positions_csv(shared("pupil_core_music_discovery", "pupil_positions.csv"), eye_id=0)
    assert len(g) == 1788 and g.duration == pytest.approx(14.498529, abs=1e-6)


# ------------------------------------------------------------------ files written in the formats


def _datum(t: float, x: float, conf: float = 0.95) -> dict:
    pupil = {
        "topic": "pupil.0.3d",
        "timestamp": t,
        "confidence": conf,
        "diameter": 40.0,
        "diameter_3d": 3.5,
        "norm_pos": [0.5, 0.5],
    }
    return {
        "topic": "gaze.3d.01.",
        "timestamp": t,
        "confidence": conf,
        "norm_pos": [x, 0.5],
        "base_data": [pupil, {**pupil, "topic": "pupil.1.3d", "diameter_3d": 3.7}],
    }


def _write_pldata(folder: Path, name: str, datums: list[dict], topic: str) -> Path:
    path = folder / f"{name}.pldata"
    with open(path, "wb") as fh:
        for d in datums:
            payload = msgpack.packb(d, use_bin_type=True)
            fh.write(msgpack.packb((topic, payload), use_bin_type=True))
    np.save(folder / f"{name}_timestamps.npy", np.array([d["timestamp"] for d in datums]))
    return path


def _write_recording(folder: Path, n: int = 300) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "info.player.json").write_text(
        json.dumps(
            {
                "start_time_system_s": 1700000000.5,
                "start_time_synced_s": 100.0,
                "recording_name": "t",
            }
        )
    )
    _write_pldata(folder, "gaze", [_datum(100.0 + i / 120, 0.5 + 0.001 * i) for i in range(n)], "gaze.3d.01.")
    _write_pldata(
        folder,
        "blinks",
        [
            {"topic": "blinks", "type": "onset", "timestamp": 100.5, "confidence": 0.9},
            {"topic": "blinks", "type": "offset", "timestamp": 100.7, "confidence": 0.9},
        ],
        "blinks",
    )
    return folder


def test_capture_recording_folder(tmp_path):
    rec = read_recording(_write_recording(tmp_path / "rec"))
    assert len(rec.gaze) == 300
    assert rec.wall_clock_offset == pytest.approx(1699999900.5)
    assert rec.gaze.diameter_unit == "mm"
    np.testing.assert_allclose(rec.gaze.diameter, 3.6)
    np.testing.assert_allclose([rec.blinks.start[0], rec.blinks.end[0]], [100.5, 100.7])


def test_offline_gaze_mapping_is_used_when_the_recording_has_no_gaze(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "info.player.json").write_text(json.dumps({"start_time_system_s": 1.0, "start_time_synced_s": 0.0}))
    mapped = folder / "offline_data" / "gaze-mappings"
    mapped.mkdir(parents=True)
    _write_pldata(mapped, "mapper-abc", [_datum(5.0 + i / 100, 0.4) for i in range(50)], "gaze")
    rec = read_pupil_recording(folder)
    assert len(rec.gaze) == 50 and rec.gaze.t[0] == 5.0


def test_player_nested_ext_type_13_payloads(tmp_path):
    inner = msgpack.packb({"diameter_3d": 3.3, "diameter": 30.0, "confidence": 1.0}, use_bin_type=True)
    d = {
        "topic": "gaze.3d.0.",
        "timestamp": 1.0,
        "confidence": 1.0,
        "norm_pos": (0.5, 0.5),
        "base_data": (msgpack.ExtType(13, inner),),
    }
    path = tmp_path / "gaze.pldata"
    with open(path, "wb") as fh:
        fh.write(msgpack.packb(("gaze", msgpack.packb(d, use_bin_type=True)), use_bin_type=True))
    rec = read_recording(path)
    assert rec.gaze.diameter[0] == 3.3 and rec.gaze.eye_id[0] == 0


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        pytest.param(lambda b: b[:-7], "truncated record 9 at byte", id="truncated"),
        pytest.param(lambda b: b[:200] + b"\xc1" + b[201:], "corrupt", id="corrupt-byte"),
        pytest.param(
            lambda b: b + msgpack.packb([1, 2, 3]),
            "not a \\(topic, payload\\) pair",
            id="not-a-pair",
        ),
        pytest.param(
            lambda b: b + msgpack.packb(("gaze", msgpack.packb([1]))),
            "holds a tuple, not a datum",
            id="payload-not-dict",
        ),
    ],
)
def test_damaged_pldata_is_refused_naming_where(tmp_path, damage, message):
    path = _write_pldata(tmp_path, "gaze", [_datum(i / 100, 0.5) for i in range(10)], "gaze.3d.01.")
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(InputError, match=message):
        list(iter_pldata(path))


@pytest.mark.parametrize(
    ("datum", "message"),
    [
        pytest.param({"timestamp": 1.0, "confidence": 1.0}, "missing field 'norm_pos'", id="missing-field"),
        pytest.param(
            {"timestamp": "x", "confidence": 1.0, "norm_pos": [0.5, 0.5]},
            "'timestamp' is 'x'",
            id="wrong-type",
        ),
        pytest.param(
            {"timestamp": 1.0, "confidence": 1.0, "norm_pos": [0.5]},
            "not a pair",
            id="short-norm-pos",
        ),
        pytest.param(
            {"timestamp": 1.0, "confidence": 7.0, "norm_pos": [0.5, 0.5]},
            "outside \\[0, 1\\]",
            id="confidence-range",
        ),
    ],
)
def test_bad_gaze_datums_are_refused(tmp_path, datum, message):
    path = _write_pldata(tmp_path, "gaze", [datum], "gaze.3d.01.")
    with pytest.raises(InputError, match=message):
        read_recording(path)


def test_timestamp_file_of_another_length_is_refused(tmp_path):
    _write_recording(tmp_path / "rec")
    np.save(tmp_path / "rec" / "gaze_timestamps.npy", np.zeros(3))
    with pytest.raises(InputError, match=r"holds 3 timestamps but gaze\.pldata holds 300"):
        read_recording(tmp_path / "rec")


def test_empty_recording_is_refused(tmp_path):
    folder = tmp_path / "rec"
    folder.mkdir()
    (folder / "info.player.json").write_text(json.dumps({"start_time_system_s": 1.0, "start_time_synced_s": 0.0}))
    (folder / "gaze.pldata").write_bytes(b"")
    with pytest.raises(InputError, match=r"no offline gaze mapping|holds no gaze"):
        read_recording(folder)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("", "empty file", id="empty"),
        pytest.param(
            "gaze_timestamp,confidence,norm_pos_x\n1,1,0.5\n",
            "missing column\\(s\\) norm_pos_y",
            id="missing-column",
        ),
        pytest.param(
            "gaze_timestamp,confidence,norm_pos_x,norm_pos_y\n1,1,0.5,0.5\nabc,1,0.5,0.5\n",
            "row 3, column gaze_timestamp: 'abc'",
            id="not-a-number",
        ),
        pytest.param(
            "gaze_timestamp,confidence,norm_pos_x,norm_pos_y\n1,1,0.5,0.5\n,1,0.5,0.5\n",
            "row 3, column gaze_timestamp: missing",
            id="missing-timestamp",
        ),
        pytest.param(
            "gaze_timestamp,confidence,norm_pos_x,norm_pos_y\n1,1.5,0.5,0.5\n",
            "row 2, column confidence",
            id="confidence-out-of-range",
        ),
        pytest.param("gaze_timestamp,confidence,norm_pos_x,norm_pos_y\n", "no gaze rows", id="header-only"),
        pytest.param(
            "gaze_timestamp,confidence,norm_pos_x,norm_pos_y\n1,1,0.5\n",
            "row 2 has 3 fields",
            id="short-row",
        ),
    ],
)
def test_bad_player_csv_is_refused_naming_row_and_column(tmp_path, text, message):
    path = tmp_path / "gaze_positions.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        read_recording(tmp_path)


def test_blinks_csv_ending_before_it_starts_is_refused(tmp_path):
    p = tmp_path / "blinks.csv"
    p.write_text("start_timestamp,end_timestamp\n5.0,4.0\n")
    with pytest.raises(InputError, match=r"ends .* before it starts"):
        read_blinks_csv(p)


def _neon_cloud(folder: Path, n: int = 400) -> Path:
    folder.mkdir()
    t0 = 1_700_000_000_000_000_000
    lines = [
        "section id,recording id,timestamp [ns],gaze x [px],gaze y [px],worn,"
        "fixation id,blink id,azimuth [deg],elevation [deg]"
    ]
    for i in range(n):
        worn = 0 if 100 <= i < 110 else 1
        lines.append(f"s,r,{t0 + i * 5_000_000},{800 + i % 7},{600 - i % 5},{worn},,,0,0")
    (folder / "gaze.csv").write_text("\n".join(lines) + "\n")
    eye = ["section id,recording id,timestamp [ns],pupil diameter left [mm],pupil diameter right [mm]"]
    eye += [f"s,r,{t0 + i * 5_000_000},3.0,3.4" for i in range(n)]
    (folder / "3d_eye_states.csv").write_text("\n".join(eye) + "\n")
    (folder / "blinks.csv").write_text(
        "section id,recording id,blink id,start timestamp [ns],end timestamp [ns],duration [ms]\n"
        f"s,r,1,{t0 + 500_000_000},{t0 + 650_000_000},150\n"
    )
    return folder


def test_neon_cloud_export(tmp_path):
    rec = read_recording(_neon_cloud(tmp_path / "export"))
    g = rec.gaze
    assert len(g) == 400 and rec.camera == "neon"
    np.testing.assert_allclose(g.t[1] - g.t[0], 0.005, atol=1e-6)
    np.testing.assert_allclose(g.x[0], 800 / 1600)
    np.testing.assert_allclose(g.y[0], 1 - 600 / 1200)  # origin moved to the bottom left
    assert g.valid.sum() == 390  # not worn: invalid
    np.testing.assert_allclose(np.nanmean(g.diameter), 3.2)
    np.testing.assert_allclose(rec.blinks.end - rec.blinks.start, [0.15], atol=1e-6)


def test_neon_cloud_export_missing_column(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "gaze.csv").write_text("timestamp [ns],gaze x [px]\n1,2\n")
    with pytest.raises(InputError, match="missing column\\(s\\) gaze y \\[px\\]"):
        read_neon_cloud_export(folder)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        pytest.param("nothing", None, "no such file", id="missing-path"),
        pytest.param("data.txt", "hello", "unknown file type", id="unknown-suffix"),
        pytest.param("data.csv", "a,b\n1,2\n", "matches no format", id="unknown-csv"),
    ],
)
def test_unknown_inputs_are_refused(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=message):
        read_recording(path)


def test_folder_that_is_no_recording(tmp_path):
    with pytest.raises(InputError, match="not a recording streamdp reads"):
        read_recording(tmp_path)


def test_blink_pairing_rules():
    from streamdp.pupil_wire import BlinkPairing

    p = BlinkPairing()
    assert p.add({"type": "offset", "timestamp": 1.0}, "d") is None  # offset without onset: ignored
    assert p.add({"type": "onset", "timestamp": 2.0}, "d") is None
    assert p.add({"type": "onset", "timestamp": 2.5}, "d") is None  # a repeated onset is ignored
    assert p.add({"type": "offset", "timestamp": 2.8}, "d") is None  # held: more offsets may follow
    assert p.flush() == (2.0, 2.8)
    assert p.add({"start_timestamp": 5.0, "end_timestamp": 5.3}, "d") == (5.0, 5.3)  # Player's whole blink
    with pytest.raises(InputError, match="d: field 'timestamp' is 'x', not a number"):
        p.add({"type": "onset", "timestamp": "x"}, "d")
    with pytest.raises(InputError, match="not a blink datum"):
        p.add([1, 2], "d")
