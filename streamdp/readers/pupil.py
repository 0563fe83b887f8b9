"""Pupil Core recording folders: ``.pldata`` + ``_timestamps.npy`` as Capture writes them, and gaze
mapped offline by Player. (Player's CSV exports: :mod:`streamdp.readers.player`.)

Pupil time is kept as is. ``Recording.wall_clock_offset`` converts it to Unix time
(``start_time_system_s - start_time_synced_s`` from ``info.player.json``) where the folder has it.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import numpy as np

from ..errors import InputError
from ..gaze import BlinkEvents, DiameterUnit, GazeBatch, GazeColumns, Recording, choose_diameter_unit
from ..pupil_wire import BlinkPairing
from ._checks import (
    PLDATA_REORDER_TOLERANCE,
    check_overlap,
    check_sampling_rate,
    check_time_order,
    require_valid_gaze,
)
from ._pldata_blocks import BLOCK_BYTES, GazeBlock, iter_gaze_blocks
from ._pldata_layout import SERIALIZED_DICT


def _ext_hook(code: int, data: bytes) -> Any:
    if code == SERIALIZED_DICT:
        return msgpack.unpackb(data, raw=False, use_list=False, strict_map_key=False, ext_hook=_ext_hook)
    return msgpack.ExtType(code, data)


def _decode_payload(payload: bytes) -> Any:
    return msgpack.unpackb(payload, raw=False, use_list=False, strict_map_key=False, ext_hook=_ext_hook)


def _records(fh: BinaryIO, path: Path, start: int = 0, index: int = 0) -> Iterator[tuple[str, dict[str, Any]]]:
    """The checked reading of the records of ``fh`` from byte ``start`` (record ``index``) on."""
    unpacker = msgpack.Unpacker(fh, raw=False, use_list=False, strict_map_key=False, ext_hook=_ext_hook)
    while True:
        at = unpacker.tell()
        offset = start + at
        try:
            item = unpacker.unpack()
        except msgpack.OutOfData:
            if fh.read(1) or unpacker.tell() != at:
                raise InputError(f"{path}: truncated record {index} at byte {offset}") from None
            return
        except (msgpack.UnpackException, ValueError) as exc:
            raise InputError(f"{path}: corrupt record {index} at byte {offset}: {exc}") from None
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)):
            raise InputError(f"{path}: record {index} at byte {offset} is not a (topic, payload) pair")
        topic, payload = item
        if isinstance(payload, bytes):
            try:
                datum = _decode_payload(payload)
            except (msgpack.UnpackException, ValueError) as exc:
                raise InputError(f"{path}: corrupt payload of record {index} at byte {offset}: {exc}") from None
        else:
            datum = payload
        if not isinstance(datum, dict):
            raise InputError(f"{path}: record {index} at byte {offset} holds a {type(datum).__name__}, not a datum")
        yield topic, datum
        index += 1


def iter_pldata(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield ``(topic, datum)`` from a ``.pldata`` file: msgpack pairs whose second element is the
    msgpack of the datum (Player nests serialized dicts as ExtType 13).

    Raises
    ------
    InputError
        The file is truncated or corrupt; the message gives the byte offset and record number.
    """
    with open(path, "rb") as fh:
        yield from _records(fh, Path(path))


def _is_gaze(topic: str, datum: dict[str, Any]) -> bool:
    return topic.startswith("gaze") or str(datum.get("topic", "")).startswith("gaze")


def iter_pldata_gaze_columns(path: Path, *, block_bytes: int = BLOCK_BYTES) -> Iterator[GazeBlock]:
    """The gaze of a ``.pldata`` file as columns, a block of the file at a time, in file order:
    memory bounded by ``block_bytes`` whatever the file's length, no Python object per datum
    for the datums Capture writes (see :mod:`streamdp.readers._pldata_blocks`). Unchecked for
    time order and sampling rate (:func:`read_pldata_gaze` and :func:`iter_pldata_gaze` check).

    Raises
    ------
    InputError
        A damaged record or a bad gaze datum, as :func:`iter_pldata` and
        :func:`~streamdp.pupil_wire.gaze_from_datums` word it (file, record and byte offset, or
        datum index and field).

    Examples
    --------
    >>> import msgpack, tempfile, pathlib
    >>> d = {"topic": "gaze.3d.01.", "timestamp": 1.5, "confidence": 0.9, "norm_pos": [0.4, 0.6]}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "gaze.pldata"
    >>> _ = path.write_bytes(msgpack.packb(("gaze", msgpack.packb(d))) * 3)
    >>> [(len(b.columns), b.unit, b.columns.t.tolist()) for b in iter_pldata_gaze_columns(path)]
    [(3, 'mm', [1.5, 1.5, 1.5])]
    """
    path = Path(path)

    def read_record(record: bytes, offset: int, index: int) -> tuple[str, Any]:
        return next(_records(io.BytesIO(record), path, offset, index))

    return iter_gaze_blocks(path, read_record, _decode_payload, block_bytes=block_bytes)


def _gaze_in_file_order(path: Path, block_bytes: int) -> tuple[GazeColumns, DiameterUnit | None]:
    blocks: list[GazeColumns] = []
    unit: DiameterUnit | None = None
    try:
        for block in iter_pldata_gaze_columns(path, block_bytes=block_bytes):
            blocks.append(block.columns)
            unit = unit or block.unit
    except InputError:
        # a damaged record anywhere in the file is reported before a bad datum, as ever
        for _ in iter_pldata(path):
            pass
        raise
    return GazeColumns.concat(blocks), unit


def read_pldata_gaze(path: Path, *, block_bytes: int = BLOCK_BYTES) -> GazeBatch:
    """Gaze from a ``.pldata`` file in time order, checked against its ``_timestamps.npy`` when
    present. Datums up to :data:`~streamdp.readers._checks.PLDATA_REORDER_TOLERANCE` behind an
    earlier one are Capture's interleaving of monocular and binocular gaze, and are sorted.

    Raises
    ------
    InputError
        The file is damaged or holds a bad datum; the timestamps file holds another count; the
        sampling rate is implausible (timestamps in ms, say); a datum lies farther back in time;
        or no datum has a confidence above 0. A file without gaze gives an empty batch.
    """
    path = Path(path)
    cols, unit = _gaze_in_file_order(path, block_bytes)
    in_file_order = cols.t
    sorted_cols = cols.take(np.argsort(cols.t, kind="stable"))
    unit = unit or choose_diameter_unit(sorted_cols.diameter_mm, sorted_cols.diameter_px) or "none"
    batch = sorted_cols.to_batch(unit, str(path))
    ts_path = path.with_name(path.stem + "_timestamps.npy")
    if ts_path.exists():
        ts = np.load(ts_path, mmap_mode="r")
        if ts.shape[0] != len(cols):
            raise InputError(f"{ts_path}: holds {ts.shape[0]} timestamps but {path.name} holds {len(cols)} gaze datums")
    if len(batch) == 0:
        return batch
    check_sampling_rate(f"{path}, field timestamp", in_file_order)
    check_time_order(str(path), in_file_order, first_row=0, noun="datum", tolerance=PLDATA_REORDER_TOLERANCE)
    require_valid_gaze(batch, str(path))
    return batch


def _pldata_blinks(path: Path) -> BlinkEvents:
    """Blinks from ``blinks.pldata``: Capture's onset/offset datums, or Player's whole blinks."""
    pairing = BlinkPairing()
    found = [pairing.add(d, f"{path} datum {i}") for i, (_, d) in enumerate(iter_pldata(path))]
    found.append(pairing.flush())
    blinks = [b for b in found if b is not None]
    return BlinkEvents.from_arrays([b[0] for b in blinks], [b[1] for b in blinks])


def read_info_offset(folder: Path) -> float | None:
    """Unix time minus Pupil time from the folder's ``info.player.json`` (None without one).

    Raises
    ------
    InputError
        The file does not give ``start_time_system_s`` and ``start_time_synced_s``.
    """
    info_path = Path(folder) / "info.player.json"
    if not info_path.exists():
        return None
    try:
        info = json.loads(info_path.read_text())
        return float(info["start_time_system_s"]) - float(info["start_time_synced_s"])
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{info_path}: cannot read start_time_system_s/start_time_synced_s: {exc}") from None


def read_pupil_recording(folder: Path) -> Recording:
    """A Pupil Capture recording folder: ``info.player.json``, ``gaze.pldata`` (or gaze mapped
    offline by Player under ``offline_data/gaze-mappings/`` when the recording has none), and
    ``blinks.pldata`` when the blink detector ran.

    Gaze of several offline mappings (one file per mapper) is joined and put in time order.

    Raises
    ------
    InputError
        No gaze, damaged or implausible gaze (see :func:`read_pldata_gaze`), an unreadable
        ``info.player.json``, or blinks none of which falls within the gaze.
    """
    folder = Path(folder)
    offset = read_info_offset(folder)
    gaze_path = folder / "gaze.pldata"
    gaze = read_pldata_gaze(gaze_path) if gaze_path.exists() else None
    if gaze is None or len(gaze) == 0:
        mapped = sorted((folder / "offline_data" / "gaze-mappings").glob("*.pldata"))
        if mapped:
            gaze = GazeBatch.concat([b for b in (read_pldata_gaze(p) for p in mapped) if len(b)])
            order = np.argsort(gaze.t, kind="stable")
            gaze = GazeBatch.from_arrays(
                t=gaze.t[order],
                x=gaze.x[order],
                y=gaze.y[order],
                confidence=gaze.confidence[order],
                diameter=gaze.diameter[order],
                eye_id=gaze.eye_id[order],
                valid=gaze.valid[order],
                diameter_unit=gaze.diameter_unit,
                source=str(folder / "offline_data" / "gaze-mappings"),
            )
    if gaze is None:
        raise InputError(f"{folder}: no gaze.pldata and no offline gaze mapping in offline_data/gaze-mappings/")
    if len(gaze) == 0:
        raise InputError(f"{folder}: the recording holds no gaze")
    require_valid_gaze(gaze, str(folder))
    blinks_path = folder / "blinks.pldata"
    blinks = _pldata_blinks(blinks_path) if blinks_path.exists() else None
    if blinks is not None:
        check_overlap(str(blinks_path), "blinks", blinks.start, blinks.end, gaze.t)
    return Recording(gaze=gaze, blinks=blinks, name=folder.name, wall_clock_offset=offset)
