"""Gaze given as angles: a CSV with ``Timestamp`` (s) and ``Theta``/``Phi`` (radians), as the
cateyes test data. Theta is taken as azimuth, Phi as elevation; they are mapped to normalized
scene coordinates through the detector's camera model, so the detector sees the angles back."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError
from ..gaze import GazeBatch, Recording
from ..kernels.geometry import CAMERA_FOV_DEG, degrees_to_norm
from ._checks import check_sampling_rate, check_time_order, require_valid_gaze
from ._csv import check_numbers, read_csv


def read_angles_csv(path: Path, fov_deg: tuple[float, float] = CAMERA_FOV_DEG["pupil_core_720p"]) -> Recording:
    """An angle CSV as a recording (empty angle cells: samples without gaze).

    Raises
    ------
    InputError
        A missing column or bad cell, an angle beyond ±89°, a row going back in time, an
        implausible sampling rate (timestamps in ms, say), or no row with both angles.
    """
    path = Path(path)
    table = read_csv(path, ("Timestamp", "Theta", "Phi"), wanted=())
    if not len(table):
        raise InputError(f"{path}: no rows")
    t = table.column("Timestamp")
    check_numbers(path, "Timestamp", t)
    check_sampling_rate(f"{path}, column Timestamp", t)
    check_time_order(f"{path}, column Timestamp", t)
    th = np.degrees(table.column("Theta"))
    ph = np.degrees(table.column("Phi"))
    valid = np.isfinite(th) & np.isfinite(ph)
    out = valid & ((np.abs(th) >= 89.0) | (np.abs(ph) >= 89.0))
    if np.any(out):
        row = int(np.flatnonzero(out)[0]) + 2
        raise InputError(f"{path}: row {row}: angle ({th[row - 2]:.1f}°, {ph[row - 2]:.1f}°) beyond ±89°")
    x, y = degrees_to_norm(th, ph, fov_deg)
    gaze = GazeBatch.from_arrays(t=t, x=x, y=y, valid=valid, source=str(path))
    require_valid_gaze(gaze, str(path))
    return Recording(gaze=gaze, blinks=None, name=path.stem)
