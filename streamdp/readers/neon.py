"""Neon (and Invisible) recordings: native recordings through the optional ``neon`` extra
(``pupil-labs-neon-recording``) and Pupil Cloud CSV exports.

Neon gives gaze in scene-camera pixels; streamdp normalizes it by the scene camera size with the
origin at the bottom left, as Pupil Core's ``norm_pos``. Timestamps are UTC nanoseconds on the
device and become seconds (float64 keeps ~0.2 µs at today's epoch). Samples taken while the
headset was not worn are marked invalid. Neon reports no confidence: valid samples get 1.0.
"""

from __future__ import annotations

import gc
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import BINOCULAR, BlinkEvents, DiameterUnit, GazeBatch, Recording
from .pupil import _check_numbers, _column, _read_csv

#: Neon scene camera resolution (px); Invisible's is 1088 × 1080
NEON_SCENE_SIZE = (1600.0, 1200.0)
INVISIBLE_SCENE_SIZE = (1088.0, 1080.0)
_NS = 1e-9
_F64 = NDArray[np.float64]


def normalize_scene_pixels(
    px: NDArray[np.float64], py: NDArray[np.float64], size: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Scene-camera pixels (origin top-left) to Pupil's normalized coordinates (origin
    bottom-left): one rule for recorded and live Neon gaze."""
    return px / size[0], 1.0 - py / size[1]


def _neon_streams(
    rec: Any, folder: Path, scene_size: tuple[float, float]
) -> tuple[_F64, _F64, _F64, NDArray[np.bool_], _F64, DiameterUnit, BlinkEvents | None]:
    try:
        g = rec.gaze
        t_ns = np.asarray(g.time, dtype=np.int64)
        xy = np.asarray(g.point, dtype=np.float64)
    except Exception as exc:  # the reader raises its own types for every kind of broken file
        raise InputError(f"{folder}: cannot read Neon gaze: {exc}") from None
    if t_ns.shape[0] == 0:
        raise InputError(f"{folder}: the recording holds no gaze")
    t = (t_ns * _NS).astype(np.float64)
    x, y = normalize_scene_pixels(xy[:, 0], xy[:, 1], scene_size)
    valid = np.isfinite(x) & np.isfinite(y)
    try:
        worn = rec.worn
        wt = np.asarray(worn.time, dtype=np.int64)
        wv = np.asarray(worn.data["worn"], dtype=np.float64)
        if wt.shape[0]:
            idx = np.clip(np.searchsorted(wt, t_ns, side="right") - 1, 0, wt.shape[0] - 1)
            valid &= wv[idx] > 0
    except Exception:
        pass
    diam = np.full(t.shape[0], np.nan)
    unit: DiameterUnit = "none"
    try:
        p = rec.pupil
        pt = np.asarray(p.time, dtype=np.int64)
        left = np.asarray(p.data["diameter_left"], dtype=np.float64)
        right = np.asarray(p.data["diameter_right"], dtype=np.float64)
        if pt.shape[0] >= 2:
            both = np.nanmean(
                np.vstack([np.where(left > 0, left, np.nan), np.where(right > 0, right, np.nan)]),
                axis=0,
            )
            ok = np.isfinite(both)
            diam = np.interp(t_ns, pt[ok], both[ok], left=np.nan, right=np.nan)
            unit = "mm"
    except Exception:
        pass
    blinks = None
    try:
        b = rec.blinks
        blinks = BlinkEvents.from_arrays(
            np.asarray(b.data["start_time"], dtype=np.int64) * _NS,
            np.asarray(b.data["stop_time"], dtype=np.int64) * _NS,
        )
    except Exception:
        pass
    return t, x, y, valid, diam, unit, blinks


def read_neon_native(folder: Path, scene_size: tuple[float, float] = NEON_SCENE_SIZE) -> Recording:
    """A native Neon recording folder, read with ``pupil_labs.neon_recording``.

    Raises
    ------
    InputError
        The ``neon`` extra is not installed, or a stream the reader needs cannot be loaded.
    """
    try:
        import pupil_labs.neon_recording as nr
    except ImportError:
        raise InputError(
            f"{folder}: reading native Neon recordings needs the optional extra: pip install 'streamdp[neon]'"
        ) from None
    # pupil-labs-neon-recording 2.1 reads each stream with open(...).read() and never closes the
    # file; CPython finalizes it at once, so the warning is raised (and ignored) right here
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        try:
            rec = nr.load(str(folder))
        except Exception as exc:  # the reader raises its own types for every kind of broken folder
            raise InputError(f"{folder}: cannot open Neon recording: {exc}") from None
        try:
            t, x, y, valid, diam, unit, blinks = _neon_streams(rec, folder, scene_size)
        finally:
            rec.close()
            gc.collect()
    gaze = GazeBatch.from_arrays(
        t=t,
        x=np.where(valid, x, np.nan),
        y=np.where(valid, y, np.nan),
        diameter=diam,
        eye_id=np.full(t.shape[0], BINOCULAR),
        valid=valid,
        diameter_unit=unit,
        source=str(folder),
    )
    return Recording(gaze=gaze, blinks=blinks, name=Path(folder).name, wall_clock_offset=0.0, camera="neon")


def read_neon_cloud_export(folder: Path, scene_size: tuple[float, float] = NEON_SCENE_SIZE) -> Recording:
    """A Pupil Cloud timeseries export: ``gaze.csv`` (ns, px, worn), ``3d_eye_states.csv`` for pupil
    diameters (mm) and ``blinks.csv`` when present."""
    folder = Path(folder)
    gaze_csv = folder / "gaze.csv"
    header, rows = _read_csv(gaze_csv, ("timestamp [ns]", "gaze x [px]", "gaze y [px]"))
    if not rows:
        raise InputError(f"{gaze_csv}: no gaze rows")
    j = header.index("timestamp [ns]")
    try:
        t_ns = np.array([int(r[j]) for r in rows], dtype=np.int64)
    except (ValueError, IndexError):
        bad = next(i for i, r in enumerate(rows) if not (len(r) > j and r[j].lstrip("-").isdigit()))
        raise InputError(f"{gaze_csv}: row {bad + 2}, column timestamp [ns]: not an integer") from None
    px = _column(gaze_csv, header, rows, "gaze x [px]")
    py = _column(gaze_csv, header, rows, "gaze y [px]")
    valid = np.isfinite(px) & np.isfinite(py)
    if "worn" in header:
        worn = _column(gaze_csv, header, rows, "worn")
        valid &= worn > 0
    x, y = normalize_scene_pixels(px, py, scene_size)
    diam = np.full(t_ns.shape[0], np.nan)
    unit: DiameterUnit = "none"
    eye_csv = folder / "3d_eye_states.csv"
    if eye_csv.exists():
        eh, er = _read_csv(eye_csv, ("timestamp [ns]", "pupil diameter left [mm]", "pupil diameter right [mm]"))
        je = eh.index("timestamp [ns]")
        et = np.array([int(r[je]) for r in er], dtype=np.int64)
        left = _column(eye_csv, eh, er, "pupil diameter left [mm]")
        right = _column(eye_csv, eh, er, "pupil diameter right [mm]")
        both = np.nanmean(np.vstack([left, right]), axis=0) if len(er) else np.empty(0)
        ok = np.isfinite(both)
        if ok.sum() >= 2:
            diam = np.interp(t_ns, et[ok], both[ok], left=np.nan, right=np.nan)
            unit = "mm"
    blinks = None
    blinks_csv = folder / "blinks.csv"
    if blinks_csv.exists():
        bh, br = _read_csv(blinks_csv, ("start timestamp [ns]", "end timestamp [ns]"))
        s = _column(blinks_csv, bh, br, "start timestamp [ns]")
        e = _column(blinks_csv, bh, br, "end timestamp [ns]")
        _check_numbers(blinks_csv, "start timestamp [ns]", s)
        _check_numbers(blinks_csv, "end timestamp [ns]", e)
        blinks = BlinkEvents.from_arrays(s * _NS, e * _NS)
    order = np.argsort(t_ns, kind="stable")
    gaze = GazeBatch.from_arrays(
        t=t_ns[order] * _NS,
        x=np.where(valid, x, np.nan)[order],
        y=np.where(valid, y, np.nan)[order],
        diameter=diam[order],
        eye_id=np.full(t_ns.shape[0], BINOCULAR),
        valid=valid[order],
        diameter_unit=unit,
        source=str(gaze_csv),
    )
    return Recording(gaze=gaze, blinks=blinks, name=folder.name, wall_clock_offset=0.0, camera="neon")
