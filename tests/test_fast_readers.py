"""The fast readers (issue #13 item 4) give what the checked path gives, to the bit, and refuse
what it refuses with the same words: ``.pldata`` read by learnt byte layouts against
``iter_pldata`` + ``gaze_from_datums`` (the reading they replace), CSVs through pandas' C engine
against the csv module. Also the generic CSV reader (#9 item 4)."""

from __future__ import annotations

import math
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp import InputError
from streamdp.gaze import GazeBatch
from streamdp.pupil_wire import capture_datums, gaze_from_datums
from streamdp.readers import iter_pldata, iter_pldata_gaze_columns, read_gaze_csv, read_pldata_gaze
from streamdp.readers._csv import Table
from streamdp.synthetic import generate

from .conftest import shared
from .test_readers import _datum

pytest.importorskip("pandas")

# ----------------------------------------------------------------------------- .pldata


def _checked_path(path: Path) -> GazeBatch:
    datums = [d for t, d in iter_pldata(path) if t.startswith("gaze") or str(d.get("topic", "")).startswith("gaze")]
    return gaze_from_datums(datums, str(path))


def _assert_same_bits(a: GazeBatch, b: GazeBatch) -> None:
    for f in ("t", "x", "y", "confidence", "diameter"):
        assert getattr(a, f).tobytes() == getattr(b, f).tobytes(), f
    np.testing.assert_array_equal(a.eye_id, b.eye_id)
    np.testing.assert_array_equal(a.valid, b.valid)
    assert (a.diameter_unit, a.source) == (b.diameter_unit, b.source)


def _write(path: Path, records: list[tuple[str, object]]) -> Path:
    pack = msgpack.Packer(use_bin_type=True).pack
    with open(path, "wb") as fh:
        for topic, d in records:
            fh.write(pack((topic, pack(d))))
    return path


@pytest.mark.parametrize("block_bytes", [700, 10_000, 1 << 22])
def test_real_capture_pldata_reads_to_the_bit_as_the_checked_path(block_bytes):
    path = shared("pupil_core_binocular_pldata", "binocular_only_gaze.pldata")
    _assert_same_bits(read_pldata_gaze(path, block_bytes=block_bytes), _checked_path(path))


@pytest.mark.parametrize("unit", ["mm", "px"])
def test_capture_like_traffic_reads_to_the_bit(tmp_path, unit):
    """Bursts, late monocular gaze, blink and pupil datums between gaze, 2d and 3d detectors."""
    rec = generate(duration=20.0, rate=200.0, seed=3).recording
    if unit == "px":
        g = rec.gaze
        rec = type(rec)(
            gaze=GazeBatch.from_arrays(t=g.t, x=g.x, y=g.y, confidence=g.confidence, diameter=g.diameter * 10,
                                       valid=g.valid, diameter_unit="px"),
            blinks=rec.blinks,
            name="px",
        )
    records = [(str(d["topic"]).split(".")[0] if d["topic"] != "blinks" else "blinks", d)
               for _, d in capture_datums(rec, seed=1)]
    path = _write(tmp_path / "gaze.pldata", records)
    expected = _checked_path(path)
    for block_bytes in (3000, 1 << 20):
        got = read_pldata_gaze(path, block_bytes=block_bytes)
        _assert_same_bits(got, expected)
    assert got.diameter_unit == unit and len(got) > 3000


def test_player_nested_serialized_dicts_and_odd_values_read_as_the_checked_path(tmp_path):
    inner = msgpack.packb({"diameter_3d": 3.3, "diameter": 30.0}, use_bin_type=True)
    datums = []
    for i in range(40):
        d = _datum(10.0 + i / 100, 0.5)
        if i % 3 == 0:
            d["base_data"] = (msgpack.ExtType(13, inner),)
        if i % 7 == 0:
            d["timestamp"] = 10 + i  # ints: read, as the checked path reads them
            if i % 3:
                d["base_data"][0]["diameter_3d"] = 2
        if i % 5 == 0:
            d["confidence"] = 0.0
        if i % 11 == 0:
            d["base_data"] = [None, {"diameter": -1.0, "diameter_3d": math.inf}]
        datums.append(d)
    records = [("gaze", d) for d in datums] + [("notify", {"subject": "x"})]
    path = _write(tmp_path / "gaze.pldata", records)
    blocks = list(iter_pldata_gaze_columns(path, block_bytes=500))
    cols = [b.columns for b in blocks]
    t = np.concatenate([c.t for c in cols])
    mm = np.concatenate([c.diameter_mm for c in cols])
    ref = _checked_path(path)
    np.testing.assert_array_equal(np.sort(t), ref.t)
    assert mm[np.argsort(t, kind="stable")].tobytes() == ref.diameter.tobytes()


def _message(fn) -> str:
    with pytest.raises(InputError) as info:
        fn()
    return str(info.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("timestamp", math.nan), ("confidence", 1.5), ("norm_pos", [0.5, math.inf]), ("timestamp", "x")],
)
def test_a_bad_datum_among_good_ones_is_refused_with_the_checked_path_message(tmp_path, field, value):
    datums = [_datum(1.0 + i / 100, 0.5) for i in range(300)]
    datums[217][field] = value
    path = _write(tmp_path / "gaze.pldata", [("gaze", d) for d in datums])
    want = _message(lambda: _checked_path(path))
    assert "datum 217" in want
    for block_bytes in (2000, 1 << 22):
        assert _message(lambda bb=block_bytes: read_pldata_gaze(path, block_bytes=bb)) == want


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:-7], id="truncated"),
        pytest.param(lambda b: b[: len(b) // 2] + b"\xc1" + b[len(b) // 2 + 1 :], id="corrupt-byte"),
        pytest.param(lambda b: b + msgpack.packb(("gaze", msgpack.packb([1]))), id="payload-not-dict"),
        pytest.param(lambda b: b + msgpack.packb([1, 2, 3]), id="not-a-pair"),
        pytest.param(lambda b: b + msgpack.packb(("gaze", b"\x81\xa1\xff\x01")), id="bad-utf8-payload"),
        pytest.param(lambda b: b + msgpack.packb((b"gaze", msgpack.packb({}))), id="topic-as-bin"),
    ],
)
def test_damaged_records_are_refused_as_the_checked_path_words_it(tmp_path, damage):
    datums = [_datum(1.0 + i / 100, 0.5) for i in range(100)]
    datums[3]["timestamp"] = math.nan  # a bad datum before the damage: the damage is reported
    path = _write(tmp_path / "gaze.pldata", [("gaze", d) for d in datums])
    path.write_bytes(damage(path.read_bytes()))
    want = _message(lambda: list(iter_pldata(path)))
    for block_bytes in (1500, 1 << 22):
        assert _message(lambda bb=block_bytes: read_pldata_gaze(path, block_bytes=bb)) == want


def test_columns_come_a_block_at_a_time(tmp_path):
    path = _write(tmp_path / "gaze.pldata", [("gaze", _datum(1.0 + i / 100, 0.5)) for i in range(2000)])
    blocks = list(iter_pldata_gaze_columns(path, block_bytes=64 * 1024))
    assert len(blocks) > 5 and sum(len(b.columns) for b in blocks) == 2000
    assert [b.first for b in blocks] == list(np.cumsum([0] + [len(b.columns) for b in blocks[:-1]]))
    assert max(len(b.columns) for b in blocks) < 300


# ----------------------------------------------------------------------------- CSV


def _both_engines(path: Path, required: tuple[str, ...], names: tuple[str, ...], **kw):
    out = []
    for engine in ("auto", "python"):
        try:
            table = Table.read(path, required, engine=engine, **kw)
            out.append([table.column(n).tobytes() for n in names])
        except InputError as exc:
            out.append(str(exc))
    return out


@pytest.mark.parametrize(
    ("parts", "names"),
    [
        (("pupil_core_tutorial", "gaze_positions.csv"), ("gaze_timestamp", "confidence", "norm_pos_x", "norm_pos_y")),
        (("pupil_core_music_discovery", "pupil_positions.csv"), ("pupil_timestamp", "eye_id", "diameter_3d")),
        (("cateyes_119hz", "test_data_full.csv"), ("Timestamp", "Theta", "Phi")),
    ],
)
def test_real_csv_columns_are_the_same_bits_with_pandas_and_the_csv_module(parts, names):
    fast, slow = _both_engines(shared(*parts), names, names)
    assert isinstance(fast, list) and fast == slow


HEADER = "gaze_timestamp,confidence,norm_pos_x,norm_pos_y\n"


@pytest.mark.parametrize(
    "body",
    [
        pytest.param("1,1,0.5,0.5\n2,1,0.5\n", id="short-row"),
        pytest.param("1,1,0.5,0.5\n2,1,0.5,0.5,9\n", id="long-row"),
        pytest.param("1,1,0.5,0.5\n \n2,1,0.5,0.5\n", id="whitespace-line"),
        pytest.param("1,1,0.5,0.5\n\n2,1,NA,0.5\n", id="NA-after-blank-line"),
        pytest.param('1,1,0.5,0.5\n"2",1,"0,5",0.5\n', id="quotes"),
        pytest.param("1,1,nan,0.5\n2,1,inf,0.5\n3,1,1_0,0.5\n", id="python-floats"),
        pytest.param("1,1,True,0.5\n", id="boolean"),
        pytest.param("1,1,0.5,0.5\r\n2,1,x,0.5\r\n", id="crlf"),
        pytest.param("1,1,0.5,0.5\r2,1,0.5,0.5\n", id="lone-cr"),
    ],
)
def test_odd_csv_reads_or_fails_the_same_with_pandas_and_the_csv_module(tmp_path, body):
    path = tmp_path / "gaze_positions.csv"
    path.write_text(HEADER + body, newline="")
    names = ("gaze_timestamp", "confidence", "norm_pos_x", "norm_pos_y")
    fast, slow = _both_engines(path, names, names)
    assert fast == slow


# ----------------------------------------------------------------------------- generic CSV


def _lines(n: int, fmt) -> str:
    return "".join(fmt(i) for i in range(n))


def test_headerless_semicolon_file_in_ms(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text(_lines(200, lambda i: f"{1000 + i * 4};{0.3 + i / 1000};0.6;0.8;3.1\n"))
    rec = read_gaze_csv(p, delimiter=";", header=False, time_unit="ms", diameter_unit="mm",
                        columns={"t": 0, "x": 1, "y": 2, "confidence": 3, "diameter": 4})
    g = rec.gaze
    assert len(g) == 200 and g.t[0] == 1.0 and g.t[1] == pytest.approx(1.004)
    assert g.diameter_unit == "mm" and np.all(g.diameter == 3.1) and np.all(g.confidence == 0.8)


def test_named_columns_in_px_and_ns(tmp_path):
    p = tmp_path / "g.csv"
    t0 = 1_700_000_000_000_000_000
    p.write_text("time,gx,gy\n" + _lines(100, lambda i: f"{t0 + i * 5_000_000},{800},{300}\n"))
    g = read_gaze_csv(p, columns={"t": "time", "x": "gx", "y": "gy"}, time_unit="ns", position_unit="px",
                      size=(1600, 1200)).gaze
    assert g.t[1] - g.t[0] == pytest.approx(0.005, abs=1e-6)
    assert g.x[0] == 0.5 and g.y[0] == 0.75 and np.all(g.confidence == 1.0)


def test_angles_in_degrees(tmp_path):
    p = tmp_path / "g.csv"
    p.write_text("t,az,el\n" + _lines(100, lambda i: f"{i / 100},0,0\n"))
    g = read_gaze_csv(p, columns={"t": "t", "x": "az", "y": "el"}, position_unit="deg").gaze
    np.testing.assert_allclose([g.x[0], g.y[0]], [0.5, 0.5])


@pytest.mark.parametrize(
    ("text", "kw", "message"),
    [
        ("1;0.5;0.5\n2;x;0.5\n", {}, r"row 2, column 1: 'x' is not a number"),
        ("1;0.5;0.5\n2;0.5\n", {}, r"row 2 has 2 fields, column 2 is field 3"),
        ("5;0.5;0.5\n10;0.5;0.5\n15;0.5;0.5\n", {"time_unit": "s"}, "look like milliseconds"),
        ("10;0.5;0.5\n15;0.5;0.5\n12;0.5;0.5\n", {}, "go backwards at row 3"),
        ("1;0.5;0.5\n", {"columns": {"t": 0, "x": 1, "y": 7}}, "y is column 7"),
    ],
)
def test_generic_csv_refuses_bad_files_naming_row_and_column(tmp_path, text, kw, message):
    p = tmp_path / "g.csv"
    p.write_text(text)
    args = {"delimiter": ";", "header": False, "columns": {"t": 0, "x": 1, "y": 2}, "time_unit": "ms"} | kw
    with pytest.raises(InputError, match=message):
        read_gaze_csv(p, **args)


@pytest.mark.parametrize(
    ("kw", "error", "message"),
    [
        ({"delimiter": ";;"}, ValueError, "delimiter"),
        ({"delimiter": 1}, TypeError, "delimiter"),
        ({"header": "no"}, TypeError, "header"),
        ({"time_unit": "h"}, ValueError, "time_unit must be one of"),
        ({"position_unit": "px"}, ValueError, "size"),
        ({"columns": {"t": 0, "x": 1}}, ValueError, "must map y"),
        ({"columns": {"t": 0, "x": 1, "y": 2, "z": 3}}, ValueError, "unknown role 'z'"),
        ({"columns": {"t": "time", "x": 1, "y": 2}}, ValueError, "header=False"),
        ({"columns": {"t": -1, "x": 1, "y": 2}}, ValueError, ">= 0"),
        ({"size": (0, 10), "position_unit": "px"}, ValueError, "size must be positive"),
    ],
)
def test_generic_csv_options_are_validated(tmp_path, kw, error, message):
    p = tmp_path / "g.csv"
    p.write_text("1;0.5;0.5\n")
    args = {"delimiter": ";", "header": False, "columns": {"t": 0, "x": 1, "y": 2}} | kw
    with pytest.raises(error, match=message):
        read_gaze_csv(p, **args)
