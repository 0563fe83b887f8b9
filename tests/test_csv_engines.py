"""The C parsers behind the CSV readers (pyarrow's, pandas' C engine) give exactly what the csv
module and Python's ``float`` give: the same bits for every number, the same strings, the same
error naming file, row and column; and the real recordings do take the fast path."""

from __future__ import annotations

import math
import random
import re
import struct
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamdp.errors import InputError
from streamdp.readers._csv import Table
from streamdp.readers._csv_arrow import available

from .conftest import SHARED_DATA

FAST = [
    pytest.param("pyarrow", marks=pytest.mark.skipif(not available(), reason="pyarrow not installed")),
    "pandas",
]


@pytest.fixture(params=FAST)
def engine(request):
    if request.param == "pandas":
        pytest.importorskip("pandas")
    return request.param


def _outcome(path: Path, engine: str, **kwargs) -> tuple[str, list[object]]:
    """Everything a reader can get from the file: each column as float bits or the error, as
    text, and as integer nanoseconds."""
    try:
        table = Table.read(path, engine=engine, **kwargs)
    except Exception as e:  # the failure itself is compared between engines
        return "read", [type(e).__name__, str(e)]
    got: list[object] = []
    for name in table.header:
        for get in (table.column, table.ns_column, table.text):
            try:
                values = get(name)
                got.append(values.view(np.uint64).tolist() if values.dtype == np.float64 else values.tolist())
            except InputError as e:
                got.append(str(e))
    return table.parser, got


def _same(path: Path, engine: str, **kwargs) -> str:
    parser, fast = _outcome(path, engine, **kwargs)
    slow = _outcome(path, "python", **kwargs)[1]
    assert fast == slow
    return parser


PLAYER = ["pupil_core_tutorial/gaze_positions.csv", "pupil_core_tutorial/tutorial10/blinks.csv",
          "pupil_core_tutorial/tutorial10/fixations.csv", "pupil_core_music_discovery/pupil_positions.csv",
          "cateyes_119hz/test_data_full.csv"]  # fmt: skip
TEXT = {"base_data", "method", "Event_Name", "filter_response"}


@pytest.mark.parametrize("name", PLAYER)
def test_real_recordings_read_the_same_through_the_fast_path(name, engine):
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real recording not available: {path}")
    header = Table.header_of(path)
    numbers = [c for c in header if c not in TEXT]
    text = [c for c in header if c in TEXT]
    table = Table.read(path, numbers, wanted=(), text=text, engine=engine)
    assert table.parser == engine  # not a silent fall back to the csv module
    slow = Table.read(path, numbers, wanted=(), text=text, engine="python")
    assert len(table) == len(slow) > 0
    for c in numbers:
        np.testing.assert_array_equal(table.column(c).view(np.uint64), slow.column(c).view(np.uint64))
    for c in text:
        np.testing.assert_array_equal(table.text(c), slow.text(c))


def _decimal_strings(seed: int, n: int) -> list[str]:
    """Numbers as files write them and as they could: shortest repr of random bit patterns,
    long digit strings, exact midpoints between two doubles (the rounding cases), -0, nan, inf."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        kind = rng.randrange(4)
        if kind == 0:
            x = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            out.append(repr(x) if math.isfinite(x) else rng.choice(["nan", "-inf", "Infinity", "-0", "+0.0"]))
        elif kind == 1:
            digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 40)))
            k = rng.randint(0, len(digits))
            out.append(f"{rng.choice(['', '-', '+'])}{digits[:k]}.{digits[k:]}e{rng.randint(-330, 310)}")
        elif kind == 2:
            x = rng.uniform(-1e6, 1e6)
            out.append(str((Decimal(x) + Decimal(math.nextafter(x, math.inf))) / 2))
        else:
            out.append(f"{rng.uniform(-1e3, 1e3):.{rng.randint(0, 20)}f}")
    return out


def test_numbers_are_rounded_as_python_float_rounds_them(tmp_path, engine):
    cells = _decimal_strings(seed=5, n=30_000)
    path = tmp_path / "numbers.csv"
    half = len(cells) // 2
    path.write_text("a,b\n" + "".join(f"{x},{y}\n" for x, y in zip(cells[:half], cells[half:], strict=True)))
    table = Table.read(path, ("a", "b"), engine=engine)
    assert table.parser == engine
    want = np.array([float(c) for c in cells])
    got = np.concatenate([table.column("a"), table.column("b")])
    np.testing.assert_array_equal(got.view(np.uint64), want.view(np.uint64))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("1,2\n3,x\n", "row 3, column b: 'x' is not a number"),
        ("1,2\n3,nan(1)\n", "row 3, column b: 'nan(1)' is not a number"),  # Arrow reads it, float refuses it
        ("1,1_0\n3,(\n", "row 3, column b: '(' is not a number"),  # float reads 1_0, Arrow refuses it
        ("1,2\n3\n", "row 3 has 1 fields, column b is field 2"),
        ("1,2\n3, \n", "row 3, column b: ' ' is not a number"),
    ],
)
def test_a_bad_cell_is_named_by_every_engine(tmp_path, engine, body, message):
    path = tmp_path / "bad.csv"
    path.write_text("a,b\n" + body)
    with pytest.raises(InputError, match=re.escape(f"{path}: {message}")):
        Table.read(path, ("a", "b"), engine=engine).column("b")
    _same(path, engine, required=("a", "b"))


_CELL = st.sampled_from(["", "1", "-2.5", "0.1", "1e3", "nan", "-nan", "NaN", "Infinity", "inf", "-0", "-0.0", " 7",
                         "7\t", "x", "1_0", "nan(2)", "TRUE", "0x1", "12345678901234567890", "9007199254740993",
                         '"', '""', '"1"', '"1,2"', 'a"b', '"1"2', '"\n"', '"a""b"', '"\r\n1"', '" "'])
_SEP = st.sampled_from([",", ",", ",", "\n", "\r\n", "\r", "\n\n", " \n", '"', "\ufeff", ";"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(tokens=st.lists(st.tuples(_CELL, _SEP), min_size=1, max_size=30), has_header=st.booleans())
def test_any_file_reads_as_the_csv_module_reads_it(tmp_path, engine, tokens, has_header):
    body = "".join(cell + sep for cell, sep in tokens)
    path = tmp_path / "fuzz.csv"
    path.write_bytes(("a,b,c\n" if has_header else "").encode() + body.encode())
    _same(path, engine, has_header=has_header)
    _same(path, engine, has_header=has_header, wanted=(), text=("b",) if has_header else ("1",))


@pytest.mark.parametrize("text", ["a,b\n", "a,b", "a,b\r\n\r\n"])
def test_a_header_without_rows_reads_as_no_rows(tmp_path, engine, text):
    path = tmp_path / "empty.csv"
    path.write_text(text, newline="")
    table = Table.read(path, ("a", "b"), engine=engine)
    assert len(table) == 0 and table.column("a").shape == (0,)
    _same(path, engine, required=("a", "b"))


def test_an_unknown_engine_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n")
    with pytest.raises(ValueError, match="engine must be one of auto, pyarrow, pandas, python, got 'c'"):
        Table.read(path, engine="c")
