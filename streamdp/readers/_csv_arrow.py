"""CSV columns parsed by pyarrow's C++ reader (the ``parquet`` extra), straight from a memory map
of the file, for files it splits and converts exactly as the :mod:`csv` module and Python's
``float`` do; ``None`` for any other file, which the caller then reads another way.

Why the results are the same (tests/test_csv_engines.py compares them on real recordings, on
random numbers and on random files with quotes, ``\\r``, blank lines and bad cells): Arrow parses
decimal numbers correctly rounded, as ``float`` does, and refuses every spelling ``float`` refuses
except ``nan(…)`` (looked for below); it splits quoted fields (doubled quotes, delimiters and line
ends inside) as the csv module does; it refuses a row of another length than the header, which the
csv-module path reads (the caller falls back and reads it so); a file whose first line the csv
module would split otherwise (a quote, a lone ``\\r``, a byte order mark) is not given to it.

One thread: about 2.5 million rows of Player's 21-column gaze export a second on a 2-core machine;
two threads were faster only when the machine was idle and slower when it was busy, and one
leaves the other cores to Capture and the relay on the device.
"""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray


def _pyarrow() -> tuple[Any, Any] | None:
    """pyarrow and pyarrow.csv when installed, else None; imported on first use."""
    try:
        import pyarrow
        import pyarrow.csv as pyarrow_csv
    except ImportError:
        return None
    return pyarrow, pyarrow_csv


def available() -> bool:
    """Whether pyarrow is installed."""
    return _pyarrow() is not None


def _first_line_is_header(data: mmap.mmap, header: list[str], delimiter: str, has_header: bool) -> bool:
    """The first line is UTF-8 without a quote or a byte order mark, split at ``delimiter`` into
    ``header`` (as many fields when the file has no header row), ended by ``\\n`` or ``\\r\\n``
    (or the end of the file)."""
    end = data.find(b"\n")
    line = data[: end if end >= 0 else len(data)]
    if line.endswith(b"\r"):
        line = line[:-1]
    if b"\r" in line or b'"' in line or line.startswith(b"\xef\xbb\xbf"):
        return False
    try:
        first = line.decode().split(delimiter)
    except UnicodeDecodeError:
        return False
    return first == header if has_header else len(first) == len(header)


def read_columns(
    path: Path, header: list[str], *, numbers: set[str], text: set[str], delimiter: str, has_header: bool
) -> dict[str, NDArray[Any]] | None:
    """The ``numbers`` columns as float64 (NaN for empty cells) and the ``text`` columns as object
    arrays of str, or None when pyarrow is absent or would read the file otherwise than the csv
    module (including a file with a bad cell or row: the csv-module path names it).

    ``header`` is the column names the caller gives the file (``"0"``, ``"1"``… without a header
    row); its names must be distinct.
    """
    arrow = _pyarrow()
    if arrow is None or not header or len(set(header)) != len(header) or path.stat().st_size == 0:
        return None
    pa, pa_csv = arrow
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if not _first_line_is_header(data, header, delimiter, has_header):
            return None
    try:
        with pa.memory_map(str(path)) as source:
            table = pa_csv.read_csv(
                source,
                read_options=pa_csv.ReadOptions(column_names=header, skip_rows=int(has_header), use_threads=False),
                parse_options=pa_csv.ParseOptions(
                    delimiter=delimiter,
                    quote_char='"',
                    double_quote=True,
                    escape_char=False,
                    newlines_in_values=True,
                    ignore_empty_lines=True,
                ),
                convert_options=pa_csv.ConvertOptions(
                    include_columns=[c for c in header if c in numbers or c in text],
                    column_types={**{c: pa.float64() for c in numbers}, **{c: pa.string() for c in text}},
                    null_values=[""],
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
    except pa.lib.ArrowException:
        return None
    out: dict[str, NDArray[Any]] = {}
    for name in numbers:
        column = table.column(name)
        values = column.to_numpy()
        # a NaN from a cell that is not empty: "nan" (as float reads it) or "nan(…)" (refused by float)
        if np.count_nonzero(np.isnan(values)) > column.null_count and _contains(path, b"("):
            return None
        out[name] = np.ascontiguousarray(values, dtype=np.float64)
    for name in text:
        out[name] = np.array(table.column(name).to_pylist(), dtype=object)
    return out


def _contains(path: Path, needle: bytes) -> bool:
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return data.find(needle) >= 0
