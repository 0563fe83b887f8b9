"""Native Neon recordings (issue #10): a damaged, missing or backwards stream is refused naming
its files, never read as a shorter stream or as zeros; an absent optional stream (pupil, blinks)
is skipped with a logged warning and shows in the recording. Each case is the Neon demo recording
of ../shared/data with one file damaged or left out (skipped without it or the ``neon`` extra).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from streamdp.readers import read_recording

from .conftest import shared
from .test_bad_recordings import _refused


def _neon_native(tmp: Path, damage: dict[str, Callable[[bytes], bytes | None]]) -> Path:
    """A copy of the Neon demo recording, each file in ``damage`` replaced by what its function
    makes of its bytes (None: the file is left out)."""
    pytest.importorskip("pupil_labs.neon_recording")
    src = shared("neon_demo_recording")
    dst = tmp / "neon"
    dst.mkdir()
    for f in src.iterdir():
        data = f.read_bytes()
        if f.name in damage:
            data = damage[f.name](data)
        if data is not None:
            (dst / f.name).write_bytes(data)
    return dst


def _gone(_: bytes) -> None:
    return None


def _swap_times(i: int) -> Callable[[bytes], bytes]:
    def swap(data: bytes) -> bytes:
        t = np.frombuffer(data, dtype="<i8").copy()
        t[i], t[i + 1] = t[i + 1], t[i]
        return t.tobytes()

    return swap


NEON_DAMAGED = [
    pytest.param(
        {"eye_state ps1.raw": lambda b: b[:1001]},
        ("eye_state ps1.raw",),
        r"1001 bytes, not whole 80-byte records: the file is truncated",
        id="eye-state-truncated-mid-record",
    ),
    pytest.param(
        {"eye_state ps1.raw": lambda b: b[: len(b) // 2]},
        ("eye_state ps1.raw", "eye_state ps1.time"),
        r"holds 894 records but eye_state ps1\.time holds 1788 timestamps: one of them is truncated",
        id="eye-state-truncated-at-a-record",
    ),
    pytest.param(
        {"eye_state ps1.time": lambda b: b[:1001]},
        ("eye_state ps1.time",), r"1001 bytes, not whole 8-byte timestamps", id="eye-state-times-truncated",
    ),
    pytest.param(
        {"eye_state ps1.time": _gone},
        ("eye_state ps1.raw", "eye_state ps1.time"), r"no eye_state ps1\.time beside it", id="eye-state-times-missing",
    ),
    pytest.param(
        {"eye_state.dtype": lambda b: b"[(unclosed"},
        ("eye_state.dtype",), r"not a record layout", id="eye-state-layout-corrupt",
    ),
    pytest.param(
        {"gaze_200hz.raw": lambda b: b[:-3]},
        ("gaze_200hz.raw",), r"not whole 8-byte records", id="gaze-truncated-mid-record",
    ),
    pytest.param(
        {"gaze_200hz.time": lambda b: b[: len(b) // 2]},
        ("gaze_200hz.raw", "gaze_200hz.time"),
        r"holds 1788 records but gaze_200hz\.time holds 894 timestamps",
        id="gaze-times-truncated-at-a-record",
    ),
    pytest.param({"gaze_200hz.raw": _gone, "gaze ps1.raw": _gone}, ("neon",), r"no gaze stream", id="gaze-missing"),
    pytest.param(
        {"worn_200hz.raw": lambda b: b[:100]},
        ("worn_200hz.raw",), r"holds 100 records but gaze_200hz\.time holds 1788", id="worn-truncated",
    ),
    pytest.param(
        {"worn_200hz.raw": _gone, "worn ps1.raw": _gone},
        ("neon",), r"no worn stream .* cannot be told from real gaze", id="worn-missing",
    ),
    pytest.param(
        {"blinks ps1.raw": lambda b: b[:11]},
        ("blinks ps1.raw",), r"not whole 20-byte records", id="blinks-truncated",
    ),
    pytest.param(
        {"blinks ps1.raw": lambda b: b[:20]},
        ("blinks ps1.raw", "blinks ps1.time"),
        r"holds 1 records but blinks ps1\.time holds 2",
        id="blinks-truncated-at-a-record",
    ),
    pytest.param(
        {"worn_200hz.raw": lambda b: bytes(len(b))},
        ("neon",), r"no valid gaze: of its 1788 samples 1788 have no gaze position", id="never-worn",
    ),
    pytest.param(
        {"gaze_200hz.time": _swap_times(600)},
        ("neon", "gaze times (gaze_200hz.time)", "sample 601"), r"timestamps go backwards", id="gaze-backwards",
    ),
    pytest.param(
        {"eye_state ps1.time": _swap_times(600)},
        ("neon", "eye state times (eye_state ps1.time)", "sample 601"), r"timestamps go backwards",
        id="eye-state-backwards",
    ),
]


@pytest.mark.parametrize(("damage", "names", "problem"), NEON_DAMAGED)
def test_damaged_or_missing_neon_stream_is_refused_naming_its_files(tmp_path, damage, names, problem):
    _refused(_neon_native(tmp_path, damage), names, problem)


def test_neon_recording_without_pupil_stream_is_read_with_diameters_unknown_and_says_so(tmp_path, caplog):
    folder = _neon_native(tmp_path, {"eye_state ps1.raw": _gone, "eye_state ps1.time": _gone})
    with caplog.at_level(logging.WARNING, logger="streamdp.readers.neon"):
        rec = read_recording(folder)
    assert len(rec.gaze) == 1788
    assert rec.gaze.diameter_unit == "none" and np.all(np.isnan(rec.gaze.diameter))
    assert any("no eye_state stream" in r.getMessage() and str(folder) in r.getMessage() for r in caplog.records)


def test_neon_recording_with_pupil_stream_of_no_diameter_is_read_with_diameters_unknown(tmp_path, caplog):
    def nan_diameters(data: bytes) -> bytes:
        records = np.frombuffer(data, dtype="<f4").reshape(-1, 20).copy()
        records[:, [0, 7]] = np.nan  # left and right pupil diameter
        return records.tobytes()

    folder = _neon_native(tmp_path, {"eye_state ps1.raw": nan_diameters})
    with caplog.at_level(logging.WARNING, logger="streamdp.readers.neon"):
        rec = read_recording(folder)
    assert rec.gaze.diameter_unit == "none" and np.all(np.isnan(rec.gaze.diameter))
    assert any("holds no pupil diameter" in r.getMessage() for r in caplog.records)


def test_neon_recording_without_blinks_stream_has_no_blinks(tmp_path):
    rec = read_recording(_neon_native(tmp_path, {"blinks ps1.raw": _gone, "blinks ps1.time": _gone}))
    assert rec.blinks is None and rec.gaze.diameter_unit == "mm"


