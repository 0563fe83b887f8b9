"""Streamed replay of ``.pldata`` recordings (issue #13 items 4-5): the gaze in time order a block
at a time, and releases byte for byte those of the recording read whole, with the same seed."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp.errors import InputError
from streamdp.gaze import GazeColumns
from streamdp.offline import replay as replay_mod
from streamdp.offline.replay import ReplayConfig, replay_one
from streamdp.offline.streaming import check_streamable, streamable
from streamdp.privacy.ledger_store import LedgerStore
from streamdp.pupil_wire import capture_datums
from streamdp.readers import iter_pldata, read_pldata_gaze
from streamdp.readers._checks import PLDATA_REORDER_TOLERANCE, check_sampling_rate
from streamdp.readers.pldata_order import NotStreamable, OrderedPldataGaze, _StepCounts
from streamdp.synthetic import generate
from tests.conftest import shared

FIELDS = ("t", "x", "y", "confidence", "diameter_mm", "diameter_px", "eye_id", "valid")


def write_capture_folder(folder: Path, duration: float, seed: int = 3) -> Path:
    """A Capture recording folder: gaze.pldata in Capture's publishing order (bursts, monocular
    gaze up to ~90 ms late), its timestamps, and blinks.pldata of onset/offset datums."""
    rec = generate(duration=duration, rate=200.0, seed=seed).recording
    folder.mkdir(parents=True)
    pack = msgpack.Packer(use_bin_type=True).pack
    stamps = []
    with open(folder / "gaze.pldata", "wb") as gaze, open(folder / "blinks.pldata", "wb") as blinks:
        for _, d in capture_datums(rec, seed=1):
            if str(d["topic"]).startswith("gaze."):
                gaze.write(pack((d["topic"], pack(d))))
                stamps.append(d["timestamp"])
            elif d["topic"] == "blinks":
                blinks.write(pack(("blinks", pack(d))))
    np.save(folder / "gaze_timestamps.npy", np.asarray(stamps))
    (folder / "info.player.json").write_text(json.dumps({"start_time_synced_s": 0.0, "start_time_system_s": 1.7e9}))
    return folder


def tile_real_pldata(src: Path, folder: Path, copies: int) -> Path:
    """The real datums of ``src`` repeated ``copies`` times, each copy moved on in time by the
    file's span (its datums otherwise untouched), as a recording folder."""
    datums = [d for _, d in iter_pldata(src)]
    t = np.array([d["timestamp"] for d in datums])
    span = float(t.max() - t.min()) + float(np.median(np.diff(np.unique(t))))
    folder.mkdir(parents=True)
    pack = msgpack.Packer(use_bin_type=True).pack
    with open(folder / "gaze.pldata", "wb") as fh:
        for k in range(copies):
            for d in datums:
                fh.write(pack(("gaze", pack({**d, "timestamp": d["timestamp"] + k * span}))))
    return folder


def ordered(path: Path, **kw: int) -> GazeColumns:
    return GazeColumns.concat(list(OrderedPldataGaze(path, **kw)))


def assert_same_columns(a: GazeColumns, b: GazeColumns) -> None:
    for f in FIELDS:
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def replay_both(path: Path, config: ReplayConfig, tmp_path: Path) -> tuple[Path, Path, list[str]]:
    """The streamed replay (which must stream) and the whole-file replay, into two folders."""
    streamed, whole = tmp_path / "streamed", tmp_path / "whole"
    streamed.mkdir()
    whole.mkdir()
    source = streamable(path)
    assert source is not None
    a = replay_mod._replay_streamed(source, str(path), "rec", config, 11, str(streamed))
    assert a is not None, "the recording was not streamed"
    b = replay_mod._replay_whole(str(path), "rec", config, 11, str(whole), None)
    assert (a.chunks, a.steps_dropped, a.skipped, a.files) == (b.chunks, b.steps_dropped, b.skipped, b.files)
    return streamed, whole, a.files


def assert_same_files(streamed: Path, whole: Path, files: list[str]) -> None:
    for name in files:
        assert filecmp.cmp(streamed / name, whole / name, shallow=False), name


@pytest.fixture(scope="module")
def ten_minutes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_capture_folder(tmp_path_factory.mktemp("ten") / "rec", 600.0)


def test_real_pldata_in_time_order_block_by_block_as_read_whole():
    path = shared("pupil_core_binocular_pldata", "binocular_only_gaze.pldata")
    whole = GazeColumns.from_batch(read_pldata_gaze(path))
    for block_bytes in (1 << 22, 20_000, 3_000):
        assert_same_columns(ordered(path, block_bytes=block_bytes), whole)


def test_real_datums_replayed_streamed_byte_equal_to_whole(tmp_path):
    src = shared("pupil_core_binocular_pldata", "binocular_only_gaze.pldata")
    folder = tile_real_pldata(src, tmp_path / "rec", copies=110)  # ~3 min of real datums
    streamed, whole, files = replay_both(folder, ReplayConfig(chunk_length=16, seed=0), tmp_path)
    assert "rec.msgpack" in files
    assert_same_files(streamed, whole, files)


def test_real_recording_shorter_than_a_chunk_skipped_alike(tmp_path):
    path = shared("pupil_core_binocular_pldata", "binocular_only_gaze.pldata")
    streamed, whole, files = replay_both(path, ReplayConfig(seed=0), tmp_path)
    assert files == []
    assert list(streamed.iterdir()) == [] and list(whole.iterdir()) == []


def test_capture_order_sorted_across_blocks(ten_minutes):
    gaze = ten_minutes / "gaze.pldata"
    assert np.any(np.diff(np.array([d["timestamp"] for _, d in iter_pldata(gaze)])) < 0)  # late gaze in the file
    parts = list(OrderedPldataGaze(gaze, block_bytes=1 << 16))
    assert len(parts) > 100  # released as read, not at the end
    assert_same_columns(GazeColumns.concat(parts), GazeColumns.from_batch(read_pldata_gaze(gaze)))


@pytest.mark.parametrize("blinks", ["given", "confidence"])
def test_generated_recording_streamed_byte_equal_to_whole(ten_minutes, tmp_path, blinks):
    config = ReplayConfig(chunk_length=32, seed=0, blinks=blinks)
    streamed, whole, files = replay_both(ten_minutes, config, tmp_path)
    assert len(files) >= 3 and (streamed / "rec.msgpack").stat().st_size > 0
    assert_same_files(streamed, whole, files)


def _with_late_datum(src: Path, folder: Path, behind: float) -> Path:
    folder.mkdir()
    data = (src / "gaze.pldata").read_bytes()
    datum = next(d for _, d in iter_pldata(src / "gaze.pldata"))
    pack = msgpack.Packer(use_bin_type=True).pack
    last = max(d["timestamp"] for _, d in iter_pldata(src / "gaze.pldata"))
    late = pack((datum["topic"], pack({**datum, "timestamp": last - behind})))
    (folder / "gaze.pldata").write_bytes(data + late)
    return folder


def test_datum_farther_back_than_the_tolerance_refused_as_when_read_whole(ten_minutes, tmp_path):
    folder = _with_late_datum(ten_minutes, tmp_path / "late", behind=PLDATA_REORDER_TOLERANCE + 0.5)
    gaze = OrderedPldataGaze(folder / "gaze.pldata")
    with pytest.raises(NotStreamable):
        for _ in gaze:
            pass
    assert gaze.late == 1
    with pytest.raises(InputError, match="timestamps go backwards"):
        read_pldata_gaze(folder / "gaze.pldata")
    out = tmp_path / "out"
    out.mkdir()
    result = replay_one(str(folder), "rec", ReplayConfig(seed=0), 0, str(out))
    whole = replay_mod._replay_whole(str(folder), "rec", ReplayConfig(seed=0), 0, str(out), None)
    assert result.skipped.startswith("cannot read:") and "timestamps go backwards" in result.skipped
    assert result.skipped == whole.skipped
    assert list(out.iterdir()) == []  # nothing of the streamed attempt is left


def test_datum_within_the_tolerance_sorted(ten_minutes, tmp_path):
    folder = _with_late_datum(ten_minutes, tmp_path / "late", behind=PLDATA_REORDER_TOLERANCE - 0.1)
    whole = GazeColumns.from_batch(read_pldata_gaze(folder / "gaze.pldata"))
    assert_same_columns(ordered(folder / "gaze.pldata"), whole)


def test_refused_recording_charges_no_durable_budget(ten_minutes, tmp_path):
    folder = _with_late_datum(ten_minutes, tmp_path / "late", behind=PLDATA_REORDER_TOLERANCE + 0.5)
    source = streamable(folder)
    assert source is not None and not check_streamable(source)
    ledgers = str(tmp_path / "ledgers")
    config = ReplayConfig(seed=0, unit="session", budget=1e6, identity="alice@test", ledger_dir=ledgers)
    out = tmp_path / "out"
    out.mkdir()
    result = replay_one(str(folder), "rec", config, 0, str(out))
    assert result.skipped.startswith("cannot read:")
    assert LedgerStore("alice@test", folder=ledgers).read().epsilon_spent == 0.0
    # the same person's valid recording, streamed, is charged
    result = replay_one(str(ten_minutes), "ok", config, 0, str(out))
    assert result.chunks > 0
    assert LedgerStore("alice@test", folder=ledgers).read().epsilon_spent > 0.0


@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e3, 0.05])
def test_sampling_rate_decided_from_counts_only_when_certain(scale):
    rng = np.random.default_rng(int(scale * 1000) % 97)
    t = np.sort(rng.uniform(0.0, 60.0, 12_000)) * scale
    counts = _StepCounts()
    for part in np.array_split(t, 7):
        counts.add(part)
    try:
        check_sampling_rate("t", t)
        plausible = True
    except InputError:
        plausible = False
    assert counts.surely_plausible() == plausible
