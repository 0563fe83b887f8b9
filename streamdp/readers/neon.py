"""Neon (and Invisible) recordings: native recordings through the optional ``neon`` extra
(``pupil-labs-neon-recording``) and Pupil Cloud CSV exports.

Neon gives gaze in scene-camera pixels; streamdp normalizes it by the scene camera size with the
origin at the bottom left, as Pupil Core's ``norm_pos``. Timestamps are UTC nanoseconds on the
device and become seconds (float64 keeps ~0.2 µs at today's epoch). Samples taken while the
headset was not worn are marked invalid. Neon reports no confidence: valid samples get 1.0.

A native recording's streams are checked file by file before the library reads them, because it
pairs a data file with its timestamps up to the shorter of the two and so would read a truncated
file as a shorter stream. Gaze and worn are required. The pupil (``eye_state``) and blink streams
are optional: a recording without them is read with a logged warning, pupil diameters NaN in unit
``"none"`` and ``blinks`` None; a stream that is present but damaged is refused.
"""

from __future__ import annotations

import ast
import gc
import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import BINOCULAR, BlinkEvents, DiameterUnit, GazeBatch, Recording
from ._checks import check_overlap, check_sampling_rate, check_time_order, require_valid_gaze
from ._csv import check_numbers, read_csv

log = logging.getLogger(__name__)

#: Neon scene camera resolution (px); Invisible's is 1088 × 1080
NEON_SCENE_SIZE = (1600.0, 1200.0)
INVISIBLE_SCENE_SIZE = (1088.0, 1080.0)
_NS = 1e-9
_F64 = NDArray[np.float64]
#: bytes per record of the streams read, where the folder has no ``<name>.dtype`` for a data file:
#: the layouts pupil-labs-neon-recording 2.x falls back to (gaze x, y float32; worn uint8; eye
#: state 14 float32; blinks start, end int64)
_FALLBACK_RECORD_SIZE = {"gaze": 8, "worn": 1, "eye_state": 56, "blinks": 16}
_TIME_RECORD_SIZE = 8


def normalize_scene_pixels(
    px: NDArray[np.float64], py: NDArray[np.float64], size: tuple[float, float]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Scene-camera pixels (origin top-left) to Pupil's normalized coordinates (origin
    bottom-left): one rule for recorded and live Neon gaze."""
    return px / size[0], 1.0 - py / size[1]


# ---------------------------------------------------------------- native recordings


def _part(stem: str, base: str) -> int:
    digits = stem[len(base) + 3 :]
    return int(digits) if digits.isdigit() else -1


def _stream_files(folder: Path, base: str) -> list[tuple[Path, Path]]:
    """A stream's (data, time) file pairs as the library picks them: the 200 Hz files of gaze and
    worn where present, else the parts ``<base> ps<N>.raw`` (worn takes gaze's ``.time``)."""
    if base in ("gaze", "worn"):
        raw, time = folder / f"{base}_200hz.raw", folder / "gaze_200hz.time"
        if raw.exists() and time.exists():
            return [(raw, time)]
    time_base = "gaze" if base == "worn" else base
    pairs = [
        (raw, folder / f"{time_base} ps{raw.stem[len(base) + 3 :]}.time") for raw in folder.glob(f"{base} ps*.raw")
    ]
    return sorted(pairs, key=lambda pair: _part(pair[0].stem, base))


def _record_size(raw: Path, base: str) -> int:
    dtype_file = raw.with_name(raw.stem.split(" ps")[0] + ".dtype")
    if not dtype_file.exists():
        return _FALLBACK_RECORD_SIZE[base]
    try:
        return int(np.dtype(ast.literal_eval(dtype_file.read_text())).itemsize)
    except (ValueError, TypeError, SyntaxError) as exc:
        raise InputError(f"{dtype_file}: not a record layout: {exc}") from None


def _check_stream_files(pairs: list[tuple[Path, Path]], base: str) -> None:
    """Every data file holds whole records, as many as its time file holds timestamps."""
    for raw, time in pairs:
        if not time.exists():
            raise InputError(f"{raw}: no {time.name} beside it: the recording is incomplete")
        t_bytes = time.stat().st_size
        if t_bytes % _TIME_RECORD_SIZE:
            raise InputError(f"{time}: {t_bytes} bytes, not whole 8-byte timestamps: the file is truncated")
        size = _record_size(raw, base)
        r_bytes = raw.stat().st_size
        if r_bytes % size:
            raise InputError(f"{raw}: {r_bytes} bytes, not whole {size}-byte records: the file is truncated")
        if r_bytes // size != t_bytes // _TIME_RECORD_SIZE:
            raise InputError(
                f"{raw}: holds {r_bytes // size} records but {time.name} holds {t_bytes // _TIME_RECORD_SIZE} "
                "timestamps: one of them is truncated"
            )


def _load(rec: Any, attr: str, folder: Path, pairs: list[tuple[Path, Path]]) -> Any:
    try:
        return getattr(rec, attr)
    except Exception as exc:  # the library wraps whatever a broken file raises in its SensorError
        files = ", ".join(sorted({p.name for pair in pairs for p in pair}))
        raise InputError(f"{folder}: cannot read the {attr} stream ({files}): {exc.__cause__ or exc}") from None


def _gaze(rec: Any, folder: Path, scene_size: tuple[float, float]) -> tuple[NDArray[np.int64], _F64, _F64, _F64]:
    pairs = _stream_files(folder, "gaze")
    if not pairs:
        raise InputError(f"{folder}: no gaze stream (gaze_200hz.raw or gaze ps1.raw)")
    _check_stream_files(pairs, "gaze")
    g = _load(rec, "gaze", folder, pairs)
    t_ns = np.asarray(g.time, dtype=np.int64)
    xy = np.asarray(g.point, dtype=np.float64).reshape(-1, 2)
    if t_ns.shape[0] == 0:
        raise InputError(f"{folder}: the recording holds no gaze")
    where = f"{folder}, gaze times ({pairs[0][1].name})"
    check_sampling_rate(where, t_ns, unit="ns")
    t = (t_ns * _NS).astype(np.float64)
    check_time_order(where, t, first_row=0, noun="sample")
    x, y = normalize_scene_pixels(xy[:, 0], xy[:, 1], scene_size)
    return t_ns, t, x, y


def _worn(rec: Any, folder: Path, t_ns: NDArray[np.int64]) -> NDArray[np.bool_]:
    pairs = _stream_files(folder, "worn")
    if not pairs:
        raise InputError(
            f"{folder}: no worn stream (worn_200hz.raw or worn ps1.raw): gaze taken while the headset was off "
            "cannot be told from real gaze"
        )
    _check_stream_files(pairs, "worn")
    worn = _load(rec, "worn", folder, pairs)
    wt = np.asarray(worn.time, dtype=np.int64)
    wv = np.asarray(worn.data["worn"], dtype=np.float64)
    if wt.shape[0] == 0:
        raise InputError(f"{folder}: the worn stream ({pairs[0][0].name}) is empty")
    check_time_order(f"{folder}, worn times ({pairs[0][1].name})", wt * _NS, first_row=0, noun="sample")
    idx = np.clip(np.searchsorted(wt, t_ns, side="right") - 1, 0, wt.shape[0] - 1)
    return wv[idx] > 0


def _mean_of_eyes(left: _F64, right: _F64) -> _F64:
    """Per sample, the mean of the eyes' diameters that are > 0; NaN where neither is."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a sample with neither eye: NaN, as meant
        return np.nanmean(np.vstack([np.where(left > 0, left, np.nan), np.where(right > 0, right, np.nan)]), axis=0)


def _pupil(rec: Any, folder: Path, t_ns: NDArray[np.int64]) -> tuple[_F64, DiameterUnit]:
    unknown = np.full(t_ns.shape[0], np.nan)
    pairs = _stream_files(folder, "eye_state")
    if not pairs:
        log.warning("%s: no eye_state stream: pupil diameters unknown (NaN, unit 'none')", folder)
        return unknown, "none"
    _check_stream_files(pairs, "eye_state")
    p = _load(rec, "pupil", folder, pairs)
    pt = np.asarray(p.time, dtype=np.int64)
    where = f"{folder}, eye state times ({pairs[0][1].name})"
    check_sampling_rate(where, pt, unit="ns")
    check_time_order(where, pt * _NS, first_row=0, noun="sample")
    left = np.asarray(p.data["diameter_left"], dtype=np.float64)
    right = np.asarray(p.data["diameter_right"], dtype=np.float64)
    both = _mean_of_eyes(left, right)
    ok = np.isfinite(both)
    if ok.sum() < 2:
        log.warning("%s: the eye_state stream holds no pupil diameter: diameters unknown (NaN, unit 'none')", folder)
        return unknown, "none"
    seen = pt[ok] * _NS
    check_overlap(f"{folder}/{pairs[0][0].name}", "pupil samples", seen, seen, (t_ns * _NS).astype(np.float64))
    return np.interp(t_ns, pt[ok], both[ok], left=np.nan, right=np.nan), "mm"


def _blinks(rec: Any, folder: Path, t: _F64) -> BlinkEvents | None:
    pairs = _stream_files(folder, "blinks")
    if not pairs:
        log.info("%s: no blinks stream: the recording gives no blinks", folder)
        return None
    _check_stream_files(pairs, "blinks")
    b = _load(rec, "blinks", folder, pairs)
    blinks = BlinkEvents.from_arrays(
        np.asarray(b.data["start_time"], dtype=np.int64) * _NS,
        np.asarray(b.data["stop_time"], dtype=np.int64) * _NS,
    )
    check_overlap(f"{folder}/{pairs[0][0].name}", "blinks", blinks.start, blinks.end, t)
    return blinks


def read_neon_native(folder: Path, scene_size: tuple[float, float] = NEON_SCENE_SIZE) -> Recording:
    """A native Neon recording folder, read with ``pupil_labs.neon_recording``.

    Raises
    ------
    InputError
        The ``neon`` extra is not installed; the gaze or worn stream is missing; any stream read
        is truncated or cannot be loaded (the message names its files); timestamps go backwards
        or have no plausible sampling rate; no gaze was taken while the headset was worn.
    """
    folder = Path(folder)
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
            t_ns, t, x, y = _gaze(rec, folder, scene_size)
            valid = np.isfinite(x) & np.isfinite(y) & _worn(rec, folder, t_ns)
            diam, unit = _pupil(rec, folder, t_ns)
            blinks = _blinks(rec, folder, t)
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
    require_valid_gaze(gaze, str(folder))
    return Recording(gaze=gaze, blinks=blinks, name=folder.name, wall_clock_offset=0.0, camera="neon")


# ---------------------------------------------------------------- Pupil Cloud exports


def _cloud_diameters(eye_csv: Path, t_ns: _F64) -> tuple[_F64, DiameterUnit]:
    table = read_csv(eye_csv, ("timestamp [ns]", "pupil diameter left [mm]", "pupil diameter right [mm]"), wanted=())
    unknown = np.full(t_ns.shape[0], np.nan)
    if not len(table):
        log.warning("%s: no rows: pupil diameters unknown (NaN, unit 'none')", eye_csv)
        return unknown, "none"
    et = table.ns_column("timestamp [ns]")
    where = f"{eye_csv}, column timestamp [ns]"
    check_sampling_rate(where, et, unit="ns")
    check_time_order(where, et * _NS)
    left = table.column("pupil diameter left [mm]")
    right = table.column("pupil diameter right [mm]")
    both = _mean_of_eyes(left, right)
    ok = np.isfinite(both)
    if ok.sum() < 2:
        log.warning("%s: holds no pupil diameter: diameters unknown (NaN, unit 'none')", eye_csv)
        return unknown, "none"
    check_overlap(str(eye_csv), "pupil samples", et[ok] * _NS, et[ok] * _NS, t_ns * _NS)
    return np.interp(t_ns, et[ok], both[ok], left=np.nan, right=np.nan), "mm"


def read_neon_cloud_export(folder: Path, scene_size: tuple[float, float] = NEON_SCENE_SIZE) -> Recording:
    """A Pupil Cloud timeseries export: ``gaze.csv`` (ns, px, worn), ``3d_eye_states.csv`` for pupil
    diameters (mm) and ``blinks.csv`` when present.

    Raises
    ------
    InputError
        A missing column or bad cell; timestamps that go backwards or are not nanoseconds (the
        message says which unit they look like); no worn gaze; pupil samples or blinks that do not
        overlap the gaze.
    """
    folder = Path(folder)
    gaze_csv = folder / "gaze.csv"
    table = read_csv(gaze_csv, ("timestamp [ns]", "gaze x [px]", "gaze y [px]"), wanted=("worn",))
    if not len(table):
        raise InputError(f"{gaze_csv}: no gaze rows")
    t_ns = table.ns_column("timestamp [ns]")
    where = f"{gaze_csv}, column timestamp [ns]"
    check_sampling_rate(where, t_ns, unit="ns")
    t = t_ns * _NS
    check_time_order(where, t)
    px = table.column("gaze x [px]")
    py = table.column("gaze y [px]")
    valid = np.isfinite(px) & np.isfinite(py)
    if "worn" in table.header:
        valid &= table.column("worn") > 0
    x, y = normalize_scene_pixels(px, py, scene_size)
    eye_csv = folder / "3d_eye_states.csv"
    if eye_csv.exists():
        diam, unit = _cloud_diameters(eye_csv, t_ns)
    else:
        log.warning("%s: no 3d_eye_states.csv: pupil diameters unknown (NaN, unit 'none')", folder)
        diam, unit = np.full(t.shape[0], np.nan), "none"
    gaze = GazeBatch.from_arrays(
        t=t,
        x=np.where(valid, x, np.nan),
        y=np.where(valid, y, np.nan),
        diameter=diam,
        eye_id=np.full(t.shape[0], BINOCULAR),
        valid=valid,
        diameter_unit=unit,
        source=str(gaze_csv),
    )
    require_valid_gaze(gaze, str(gaze_csv))
    blinks = None
    blinks_csv = folder / "blinks.csv"
    if blinks_csv.exists():
        table = read_csv(blinks_csv, ("start timestamp [ns]", "end timestamp [ns]"), wanted=())
        s = table.column("start timestamp [ns]")
        e = table.column("end timestamp [ns]")
        check_numbers(blinks_csv, "start timestamp [ns]", s)
        check_numbers(blinks_csv, "end timestamp [ns]", e)
        blinks = BlinkEvents.from_arrays(s * _NS, e * _NS)
        check_overlap(str(blinks_csv), "blinks", blinks.start, blinks.end, t)
    return Recording(gaze=gaze, blinks=blinks, name=folder.name, wall_clock_offset=0.0, camera="neon")
