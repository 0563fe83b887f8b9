"""Readers at disk speed (issue #13 item 4), ratios in one run: ``.pldata`` by learnt byte layouts
against the checked path it replaces (``iter_pldata`` + ``gaze_from_datums``: one dict per datum),
CSV through a C parser (pyarrow's, else pandas') against the old per-cell csv-module path, and
one hour of a 200 Hz Capture-like recording read from disk."""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp.errors import InputError
from streamdp.pupil_wire import capture_datums, gaze_from_datums
from streamdp.readers import iter_pldata, read_pldata_gaze
from streamdp.readers._csv import Table
from streamdp.readers._csv_arrow import available
from streamdp.synthetic import generate
from tests.conftest import SHARED_DATA

PLDATA = "pldata: checked path / layouts"
CSV = "Player gaze CSV, 186k rows: old csv-module path / C parser (pyarrow, else pandas)"


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
    """The tutorial's gaze_positions.csv 20 times over (186k rows), bytes and line ends (``\\r\\n``,
    as Player writes them) as they are."""
    src = SHARED_DATA / "pupil_core_tutorial" / "gaze_positions.csv"
    if not src.exists():
        pytest.skip(f"real recording not available: {src}")
    header, *rows = src.read_bytes().splitlines(keepends=True)
    path = tmp_path_factory.mktemp("csv") / "gaze_positions.csv"
    path.write_bytes(b"".join([header, *(rows * 20)]))
    return path


_GAZE_COLUMNS = ("gaze_timestamp", "confidence", "norm_pos_x", "norm_pos_y")


def _old_csv_module_columns(path: Path) -> list[np.ndarray]:
    """The reader as it was before C parsers (``_csv.read_csv`` + ``column`` at ac36436), kept
    here frozen so that the baseline cannot get faster or slower with the code it measures."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = [r for r in reader if r]
    out = []
    for name in _GAZE_COLUMNS:
        j = header.index(name)
        values = np.empty(len(rows))
        for i, r in enumerate(rows):
            try:
                cell = r[j]
            except IndexError:
                raise InputError(f"{path}: row {i + 2} has {len(r)} fields, column {name} is field {j + 1}") from None
            if cell == "":
                values[i] = np.nan
                continue
            try:
                values[i] = float(cell)
            except ValueError:
                raise InputError(f"{path}: row {i + 2}, column {name}: {cell!r} is not a number") from None
        out.append(values)
    return out


def _columns(path: Path, engine: str) -> list[np.ndarray]:
    table = Table.read(path, _GAZE_COLUMNS, wanted=(), engine=engine)
    return [table.column(c) for c in _GAZE_COLUMNS]


def _same_bits(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return all(np.array_equal(x.view(np.uint64), y.view(np.uint64)) for x, y in zip(a, b, strict=True))


@pytest.mark.benchmark(group=CSV)
def test_csv_module(benchmark, big_player_csv):
    benchmark.extra_info["role"] = "baseline"
    cols = benchmark.pedantic(lambda: _old_csv_module_columns(big_player_csv), rounds=3, iterations=1)
    benchmark.extra_info["rows_per_s"] = len(cols[0]) / benchmark.stats.stats.median


@pytest.mark.benchmark(group=CSV)
def test_csv_c_parser(benchmark, big_player_csv):
    """What the readers use: pyarrow's parser where installed, else pandas' C engine."""
    if not (available() or importlib.util.find_spec("pandas")):
        pytest.skip("neither pyarrow nor pandas installed")
    benchmark.extra_info["role"] = "candidate"
    benchmark.extra_info["target"] = "(target >= 8x)"
    benchmark.extra_info["parser"] = "pyarrow" if available() else "pandas"
    cols = benchmark.pedantic(lambda: _columns(big_player_csv, "auto"), rounds=9, iterations=1, warmup_rounds=1)
    benchmark.extra_info["rows_per_s"] = len(cols[0]) / benchmark.stats.stats.median
    assert _same_bits(cols, _old_csv_module_columns(big_player_csv))


@pytest.mark.benchmark(group="Player gaze CSV, 186k rows: pandas C engine alone")
def test_csv_pandas_c_engine(benchmark, big_player_csv):
    pytest.importorskip("pandas")
    benchmark.extra_info["target"] = "(the parser when pyarrow is absent)"
    cols = benchmark.pedantic(lambda: _columns(big_player_csv, "pandas"), rounds=5, iterations=1, warmup_rounds=1)
    assert _same_bits(cols, _columns(big_player_csv, "python"))
