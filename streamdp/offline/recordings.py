"""Opening the recordings the offline commands are given: any format the readers recognise, or a
CSV of any layout described by a :class:`CsvLayout` (``--csv-columns`` and its options).

A layout is a small frozen value, so it travels to worker processes with each task.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..config import SessionConfig
from ..errors import InputError
from ..gaze import Recording
from ..kernels.geometry import CAMERA_FOV_DEG
from ..plausibility import Implausible

#: what a column can hold; t, x and y are required
ROLES = ("t", "x", "y", "confidence", "diameter")
TIME_UNITS = ("s", "ms", "us", "ns")
POSITION_UNITS = ("norm", "px", "deg")


@dataclass(frozen=True)
class CsvLayout:
    """How to read a CSV that no reader recognises by its header.

    Parameters
    ----------
    columns : tuple of (role, column)
        Each role (``t``, ``x``, ``y``, optionally ``confidence`` and ``diameter``) with its
        column: a header name, or a 0-based index.
    delimiter : str
        One character.
    header : bool
        Whether the first row names the columns (without one, columns are given by index).
    time_unit : {"s", "ms", "us", "ns"}
    position_unit : {"norm", "px", "deg"}
        ``norm``: normalized image coordinates (origin bottom-left); ``px``: pixels of an image of
        ``size`` (origin top-left); ``deg``: visual angle, through the configured camera.
    size : (float, float) or None
        Image width and height in px, for ``position_unit="px"``.

    Raises
    ------
    TypeError, ValueError
        A field of the wrong type or out of range, named with its value.

    Examples
    --------
    >>> CsvLayout.parse_columns("t=0,x=1,y=2")
    (('t', 0), ('x', 1), ('y', 2))
    >>> CsvLayout(columns=(("t", 0), ("x", 1)))
    Traceback (most recent call last):
    ...
    ValueError: columns must give y (t, x and y are required), got t=0,x=1
    """

    columns: tuple[tuple[str, str | int], ...]
    delimiter: str = ","
    header: bool = True
    time_unit: str = "s"
    position_unit: str = "norm"
    size: tuple[float, float] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.columns, tuple) or not all(
            isinstance(pair, tuple) and len(pair) == 2 for pair in self.columns
        ):
            raise TypeError(f"columns must be a tuple of (role, column) pairs, got {self.columns!r}")
        said = self.columns_text()
        roles = [role for role, _ in self.columns]
        for role, col in self.columns:
            if role not in ROLES:
                raise ValueError(f"columns: unknown role {role!r} (expected {', '.join(ROLES)}), got {said}")
            if isinstance(col, bool) or not isinstance(col, (str, int)):
                raise TypeError(f"columns: {role} must be a column name or a 0-based index, got {col!r}")
            if isinstance(col, int) and col < 0:
                raise ValueError(f"columns: {role} must be a 0-based index ≥ 0, got {col}")
            if isinstance(col, str) and not self.header:
                raise ValueError(f"columns: {role} is the name {col!r}, but the file has no header: give an index")
        repeated = sorted({r for r in roles if roles.count(r) > 1})
        if repeated:
            raise ValueError(f"columns: {', '.join(repeated)} given twice, got {said}")
        missing = [r for r in ("t", "x", "y") if r not in roles]
        if missing:
            raise ValueError(f"columns must give {', '.join(missing)} (t, x and y are required), got {said}")
        if not isinstance(self.delimiter, str) or len(self.delimiter) != 1 or self.delimiter in '\r\n"':
            raise ValueError(
                f"delimiter must be one character other than a quote or line break, got {self.delimiter!r}"
            )
        if not isinstance(self.header, bool):
            raise TypeError(f"header must be a bool, got {self.header!r}")
        if self.time_unit not in TIME_UNITS:
            raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {self.time_unit!r}")
        if self.position_unit not in POSITION_UNITS:
            raise ValueError(f"position_unit must be one of {', '.join(POSITION_UNITS)}, got {self.position_unit!r}")
        if self.size is not None and not (
            isinstance(self.size, tuple)
            and len(self.size) == 2
            and all(isinstance(v, float) and 0 < v < float("inf") for v in self.size)
        ):
            raise ValueError(f"size must be (width, height) in px, positive and finite, got {self.size!r}")
        if self.position_unit == "px" and self.size is None:
            raise ValueError("position_unit 'px' needs the image size (width, height) in px")
        if self.position_unit != "px" and self.size is not None:
            raise ValueError(f"size applies to position_unit 'px' only, got {self.position_unit!r}")

    def columns_text(self) -> str:
        """The columns as ``--csv-columns`` takes them."""
        return ",".join(f"{role}={col}" for role, col in self.columns)

    @staticmethod
    def parse_columns(text: str) -> tuple[tuple[str, str | int], ...]:
        """``t=0,x=1,y=2`` (indices) or ``t=time,x=gx,y=gy`` (header names) as (role, column)
        pairs; a column that is all digits is an index.

        Raises
        ------
        ValueError
            A part that is not ``role=column`` (named).
        """
        pairs: list[tuple[str, str | int]] = []
        for part in text.split(","):
            role, sep, col = part.partition("=")
            role, col = role.strip(), col.strip()
            if not sep or not role or not col:
                raise ValueError(f"{part.strip()!r} is not role=column (e.g. t=0,x=1,y=2)")
            pairs.append((role, int(col) if col.isdigit() else col))
        return tuple(pairs)

    def diameter_unit(self, config: SessionConfig) -> str:
        """The unit of the diameter column: the configured one (a signal sets it).

        Raises
        ------
        InputError
            The layout has a diameter column and the configuration leaves the unit to ``auto``.
        """
        if not any(role == "diameter" for role, _ in self.columns):
            return "none"
        if config.diameter_unit not in ("mm", "px"):
            raise InputError(
                "--csv-columns has a diameter column: say its unit with --diameter-unit mm or px "
                "(or a --signal that sets it)"
            )
        return config.diameter_unit

    def read(self, path: str | Path, config: SessionConfig) -> Recording:
        """The recording in the CSV at ``path``.

        Raises
        ------
        InputError
            ``path`` is not a file, or its contents are refused by
            :func:`~streamdp.readers.read_gaze_csv` (named by file, row and column).
        """
        from ..readers import read_gaze_csv

        p = Path(path)
        if p.is_dir():
            raise InputError(f"{p}: is a folder; --csv-columns reads CSV files")
        fov = CAMERA_FOV_DEG[config.camera_for(None)]
        return read_gaze_csv(
            p,
            columns=dict(self.columns),
            delimiter=self.delimiter,
            header=self.header,
            time_unit=self.time_unit,
            position_unit=self.position_unit,
            size=self.size,
            fov_deg=fov if self.position_unit == "deg" else None,
            diameter_unit=self.diameter_unit(config),  # type: ignore[arg-type]
        )


def open_recording(
    path: str | Path,
    layout: CsvLayout | None = None,
    config: SessionConfig | None = None,
    report: Callable[[Implausible], object] | None = None,
) -> Recording:
    """The recording at ``path``: read with ``layout`` when one is given, else in whichever format
    the readers recognise; either way held to the public plausibility bounds (what they leave out
    goes to ``report``, else to one logged warning).

    Raises
    ------
    InputError
        ``path`` cannot be read (named, with what was wrong), or holds no plausible gaze.
    """
    from ..readers import plausible_recording, read_recording

    if layout is None:
        return read_recording(path, report=report)
    return plausible_recording(layout.read(path, config or SessionConfig()), path, report)
