"""CSV columns as NumPy arrays, every bad cell named by file, row (the header is row 1; with no
header the first row is row 1) and column.

With pandas (the ``pandas`` extra) a file is parsed by its C engine, numbers converted exactly as
Python's ``float`` does, and only a column that is not all
numbers is looked at cell by cell, to name the first bad one. Files the C engine would read
differently from Python's :mod:`csv` (quotes, rows of another length than the header, a byte order
mark) and every file when pandas is absent are read with :mod:`csv`: the same values and the same
messages, only slower.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError


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


def _splits_as_csv_module(raw: bytes, delimiter: str, fields: int, rows: int) -> bool:
    """Whether pandas, which read ``rows`` rows (header included) from ``raw``, split it as the
    csv module does: no quotes or byte order mark, no lone ``\r`` and no whitespace-only line
    (pandas skips those, the csv module reads them as rows), and every line ``fields`` fields
    long (pandas refuses longer lines; with the delimiter count right, none is shorter)."""
    if b'"' in raw or raw.startswith(b"\xef\xbb\xbf"):
        return False
    data = np.frombuffer(raw, dtype=np.uint8)
    if b"\r" in raw:
        cr = np.flatnonzero(data == 0x0D)
        if cr[-1] + 1 >= data.shape[0] or not np.all(data[cr + 1] == 0x0A):
            return False
    starts = np.flatnonzero(data[:-1] == 0x0A) + 1
    for start in starts[np.isin(data[starts], _BLANKS)].tolist():
        end = raw.find(b"\n", start)
        if not raw[start : end if end >= 0 else len(raw)].strip(b" \t\f\v\r"):
            return False
    return int(np.count_nonzero(data == ord(delimiter))) == (fields - 1) * rows


_BLANKS = np.frombuffer(b" \t\f\v", dtype=np.uint8)


class Table:
    """A CSV file's header and rows, read once; columns converted on demand.

    Raises
    ------
    InputError
        From :meth:`read`: the file is empty or misses a required column.
    """

    def __init__(
        self, path: Path, header: list[str], rows: list[list[str]] | None, frame: Any, *, delimiter: str, start: int
    ) -> None:
        self.path = path
        self.header = header
        self._rows = rows
        self._frame = frame
        self._delimiter = delimiter
        #: the file's row number of the first data row
        self.start = start
        self.n_rows = len(rows) if rows is not None else len(frame)

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
        ``engine="python"`` reads with the csv module even where pandas could."""
        path = Path(path)
        required = tuple(required)
        raw = path.read_bytes()
        line_end = raw.find(b"\n")
        line = raw[: line_end if line_end >= 0 else len(raw)].decode(errors="replace")
        first = next(csv.reader([line.rstrip("\r")], delimiter=delimiter), [])
        if not raw:
            raise InputError(f"{path}: empty file, expected a header with {', '.join(required)}")
        header = first if has_header else [str(i) for i in range(len(first))]
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
        simple = len(delimiter) == 1 and delimiter not in "\r\n\"" and delimiter.isascii()
        _pd = _pandas() if engine == "auto" and simple else None
        if _pd is not None:
            want = set(header if wanted is None else [*wanted, *required, *text]) & set(header)
            try:
                frame = _pd.read_csv(
                    io.BytesIO(raw),
                    sep=delimiter,
                    header=0 if has_header else None,
                    names=None if has_header else header,
                    usecols=lambda c: c in want,
                    keep_default_na=False,
                    na_values=[""],
                    dtype={c: object for c in text if c in want},
                    engine="c",
                    **_precision(_pd),
                )
            except (ValueError, UnicodeDecodeError, _pd.errors.ParserError):
                frame = None  # the csv module reads it and names what is wrong
            if frame is not None and _splits_as_csv_module(raw, delimiter, len(first), len(frame) + has_header):
                return cls(path, header, None, frame, delimiter=delimiter, start=1 + has_header)
        return cls(path, header, _rows(path, delimiter, has_header), None, delimiter=delimiter, start=1 + has_header)

    def __len__(self) -> int:
        return self.n_rows

    def _cells(self, name: str) -> list[Any]:
        """The column's cells as the csv module gives them ("" for empty), short rows refused."""
        j = self.header.index(name)
        if self._rows is None:
            series = self._frame[name]
            if series.dtype.kind not in "fiub":
                return ["" if isinstance(v, float) and v != v else v for v in series.tolist()]
            # a column pandas read as numbers or booleans is looked at as the file writes it
            self._rows = _rows(self.path, self._delimiter, self.start == 2)
            self._frame = None
        out = []
        for i, r in enumerate(self._rows):
            if j >= len(r):
                raise InputError(
                    f"{self.path}: row {i + self.start} has {len(r)} fields, column {name} is field {j + 1}"
                )
            out.append(r[j])
        return out

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
        if self._frame is not None:
            series = self._frame[name]
            if series.dtype.kind in "fiu":
                return series.to_numpy(dtype=np.float64)
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
        if self._frame is not None and self._frame[name].dtype.kind in "fiu":
            if self._frame[name].dtype.kind in "iu":
                return self._frame[name].to_numpy(dtype=np.int64).astype(np.float64)
            values = self.column(name)
            check_numbers(self.path, name, values, first_row=self.start)
            return values
        cells = self._cells(name)
        try:
            return np.array([int(c) for c in cells], dtype=np.int64).astype(np.float64)
        except (ValueError, TypeError, OverflowError):
            pass
        values = self.column(name)
        check_numbers(self.path, name, values, first_row=self.start)
        return values


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
