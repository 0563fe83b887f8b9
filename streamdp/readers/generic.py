"""Gaze from any CSV, told which column holds what: delimiter, header or none, the columns of time,
x, y and optionally confidence and pupil diameter, and their units. The same checks as every
reader (:mod:`streamdp.readers._checks`) apply, and a bad cell is named by file, row and column.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from ..errors import InputError
from ..gaze import DiameterUnit, GazeBatch, Recording
from ..kernels.geometry import CAMERA_FOV_DEG, degrees_to_norm
from ._checks import check_sampling_rate, check_time_order, require_valid_gaze
from ._csv import Table, check_numbers
from .neon import normalize_scene_pixels

#: the roles a column can play; ``t``, ``x`` and ``y`` are required
ROLES = ("t", "x", "y", "confidence", "diameter")
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
POSITION_UNITS = ("norm", "px", "deg")
DIAMETER_UNITS = ("mm", "px", "none")


def _check_options(
    path: object,
    delimiter: object,
    header: object,
    columns: object,
    time_unit: object,
    position_unit: object,
    size: object,
    fov_deg: object,
    diameter_unit: object,
) -> None:
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or Path, got {type(path).__name__}")
    if not isinstance(delimiter, str):
        raise TypeError(f"delimiter must be a str, got {type(delimiter).__name__}")
    if len(delimiter) != 1 or delimiter in "\r\n\"":
        raise ValueError(f"delimiter must be one character other than a quote or line break, got {delimiter!r}")
    if not isinstance(header, bool):
        raise TypeError(f"header must be a bool, got {type(header).__name__}")
    if not isinstance(columns, Mapping):
        raise TypeError(f"columns must be a mapping of role to column, got {type(columns).__name__}")
    for role, col in columns.items():
        if role not in ROLES:
            raise ValueError(f"columns: unknown role {role!r} (expected {', '.join(ROLES)})")
        if isinstance(col, bool) or not isinstance(col, (str, int)):
            raise TypeError(f"columns[{role!r}] must be a column name or a 0-based index, got {type(col).__name__}")
        if isinstance(col, int) and col < 0:
            raise ValueError(f"columns[{role!r}] must be a 0-based index >= 0, got {col}")
        if isinstance(col, str) and not header:
            raise ValueError(f"columns[{role!r}] is the name {col!r} but header=False: give a 0-based index")
    missing = [r for r in ("t", "x", "y") if r not in columns]
    if missing:
        raise ValueError(f"columns must map {', '.join(missing)} (roles t, x and y are required)")
    if time_unit not in TIME_UNITS:
        raise ValueError(f"time_unit must be one of {', '.join(TIME_UNITS)}, got {time_unit!r}")
    if position_unit not in POSITION_UNITS:
        raise ValueError(f"position_unit must be one of {', '.join(POSITION_UNITS)}, got {position_unit!r}")
    if diameter_unit not in DIAMETER_UNITS:
        raise ValueError(f"diameter_unit must be one of {', '.join(DIAMETER_UNITS)}, got {diameter_unit!r}")
    for name, pair in (("size", size), ("fov_deg", fov_deg)):
        if pair is None:
            continue
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(v, (int, float)) for v in pair)):
            raise TypeError(f"{name} must be a (width, height) tuple of numbers, got {pair!r}")
        if not all(0 < float(v) < float("inf") for v in pair):
            raise ValueError(f"{name} must be positive and finite, got {pair!r}")
    if position_unit == "px" and size is None:
        raise ValueError("position_unit='px' needs size=(width, height) in px to normalize by")


def read_gaze_csv(
    path: str | Path,
    *,
    columns: Mapping[str, str | int],
    delimiter: str = ",",
    header: bool = True,
    time_unit: str = "s",
    position_unit: str = "norm",
    size: tuple[float, float] | None = None,
    fov_deg: tuple[float, float] | None = None,
    diameter_unit: DiameterUnit = "none",
) -> Recording:
    """Gaze from a CSV whose layout is given.

    Parameters
    ----------
    path : str or Path
    columns : mapping
        Role to column: ``t``, ``x``, ``y`` (required), ``confidence``, ``diameter``; a column is
        its header name or its 0-based index (only indices when ``header`` is False).
    delimiter : str
        One character.
    header : bool
        Whether the first row names the columns.
    time_unit : {"s", "ms", "us", "µs", "ns"}
        The unit of the time column; times become s. Integer ns are read exactly.
    position_unit : {"norm", "px", "deg"}
        ``norm``: Pupil's normalized coordinates (origin bottom-left); ``px``: pixels of an image
        of ``size`` (origin top-left); ``deg``: visual angle (azimuth, elevation), mapped through
        the camera model of ``fov_deg`` (default Pupil Core's 720p world camera).
    size, fov_deg : (float, float), optional
    diameter_unit : {"mm", "px", "none"}
        The unit of the diameter column.

    Returns
    -------
    Recording
        Samples with an empty or NaN x or y are kept as samples without gaze; confidence 1 where
        the file has no confidence column.

    Raises
    ------
    TypeError
        An option of the wrong type.
    ValueError
        An option out of range (the message names it).
    InputError
        The file is empty, misses a column, has a bad cell (named by row and column), times going
        backwards or at no eye tracker's sampling rate (in another unit, say), a confidence
        outside [0, 1], or no valid gaze.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "gaze.csv"
    >>> _ = p.write_text("".join(f"{i * 5};0.5;0.{i % 9};0.9\\n" for i in range(50)))
    >>> rec = read_gaze_csv(p, delimiter=";", header=False, columns={"t": 0, "x": 1, "y": 2, "confidence": 3},
    ...                     time_unit="ms")
    >>> len(rec.gaze), float(rec.gaze.t[1])
    (50, 0.005)
    """
    _check_options(path, delimiter, header, columns, time_unit, position_unit, size, fov_deg, diameter_unit)
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    first = Table.header_of(path, delimiter=delimiter, has_header=header)
    names: dict[str, str] = {}
    for role, col in columns.items():
        if isinstance(col, int):
            if col >= len(first):
                raise InputError(f"{path}: has {len(first)} columns, {role} is column {col} (0-based)")
            col = first[col]
        names[role] = col
    table = Table.read(path, tuple(names.values()), wanted=(), delimiter=delimiter, has_header=header)
    if not len(table):
        raise InputError(f"{path}: no rows")
    tc = names["t"]
    raw_t = table.ns_column(tc) if time_unit == "ns" else table.column(tc)
    check_numbers(path, tc, raw_t, first_row=table.start)
    where = f"{path}, column {tc}"
    check_sampling_rate(where, raw_t, unit="µs" if time_unit == "us" else time_unit)
    t = raw_t * TIME_UNITS[time_unit]
    check_time_order(where, t, first_row=table.start)
    x = table.column(names["x"])
    y = table.column(names["y"])
    valid = np.isfinite(x) & np.isfinite(y)
    if position_unit == "px":
        assert size is not None
        x, y = normalize_scene_pixels(x, y, (float(size[0]), float(size[1])))
    elif position_unit == "deg":
        x, y = degrees_to_norm(x, y, fov_deg or CAMERA_FOV_DEG["pupil_core_720p"])
    conf = None
    if "confidence" in names:
        conf = table.column(names["confidence"])
        check_numbers(path, names["confidence"], conf, first_row=table.start)
        bad = (conf < 0) | (conf > 1)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{path}: row {i + table.start}, column {names['confidence']}: {conf[i]!r} is outside [0, 1]"
            )
    diameter = table.column(names["diameter"]) if "diameter" in names else None
    gaze = GazeBatch.from_arrays(
        t=t,
        x=np.where(valid, x, np.nan),
        y=np.where(valid, y, np.nan),
        confidence=conf,
        diameter=diameter,
        valid=valid,
        diameter_unit=diameter_unit if diameter is not None else "none",
        source=str(path),
    )
    require_valid_gaze(gaze, str(path))
    return Recording(gaze=gaze, blinks=None, name=path.stem)
