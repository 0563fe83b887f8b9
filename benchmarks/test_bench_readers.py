"""Readers at disk speed (issue #13 item 4), ratios in one run: ``.pldata`` by learnt byte layouts
against the checked path it replaces (``iter_pldata`` + ``gaze_from_datums``: one dict per datum),
CSV through pandas' C engine against the csv module, and one hour of a 200 Hz Capture-like
recording read from disk."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest

from streamdp.pupil_wire import capture_datums, gaze_from_datums
from streamdp.readers import iter_pldata, read_pldata_gaze
from streamdp.readers._csv import Table
from streamdp.synthetic import generate
from tests.conftest import SHARED_DATA

PLDATA = "pldata: checked path / layouts"
CSV = "Player gaze CSV, 186k rows: csv module / pandas C engine"


def write_capture_pldata(folder: Path, duration: float) -> Path:
    """gaze.pldata as Capture records it: world-frame bursts, late monocular gaze, pupil datums
    nested in each gaze datum."""
    rec = generate(duration=duration, rate=200.0, seed=7).recording
    pack = msgpack.Packer(use_bin_type=True).pack
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "gaze.pldata"
    with open(path, "wb") as fh:
        for _, d in capture_datums(rec, seed=1):
            if str(d["topic"]).startswith("gaze."):
                fh.write(pack(("gaze", pack(d))))
    return path


@pytest.fixture(scope="module")
def two_minutes(tmp_path_factory):
    return write_capture_pldata(tmp_path_factory.mktemp("two"), 120.0)


@pytest.fixture(scope="module")
def one_hour(tmp_path_factory):
    return write_capture_pldata(tmp_path_factory.mktemp("hour"), 3600.0)


def _checked_path(path: Path):
    return gaze_from_datums([d for _, d in iter_pldata(path)], str(path))


@pytest.mark.benchmark(group=PLDATA)
def test_pldata_checked_path(benchmark, two_minutes):
    benchmark.extra_info["role"] = "baseline"
    g = benchmark.pedantic(lambda: _checked_path(two_minutes), rounds=2, iterations=1)
    benchmark.extra_info["us_per_datum"] = benchmark.stats.stats.median / len(g) * 1e6


@pytest.mark.benchmark(group=PLDATA)
def test_pldata_layouts(benchmark, two_minutes):
    benchmark.extra_info["role"] = "candidate"
    benchmark.extra_info["target"] = "(target >= 5x, <= 4 us/datum)"
    g = benchmark.pedantic(lambda: read_pldata_gaze(two_minutes), rounds=3, iterations=1)
    benchmark.extra_info["us_per_datum"] = benchmark.stats.stats.median / len(g) * 1e6


def test_read_one_hour_of_200hz_capture_recording(benchmark, one_hour):
    benchmark.extra_info["target"] = "(1 h of 200 Hz gaze.pldata from disk)"
    g = benchmark.pedantic(lambda: read_pldata_gaze(one_hour), rounds=1, iterations=1)
    assert len(g) == 720_000


@pytest.fixture(scope="module")
def big_player_csv(tmp_path_factory):
    src = SHARED_DATA / "pupil_core_tutorial" / "gaze_positions.csv"
    if not src.exists():
        pytest.skip(f"real recording not available: {src}")
    header, *rows = src.read_text().splitlines()
    path = tmp_path_factory.mktemp("csv") / "gaze_positions.csv"
    path.write_text("\n".join([header, *(rows * 20)]) + "\n")
    return path


_GAZE_COLUMNS = ("gaze_timestamp", "confidence", "norm_pos_x", "norm_pos_y")


def _columns(path: Path, engine: str):
    table = Table.read(path, _GAZE_COLUMNS, wanted=(), engine=engine)
    return [table.column(c) for c in _GAZE_COLUMNS]


@pytest.mark.benchmark(group=CSV)
def test_csv_module(benchmark, big_player_csv):
    benchmark.extra_info["role"] = "baseline"
    cols = benchmark.pedantic(lambda: _columns(big_player_csv, "python"), rounds=2, iterations=1)
    benchmark.extra_info["rows_per_s"] = len(cols[0]) / benchmark.stats.stats.median


@pytest.mark.benchmark(group=CSV)
def test_csv_pandas_c_engine(benchmark, big_player_csv):
    pytest.importorskip("pandas")
    benchmark.extra_info["role"] = "candidate"
    benchmark.extra_info["target"] = "(target >= 8x)"
    cols = benchmark.pedantic(lambda: _columns(big_player_csv, "auto"), rounds=3, iterations=1)
    benchmark.extra_info["rows_per_s"] = len(cols[0]) / benchmark.stats.stats.median

