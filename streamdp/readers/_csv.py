"""CSV columns as NumPy arrays, every bad cell named by file, row (the header is row 1) and column."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError


def read_csv(path: Path, required: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    """The header and the non-empty rows of a CSV file that has every ``required`` column.

    Raises
    ------
    InputError
        The file is empty or misses a required column.
    """
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise InputError(f"{path}: empty file, expected a header with {', '.join(required)}") from None
        missing = [c for c in required if c not in header]
        if missing:
            raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
        rows = [r for r in reader if r]
    return header, rows


def _cell(path: Path, r: list[str], i: int, j: int, name: str) -> str:
    try:
        return r[j]
    except IndexError:
        raise InputError(f"{path}: row {i + 2} has {len(r)} fields, column {name} is field {j + 1}") from None


def column(
    path: Path, header: list[str], rows: list[list[str]], name: str, optional: bool = False
) -> NDArray[np.float64]:
    """A column as floats, NaN for empty cells (all NaN for an absent ``optional`` column).

    Raises
    ------
    InputError
        The column is missing, a row is short, or a cell is not a number.
    """
    if name not in header:
        if optional:
            return np.full(len(rows), np.nan)
        raise InputError(f"{path}: missing column {name}")
    j = header.index(name)
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        cell = _cell(path, r, i, j, name)
        if cell == "":
            out[i] = np.nan
            continue
        try:
            out[i] = float(cell)
        except ValueError:
            raise InputError(f"{path}: row {i + 2}, column {name}: {cell!r} is not a number") from None
    return out


def check_numbers(path: Path, name: str, values: NDArray[np.float64]) -> None:
    """Refuse a column with an empty or non-finite cell.

    Raises
    ------
    InputError
        Naming the first such row.
    """
    bad = ~np.isfinite(values)
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0]) + 2
        raise InputError(f"{path}: row {row}, column {name}: missing or not a finite number")


def ns_column(path: Path, header: list[str], rows: list[list[str]], name: str) -> NDArray[np.float64]:
    """A column of integer timestamps (Pupil Cloud's ``[ns]`` columns) as float64 nanoseconds.

    Integers are parsed exactly; a column of decimal numbers (seconds written where nanoseconds
    belong, say) is read as floats so that the sampling-rate check can say what it looks like.

    Raises
    ------
    InputError
        A cell is empty or not a number.
    """
    j = header.index(name)
    cells = [_cell(path, r, i, j, name) for i, r in enumerate(rows)]
    try:
        return np.array([int(c) for c in cells], dtype=np.int64).astype(np.float64)
    except ValueError:
        pass
    values = column(path, header, rows, name)
    check_numbers(path, name, values)
    return values
