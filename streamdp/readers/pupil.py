"""Pupil Core: recording folders (``.pldata`` + ``_timestamps.npy``) and Pupil Player CSV exports.

Pupil time is kept as is. ``Recording.wall_clock_offset`` converts it to Unix time
(``start_time_system_s - start_time_synced_s`` from ``info.player.json``) where the folder has it.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import BINOCULAR, BlinkEvents, GazeBatch, Recording
from ..pupil_wire import BlinkPairing, gaze_from_datums

#: msgpack ExtType code Pupil uses for nested serialized dicts
_SERIALIZED_DICT = 13


def _ext_hook(code: int, data: bytes) -> Any:
    if code == _SERIALIZED_DICT:
        return msgpack.unpackb(data, raw=False, use_list=False, strict_map_key=False, ext_hook=_ext_hook)
    return msgpack.ExtType(code, data)


def iter_pldata(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(topic, datum)`` from a ``.pldata`` file: msgpack pairs whose second element is the
    msgpack of the datum (Player nests serialized dicts as ExtType 13).

    Raises
    ------
    InputError
        The file is truncated or corrupt; the message gives the byte offset and record number.
    """
    with open(path, "rb") as fh:
        unpacker = msgpack.Unpacker(fh, raw=False, use_list=False, strict_map_key=False, ext_hook=_ext_hook)
        index = 0
        while True:
            offset = unpacker.tell()
            try:
                item = unpacker.unpack()
            except msgpack.OutOfData:
                if fh.read(1) or unpacker.tell() != offset:
                    raise InputError(f"{path}: truncated record {index} at byte {offset}") from None
                return
            except (msgpack.UnpackException, ValueError) as exc:
                raise InputError(f"{path}: corrupt record {index} at byte {offset}: {exc}") from None
            if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
                raise InputError(f"{path}: record {index} at byte {offset} is not a (topic, payload) pair")
            topic, payload = item
            if isinstance(payload, bytes):
                try:
                    datum = msgpack.unpackb(
                        payload, raw=False, use_list=False, strict_map_key=False, ext_hook=_ext_hook
                    )
                except (msgpack.UnpackException, ValueError) as exc:
                    raise InputError(f"{path}: corrupt payload of record {index} at byte {offset}: {exc}") from None
            else:
                datum = payload
            if not isinstance(datum, dict):
                raise InputError(f"{path}: record {index} at byte {offset} holds a {type(datum).__name__}, not a datum")
            yield topic, datum
            index += 1


def read_pldata_gaze(path: Path) -> GazeBatch:
    """Gaze from a ``.pldata`` file, checked against its ``_timestamps.npy`` when present."""
    path = Path(path)
    datums = [
        d for topic, d in iter_pldata(path) if topic.startswith("gaze") or str(d.get("topic", "")).startswith("gaze")
    ]
    batch = gaze_from_datums(datums, str(path))
    ts_path = path.with_name(path.stem + "_timestamps.npy")
    if ts_path.exists():
        ts = np.load(ts_path)
        if ts.shape[0] != len(datums):
            raise InputError(
                f"{ts_path}: holds {ts.shape[0]} timestamps but {path.name} holds {len(datums)} gaze datums"
            )
    return batch


def _pldata_blinks(path: Path) -> BlinkEvents:
    """Blinks from ``blinks.pldata``: Capture's onset/offset datums, or Player's whole blinks."""
    pairing = BlinkPairing()
    found = [pairing.add(d, f"{path} datum {i}") for i, (_, d) in enumerate(iter_pldata(path))]
    blinks = [b for b in found if b is not None]
    return BlinkEvents.from_arrays([b[0] for b in blinks], [b[1] for b in blinks])


def read_pupil_recording(folder: Path) -> Recording:
    """A Pupil Capture recording folder: ``info.player.json``, ``gaze.pldata`` (or gaze mapped
    offline by Player under ``offline_data/gaze-mappings/`` when the recording has none), and
    ``blinks.pldata`` when the blink detector ran."""
    folder = Path(folder)
    info_path = folder / "info.player.json"
    offset = None
    if info_path.exists():
        try:
            info = json.loads(info_path.read_text())
            offset = float(info["start_time_system_s"]) - float(info["start_time_synced_s"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{info_path}: cannot read start_time_system_s/start_time_synced_s: {exc}") from None
    gaze_path = folder / "gaze.pldata"
    gaze = read_pldata_gaze(gaze_path) if gaze_path.exists() else None
    if gaze is None or len(gaze) == 0:
        mapped = sorted((folder / "offline_data" / "gaze-mappings").glob("*.pldata"))
        if mapped:
            gaze = GazeBatch.concat([read_pldata_gaze(p) for p in mapped])
            order = np.argsort(gaze.t, kind="stable")
            gaze = GazeBatch.from_arrays(
                t=gaze.t[order],
                x=gaze.x[order],
                y=gaze.y[order],
                confidence=gaze.confidence[order],
                diameter=gaze.diameter[order],
                eye_id=gaze.eye_id[order],
                diameter_unit=gaze.diameter_unit,
                source=str(folder / "offline_data" / "gaze-mappings"),
            )
    if gaze is None:
        raise InputError(f"{folder}: no gaze.pldata and no offline gaze mapping in offline_data/gaze-mappings/")
    if len(gaze) == 0:
        raise InputError(f"{folder}: the recording holds no gaze")
    blinks_path = folder / "blinks.pldata"
    blinks = _pldata_blinks(blinks_path) if blinks_path.exists() else None
    return Recording(gaze=gaze, blinks=blinks, name=folder.name, wall_clock_offset=offset)


# ---------------------------------------------------------------- Pupil Player CSV exports


def _read_csv(path: Path, required: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
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


def _column(
    path: Path, header: list[str], rows: list[list[str]], name: str, optional: bool = False
) -> NDArray[np.float64]:
    if name not in header:
        if optional:
            return np.full(len(rows), np.nan)
        raise InputError(f"{path}: missing column {name}")
    j = header.index(name)
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        try:
            cell = r[j]
        except IndexError:
            raise InputError(f"{path}: row {i + 2} has {len(r)} fields, column {name} is field {j + 1}") from None
        if cell == "":
            out[i] = np.nan
            continue
        try:
            out[i] = float(cell)
        except ValueError:
            raise InputError(f"{path}: row {i + 2}, column {name}: {cell!r} is not a number") from None
    return out


def _check_numbers(path: Path, name: str, values: NDArray[np.float64]) -> None:
    bad = ~np.isfinite(values)
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0]) + 2
        raise InputError(f"{path}: row {row}, column {name}: missing or not a finite number")


def _pupil_diameter_at(pupil_csv: Path, t: NDArray[np.float64]) -> tuple[NDArray[np.float64], str]:
    """Pupil diameter at gaze times from a ``pupil_positions.csv`` beside the gaze export: each eye's
    3d-model diameter (mm; px where absent) interpolated to the gaze times, averaged over eyes."""
    header, rows = _read_csv(pupil_csv, ("pupil_timestamp", "eye_id", "confidence", "diameter"))
    pt = _column(pupil_csv, header, rows, "pupil_timestamp")
    eye = _column(pupil_csv, header, rows, "eye_id")
    conf = _column(pupil_csv, header, rows, "confidence")
    d3 = _column(pupil_csv, header, rows, "diameter_3d", optional=True)
    d2 = _column(pupil_csv, header, rows, "diameter")
    use_mm = bool(np.any(np.isfinite(d3)))
    d = d3 if use_mm else d2
    per_eye = []
    for e in (0, 1):
        m = (eye == e) & np.isfinite(d) & (conf >= 0.6) & np.isfinite(pt)
        if m.sum() < 2:
            continue
        order = np.argsort(pt[m], kind="stable")
        per_eye.append(np.interp(t, pt[m][order], d[m][order], left=np.nan, right=np.nan))
    if not per_eye:
        return np.full(t.shape[0], np.nan), "none"
    stack = np.vstack(per_eye)
    with np.errstate(invalid="ignore"):
        counts = np.isfinite(stack).sum(axis=0)
        mean = np.where(counts > 0, np.nansum(stack, axis=0) / np.maximum(counts, 1), np.nan)
    return mean, "mm" if use_mm else "px"


def read_gaze_positions_csv(path: Path) -> GazeBatch:
    """Player's ``gaze_positions.csv`` (pupil diameters from a ``pupil_positions.csv`` beside it)."""
    path = Path(path)
    header, rows = _read_csv(path, ("gaze_timestamp", "confidence", "norm_pos_x", "norm_pos_y"))
    if not rows:
        raise InputError(f"{path}: no gaze rows")
    t = _column(path, header, rows, "gaze_timestamp")
    _check_numbers(path, "gaze_timestamp", t)
    conf = _column(path, header, rows, "confidence")
    _check_numbers(path, "confidence", conf)
    x = _column(path, header, rows, "norm_pos_x")
    y = _column(path, header, rows, "norm_pos_y")
    valid = np.isfinite(x) & np.isfinite(y)
    order = np.argsort(t, kind="stable")
    pupil_csv = path.with_name("pupil_positions.csv")
    if pupil_csv.exists():
        diam, unit = _pupil_diameter_at(pupil_csv, t)
    else:
        diam, unit = np.full(t.shape[0], np.nan), "none"
    bad_conf = (conf < 0) | (conf > 1)
    if np.any(bad_conf):
        row = int(np.flatnonzero(bad_conf)[0]) + 2
        raise InputError(f"{path}: row {row}, column confidence: {conf[row - 2]!r} is outside [0, 1]")
    return GazeBatch.from_arrays(
        t=t[order],
        x=x[order],
        y=y[order],
        confidence=conf[order],
        diameter=diam[order],
        eye_id=np.full(t.shape[0], BINOCULAR),
        valid=valid[order],
        diameter_unit=unit,  # type: ignore[arg-type]
        source=str(path),
    )


def read_pupil_positions_csv(path: Path, eye_id: int | None = None) -> GazeBatch:
    """Player's ``pupil_positions.csv`` as the signal: eye-camera pupil position of one eye (the
    MPIIDPEye signal). Rows of the 3d detector are used where present (Player exports each pupil
    datum once per detector), else the 2d ones. ``eye_id`` None picks the eye with more samples."""
    path = Path(path)
    header, rows = _read_csv(path, ("pupil_timestamp", "eye_id", "confidence", "norm_pos_x", "norm_pos_y", "diameter"))
    if not rows:
        raise InputError(f"{path}: no pupil rows")
    t = _column(path, header, rows, "pupil_timestamp")
    _check_numbers(path, "pupil_timestamp", t)
    eye = _column(path, header, rows, "eye_id")
    if "method" in header:
        j = header.index("method")
        method = np.array([r[j] if j < len(r) else "" for r in rows])
        is3d = np.char.find(method.astype(str), "3d") >= 0
        keep = is3d if np.any(is3d) else ~is3d
    else:
        keep = np.ones(len(rows), dtype=bool)
    if eye_id is None:
        eyes, counts = np.unique(eye[keep], return_counts=True)
        eye_id = int(eyes[np.argmax(counts)])
    keep &= eye == eye_id
    if not np.any(keep):
        raise InputError(f"{path}: no rows for eye {eye_id}")
    conf = _column(path, header, rows, "confidence")[keep]
    d3 = _column(path, header, rows, "diameter_3d", optional=True)[keep]
    d2 = _column(path, header, rows, "diameter")[keep]
    use_mm = bool(np.any(np.isfinite(d3)))
    x = _column(path, header, rows, "norm_pos_x")[keep]
    y = _column(path, header, rows, "norm_pos_y")[keep]
    tt = t[keep]
    order = np.argsort(tt, kind="stable")
    return GazeBatch.from_arrays(
        t=tt[order],
        x=x[order],
        y=y[order],
        confidence=np.clip(conf[order], 0.0, 1.0),
        diameter=(d3 if use_mm else d2)[order],
        eye_id=np.full(tt.shape[0], eye_id),
        diameter_unit="mm" if use_mm else "px",
        source=f"{path} (eye {eye_id})",
    )


def read_blinks_csv(path: Path) -> BlinkEvents:
    """Player's ``blinks.csv``: ``start_timestamp``, ``end_timestamp`` in Pupil time."""
    path = Path(path)
    header, rows = _read_csv(path, ("start_timestamp", "end_timestamp"))
    s = _column(path, header, rows, "start_timestamp")
    e = _column(path, header, rows, "end_timestamp")
    _check_numbers(path, "start_timestamp", s)
    _check_numbers(path, "end_timestamp", e)
    try:
        return BlinkEvents.from_arrays(s, e)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


def read_fixations_csv(path: Path) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Player's ``fixations.csv`` as (start, end) in Pupil time; its duration column is in ms."""
    path = Path(path)
    header, rows = _read_csv(path, ("start_timestamp", "duration"))
    s = _column(path, header, rows, "start_timestamp")
    d = _column(path, header, rows, "duration")
    _check_numbers(path, "start_timestamp", s)
    _check_numbers(path, "duration", d)
    return s, s + d / 1000.0


def read_player_export(path: Path) -> Recording:
    """A Player export folder (or its ``gaze_positions.csv``), with ``blinks.csv`` when present."""
    path = Path(path)
    gaze_csv = path / "gaze_positions.csv" if path.is_dir() else path
    if not gaze_csv.exists():
        raise InputError(f"{path}: no gaze_positions.csv")
    gaze = read_gaze_positions_csv(gaze_csv)
    blinks_csv = gaze_csv.with_name("blinks.csv")
    blinks = read_blinks_csv(blinks_csv) if blinks_csv.exists() else None
    return Recording(gaze=gaze, blinks=blinks, name=gaze_csv.parent.name or gaze_csv.stem)
