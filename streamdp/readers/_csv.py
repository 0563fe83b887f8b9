"""CSV columns as NumPy arrays, every bad cell named by file, row (the header is row 1; with no
header the first row is row 1) and column.

A file is parsed by a C parser where one is installed: pyarrow's (the ``parquet`` extra, from a
memory map; see :mod:`._csv_arrow`), else pandas' C engine (the ``pandas`` extra). Numbers are
converted exactly as Python's ``float`` does; a file such a parser would read differently from
Python's :mod:`csv` (for pyarrow: rows of another length than the header, a byte order mark, a cell
``float`` refuses; for pandas also quotes and boolean words) is read with :mod:`csv`, as is every
file when neither is installed: the same values and the same messages (a bad cell named by row
and column), only slower. tests/test_csv_engines.py holds the engines to this.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ._csv_arrow import read_columns


def _pandas() -> Any:
    """pandas when the extra is installed, else None; imported on first use so that the core
    never imports it."""
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _precision(pd: Any) -> dict[str, str]:
    """pandas before 3 rounds decimal numbers its own way unless told to round-trip; pandas 3
    rounds as Python does and deprecates the option."""
    return {} if int(pd.__version__.split(".")[0]) >= 3 else {"float_precision": "round_trip"}


_F64 = NDArray[np.float64]


def _splits_as_csv_module(raw: bytes, delimiter: str, fields: int, rows: int, has_header: bool) -> bool:
    """Whether pandas, which read ``rows`` rows (header included) from ``raw``, split and
    converted it as the csv module and ``float`` do: no quote, byte order mark or boolean word
    (pandas reads TRUE as 1.0), no lone ``\\r`` and no whitespace-only line (pandas skips those,
    the csv module reads them as rows), and every line not empty ``fields`` fields long (pandas
    pads short rows, and with ``usecols`` reads longer ones)."""
    body = raw.find(b"\n") + 1 if has_header else 0
    if b'"' in raw or raw.startswith(b"\xef\xbb\xbf") or _has_boolean_word(raw, body):
        return False
    data = np.frombuffer(raw, dtype=np.uint8)
    n = data.shape[0]
    ends = np.flatnonzero(data == 0x0A)
    if ends.size == 0 or ends[-1] != n - 1:
        ends = np.append(ends, n)
    starts = np.concatenate(([0], ends[:-1] + 1))
    cr_end = (ends > starts) & (data[np.maximum(ends - 1, 0)] == 0x0D)
    if b"\r" in raw and (data[-1] == 0x0D or np.count_nonzero(data == 0x0D) != np.count_nonzero(cr_end)):
        return False  # a \r not before a \n
    length = ends - starts - cr_end
    first = data[np.minimum(starts, n - 1)]
    for start in starts[(length > 0) & np.isin(first, _BLANKS)].tolist():
        end = raw.find(b"\n", start)
        if not raw[start : end if end >= 0 else n].strip(b" \t\f\v\r"):
            return False
    delimiters = np.diff(np.searchsorted(np.flatnonzero(data == ord(delimiter)), ends), prepend=0)
    return bool(np.all(delimiters[length > 0] == fields - 1)) and int(np.count_nonzero(length > 0)) == rows


def _has_boolean_word(raw: bytes, body: int) -> bool:
    """Whether a cell could be True, TRUE, true, False, FALSE or false: looked for only when a
    u or an l is in the ``body`` (one fast scan each), the words themselves being slow to find."""
    if all(raw.find(c, body) < 0 for c in (b"u", b"U", b"l", b"L")):
        return False
    return any(w in raw for w in (b"rue", b"RUE", b"alse", b"ALSE"))


_BLANKS = np.frombuffer(b" \t\f\v", dtype=np.uint8)


ENGINES = ("auto", "pyarrow", "pandas", "python")

#: below this size "auto" uses a C parser only if it is already imported: importing pyarrow takes
#: ~0.2 s (pandas ~0.35 s), what the csv module takes for ~10 MB
C_PARSER_MIN_BYTES = 8 << 20


def _worth_it(engine: str, size: int, module: str) -> bool:
    return engine != "auto" or size >= C_PARSER_MIN_BYTES or module in sys.modules


class Table:
    """A CSV file's header and rows, read once; columns converted on demand.

    Raises
    ------
    InputError
        From :meth:`read`: the file is empty or misses a required column.
    """

    def __init__(
        self,
        path: Path,
        header: list[str],
        rows: list[list[str]] | None,
        parsed: dict[str, NDArray[Any]],
        *,
        delimiter: str,
        start: int,
        n_rows: int,
        parser: str,
    ) -> None:
        self.path = path
        self.header = header
        self._rows = rows
        #: columns a C parser read: float64 (as ``float`` reads the cells) or object arrays of str
        self._parsed = parsed
        self._delimiter = delimiter
        #: the file's row number of the first data row
        self.start = start
        self.n_rows = n_rows
        #: what parsed the file: "pyarrow", "pandas" or "python" (the csv module)
        self.parser = parser

    @staticmethod
    def header_of(path: Path, *, delimiter: str = ",", has_header: bool = True) -> list[str]:
        """The column names :meth:`read` gives the file (read from its first line only)."""
        with open(path, "rb") as fh:
            line = fh.readline().decode(errors="replace").rstrip("\r\n")
        first = next(csv.reader([line], delimiter=delimiter), [])
        return first if has_header else [str(i) for i in range(len(first))]

    @classmethod
    def read(
        cls,
        path: Path,
        required: Iterable[str] = (),
        *,
        wanted: Iterable[str] | None = None,
        delimiter: str = ",",
        has_header: bool = True,
        text: Iterable[str] = (),
        engine: str = "auto",
    ) -> Table:
        """Read ``path``; ``wanted`` columns only (all when None), those in ``text`` as strings.
        Without a header, columns are named ``"0"``, ``"1"``… (their 0-based position).

        ``engine``: ``"auto"`` tries pyarrow, then pandas (each for a file of at least
        ``C_PARSER_MIN_BYTES`` or once imported), then the csv module; ``"pyarrow"`` or
        ``"pandas"`` that one, then the csv module; ``"python"`` the csv module only. Every engine
        gives the same values and messages.

        Raises
        ------
        InputError
            The file is empty or misses a required column.
        ValueError
            ``engine`` is none of ``ENGINES``.
        """
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        path = Path(path)
        required = tuple(required)
        with open(path, "rb") as fh:
            line = fh.readline()
        if not line:
            raise InputError(f"{path}: empty file, expected a header with {', '.join(required)}")
        first = next(csv.reader([line.decode(errors="replace").rstrip("\r\n")], delimiter=delimiter), [])
        header = first if has_header else [str(i) for i in range(len(first))]
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
        start = 1 + has_header
        simple = len(delimiter) == 1 and delimiter not in "\r\n\"" and delimiter.isascii()
        want = set(header if wanted is None else [*wanted, *required, *text]) & set(header)
        as_text = set(text) & want
        size = path.stat().st_size
        if simple and want and engine in ("auto", "pyarrow") and _worth_it(engine, size, "pyarrow.csv"):
            parsed = read_columns(
                path, header, numbers=want - as_text, text=as_text, delimiter=delimiter, has_header=has_header
            )
            if parsed is not None:
                n = len(next(iter(parsed.values())))
                return cls(path, header, None, parsed, delimiter=delimiter, start=start, n_rows=n, parser="pyarrow")
        if simple and want and engine in ("auto", "pandas") and _worth_it(engine, size, "pandas"):
            frame = _pandas_frame(path, header, want, as_text, delimiter, has_header, len(first))
            if frame is not None:
                parsed = {}
                for name in want - as_text:
                    parsed[name] = frame[name].to_numpy(dtype=np.float64)
                for name in as_text:
                    cells = ["" if isinstance(v, float) and v != v else v for v in frame[name].tolist()]
                    parsed[name] = np.array(cells, dtype=object)
                return cls(
                    path, header, None, parsed, delimiter=delimiter, start=start, n_rows=len(frame), parser="pandas"
                )
        rows = _rows(path, delimiter, has_header)
        return cls(path, header, rows, {}, delimiter=delimiter, start=start, n_rows=len(rows), parser="python")

    def __len__(self) -> int:
        return self.n_rows

    def _cells(self, name: str) -> list[Any]:
        """The column's cells as the csv module gives them ("" for empty), short rows refused."""
        parsed = self._parsed.get(name)
        if parsed is not None and parsed.dtype == object:
            return parsed.tolist()
        if self._rows is None:
            # a column read as numbers, or not read: looked at as the file writes it
            self._rows = _rows(self.path, self._delimiter, self.start == 2)
        j = self.header.index(name)
        out = []
        for i, r in enumerate(self._rows):
            if j >= len(r):
                raise InputError(
                    f"{self.path}: row {i + self.start} has {len(r)} fields, column {name} is field {j + 1}"
                )
            out.append(r[j])
        return out

    def _numbers(self, name: str) -> _F64 | None:
        parsed = self._parsed.get(name)
        return parsed if parsed is not None and parsed.dtype == np.float64 else None

    def column(self, name: str, optional: bool = False) -> _F64:
        """A column as floats, NaN for empty cells (all NaN for an absent ``optional`` column).

        Raises
        ------
        InputError
            The column is missing, a row is short, or a cell is not a number.
        """
        if name not in self.header:
            if optional:
                return np.full(self.n_rows, np.nan)
            raise InputError(f"{self.path}: missing column {name}")
        numbers = self._numbers(name)
        if numbers is not None:
            return numbers.copy()
        cells = self._cells(name)
        out = np.empty(len(cells))
        for i, cell in enumerate(cells):
            if cell == "":
                out[i] = np.nan
                continue
            try:
                out[i] = float(cell)
            except (ValueError, TypeError):
                row = i + self.start
                raise InputError(f"{self.path}: row {row}, column {name}: {cell!r} is not a number") from None
        return out

    def text(self, name: str) -> NDArray[np.str_]:
        """A column as strings ("" for empty cells)."""
        return np.array([str(c) for c in self._cells(name)], dtype=str)

    def ns_column(self, name: str) -> _F64:
        """A column of integer timestamps (Pupil Cloud's ``[ns]`` columns) as float64 nanoseconds.

        Integers are parsed exactly; a column of decimal numbers (seconds written where nanoseconds
        belong, say) is read as floats so that the sampling-rate check can say what it looks like.

        Raises
        ------
        InputError
            A cell is empty or not a number.
        """
        parsed = self._numbers(name)
        # "-0" is 0 as an int but -0.0 as a float: such a column is read from its text
        if parsed is None or np.any(np.signbit(parsed) & (parsed == 0)):
            cells = self._cells(name)
            try:
                return np.array([int(c) for c in cells], dtype=np.int64).astype(np.float64)
            except (ValueError, TypeError, OverflowError):
                pass
        # parsed as float64, an integer cell is rounded as its int64 is: the same value either way
        values = self.column(name)
        check_numbers(self.path, name, values, first_row=self.start)
        return values


def _pandas_frame(
    path: Path, header: list[str], want: set[str], text: set[str], delimiter: str, has_header: bool, fields: int
) -> Any:
    """The ``want`` columns parsed by pandas' C engine, or None when pandas is absent or would
    split the file otherwise than the csv module."""
    pd = _pandas()
    if pd is None:
        return None
    raw = path.read_bytes()
    try:
        frame = pd.read_csv(
            io.BytesIO(raw),
            sep=delimiter,
            header=0 if has_header else None,
            names=None if has_header else header,
            usecols=lambda c: c in want,
            keep_default_na=False,
            # numbers: NaN as float reads them ("-nan" has its sign bit set); text: only empty cells
            na_values={**{c: ["", "nan", "NaN", "NAN"] for c in want - text}, **{c: [""] for c in text}},
            dtype={**{c: np.float64 for c in want - text}, **{c: object for c in text}},
            engine="c",
            **_precision(pd),
        )
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError):
        return None  # the csv module reads it and names what is wrong
    return frame if _splits_as_csv_module(raw, delimiter, fields, len(frame) + has_header, has_header) else None


def _rows(path: Path, delimiter: str, has_header: bool) -> list[list[str]]:
    with open(path, newline="") as fh:
        rows = [r for r in csv.reader(fh, delimiter=delimiter) if r]
    return rows[1:] if has_header else rows


def read_csv(path: Path, required: tuple[str, ...], **kwargs: Any) -> Table:
    """The header and the non-empty rows of a CSV file that has every ``required`` column.

    Raises
    ------
    InputError
        The file is empty or misses a required column.
    """
    return Table.read(path, required, **kwargs)


def check_numbers(path: Path, name: str, values: _F64, first_row: int = 2) -> None:
    """Refuse a column with an empty or non-finite cell.

    Raises
    ------
    InputError
        Naming the first such row.
    """
    bad = ~np.isfinite(values)
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0]) + first_row
        raise InputError(f"{path}: row {row}, column {name}: missing or not a finite number")
