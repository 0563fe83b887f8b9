"""Pupil Player's CSV exports: ``gaze_positions.csv`` (with pupil diameters from a
``pupil_positions.csv`` beside it), ``pupil_positions.csv`` as a signal of its own, ``blinks.csv``
and ``fixations.csv``. Times are Pupil time in s, kept as they are.

Player exports every stream in time order, so a row going back in time means a damaged or edited
file: it is refused, never re-sorted (see :mod:`streamdp.readers._checks`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import BINOCULAR, BlinkEvents, DiameterUnit, GazeBatch, Recording
from ._checks import check_overlap, check_sampling_rate, check_time_order, require_valid_gaze
from ._csv import check_numbers, read_csv


def _pupil_diameter_at(pupil_csv: Path, t: NDArray[np.float64]) -> tuple[NDArray[np.float64], DiameterUnit]:
    """Pupil diameter at gaze times from a ``pupil_positions.csv`` beside the gaze export: each eye's
    3d-model diameter (mm; px where absent) interpolated to the gaze times, averaged over eyes."""
    table = read_csv(pupil_csv, ("pupil_timestamp", "eye_id", "confidence", "diameter"), wanted=("diameter_3d",))
    pt = table.column("pupil_timestamp")
    check_numbers(pupil_csv, "pupil_timestamp", pt)
    check_time_order(f"{pupil_csv}, column pupil_timestamp", pt)
    eye = table.column("eye_id")
    for e in (0, 1):
        check_sampling_rate(f"{pupil_csv} (eye {e}), column pupil_timestamp", pt[eye == e])
    check_overlap(str(pupil_csv), "pupil samples", pt, pt, t)
    conf = table.column("confidence")
    d3 = table.column("diameter_3d", optional=True)
    d2 = table.column("diameter")
    use_mm = bool(np.any(np.isfinite(d3)))
    d = d3 if use_mm else d2
    per_eye = []
    for e in (0, 1):
        m = (eye == e) & np.isfinite(d) & (conf >= 0.6)
        if m.sum() < 2:
            continue
        per_eye.append(np.interp(t, pt[m], d[m], left=np.nan, right=np.nan))
    if not per_eye:
        return np.full(t.shape[0], np.nan), "none"
    stack = np.vstack(per_eye)
    with np.errstate(invalid="ignore"):
        counts = np.isfinite(stack).sum(axis=0)
        mean = np.where(counts > 0, np.nansum(stack, axis=0) / np.maximum(counts, 1), np.nan)
    return mean, "mm" if use_mm else "px"


def read_gaze_positions_csv(path: Path) -> GazeBatch:
    """Player's ``gaze_positions.csv`` (pupil diameters from a ``pupil_positions.csv`` beside it).

    Raises
    ------
    InputError
        A missing column, a bad cell, a row going back in time, an implausible sampling rate
        (timestamps in ms, say), no row with a gaze position and a confidence above 0, or a
        ``pupil_positions.csv`` beside it with any of these faults or on another clock.
    """
    path = Path(path)
    table = read_csv(path, ("gaze_timestamp", "confidence", "norm_pos_x", "norm_pos_y"), wanted=())
    if not len(table):
        raise InputError(f"{path}: no gaze rows")
    t = table.column("gaze_timestamp")
    check_numbers(path, "gaze_timestamp", t)
    conf = table.column("confidence")
    check_numbers(path, "confidence", conf)
    bad_conf = (conf < 0) | (conf > 1)
    if np.any(bad_conf):
        row = int(np.flatnonzero(bad_conf)[0]) + 2
        raise InputError(f"{path}: row {row}, column confidence: {conf[row - 2]!r} is outside [0, 1]")
    check_sampling_rate(f"{path}, column gaze_timestamp", t)
    check_time_order(f"{path}, column gaze_timestamp", t)
    x = table.column("norm_pos_x")
    y = table.column("norm_pos_y")
    valid = np.isfinite(x) & np.isfinite(y)
    unit: DiameterUnit
    pupil_csv = path.with_name("pupil_positions.csv")
    diam, unit = np.full(t.shape[0], np.nan), "none"
    if pupil_csv.exists():
        diam, unit = _pupil_diameter_at(pupil_csv, t)
    gaze = GazeBatch.from_arrays(
        t=t,
        x=np.where(valid, x, np.nan),
        y=np.where(valid, y, np.nan),
        confidence=conf,
        diameter=diam,
        eye_id=np.full(t.shape[0], BINOCULAR),
        valid=valid,
        diameter_unit=unit,
        source=str(path),
    )
    require_valid_gaze(gaze, str(path))
    return gaze


def read_pupil_positions_csv(path: Path, eye_id: int | None = None) -> GazeBatch:
    """Player's ``pupil_positions.csv`` as the signal: eye-camera pupil position of one eye (the
    MPIIDPEye signal). Rows of the 3d detector are used where present (Player exports each pupil
    datum once per detector), else the 2d ones. ``eye_id`` None picks the eye with more samples.

    Raises
    ------
    InputError
        A missing column, a bad cell, a row going back in time, no row of the eye, an implausible
        sampling rate, or no row with a position and a confidence above 0.
    """
    path = Path(path)
    table = read_csv(
        path,
        ("pupil_timestamp", "eye_id", "confidence", "norm_pos_x", "norm_pos_y", "diameter"),
        wanted=("diameter_3d",),
        text=("method",),
    )
    if not len(table):
        raise InputError(f"{path}: no pupil rows")
    t = table.column("pupil_timestamp")
    check_numbers(path, "pupil_timestamp", t)
    check_time_order(f"{path}, column pupil_timestamp", t)
    eye = table.column("eye_id")
    if "method" in table.header:
        is3d = np.char.find(table.text("method"), "3d") >= 0
        keep = is3d if np.any(is3d) else ~is3d
    else:
        keep = np.ones(len(table), dtype=bool)
    if eye_id is None:
        eyes, counts = np.unique(eye[keep], return_counts=True)
        eye_id = int(eyes[np.argmax(counts)])
    keep &= eye == eye_id
    if not np.any(keep):
        raise InputError(f"{path}: no rows for eye {eye_id}")
    source = f"{path} (eye {eye_id})"
    tt = t[keep]
    check_sampling_rate(f"{source}, column pupil_timestamp", tt)
    conf = table.column("confidence")[keep]
    d3 = table.column("diameter_3d", optional=True)[keep]
    d2 = table.column("diameter")[keep]
    use_mm = bool(np.any(np.isfinite(d3)))
    gaze = GazeBatch.from_arrays(
        t=tt,
        x=table.column("norm_pos_x")[keep],
        y=table.column("norm_pos_y")[keep],
        confidence=np.clip(conf, 0.0, 1.0),
        diameter=d3 if use_mm else d2,
        eye_id=np.full(tt.shape[0], eye_id),
        diameter_unit="mm" if use_mm else "px",
        source=source,
    )
    require_valid_gaze(gaze, source)
    return gaze


def read_blinks_csv(path: Path) -> BlinkEvents:
    """Player's ``blinks.csv``: ``start_timestamp``, ``end_timestamp`` in Pupil time."""
    path = Path(path)
    table = read_csv(path, ("start_timestamp", "end_timestamp"), wanted=())
    s = table.column("start_timestamp")
    e = table.column("end_timestamp")
    check_numbers(path, "start_timestamp", s)
    check_numbers(path, "end_timestamp", e)
    try:
        return BlinkEvents.from_arrays(s, e)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def read_fixations_csv(path: Path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Player's ``fixations.csv`` as (start, end) in Pupil time; its duration column is in ms."""
    path = Path(path)
    table = read_csv(path, ("start_timestamp", "duration"), wanted=())
    s = table.column("start_timestamp")
    d = table.column("duration")
    check_numbers(path, "start_timestamp", s)
    check_numbers(path, "duration", d)
    return s, s + d / 1000.0


def read_player_export(path: Path) -> Recording:
    """A Player export folder (or its ``gaze_positions.csv``), with ``blinks.csv`` when present.

    Raises
    ------
    InputError
        No ``gaze_positions.csv``, any fault of :func:`read_gaze_positions_csv`, or a
        ``blinks.csv`` none of whose blinks falls within the gaze.
    """
    path = Path(path)
    gaze_csv = path / "gaze_positions.csv" if path.is_dir() else path
    if not gaze_csv.exists():
        raise InputError(f"{path}: no gaze_positions.csv")
    gaze = read_gaze_positions_csv(gaze_csv)
    blinks_csv = gaze_csv.with_name("blinks.csv")
    blinks = read_blinks_csv(blinks_csv) if blinks_csv.exists() else None
    if blinks is not None:
        check_overlap(str(blinks_csv), "blinks", blinks.start, blinks.end, gaze.t)
    return Recording(gaze=gaze, blinks=blinks, name=gaze_csv.parent.name or gaze_csv.stem)
