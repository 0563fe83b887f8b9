"""Gaze from a ``.pldata`` file block by block, as columns, without a Python dict per datum.

The file is read in blocks of ``block_bytes``. One C-level msgpack pass splits a block into its
``(topic, payload)`` records; payloads of one topic and length are stacked into a byte matrix and
matched against the layouts learnt so far (:mod:`streamdp.readers._pldata_layout`), whose fields
are then read by NumPy for all rows at once. Anything else (a first payload of a new layout, a
record in an unusual encoding, a datum the checks would refuse) goes through the checked path of
:func:`streamdp.readers.pupil.iter_pldata` and :class:`~streamdp.pupil_wire.GazeDecoder`, which
raises the same errors as always. Errors in a block are raised in file order: damaged records
first, then the first bad gaze datum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import DiameterUnit, GazeColumns
from ..pupil_wire import GazeDecoder
from ..pupil_wire.datum_fields import _detector_unit
from ._pldata_layout import Fields, Layout, Unsupported, learn_layout, padded_width

#: bytes read at a time: a few thousand datums, a few MB of memory whatever the file's length
BLOCK_BYTES = 1 << 22
#: layouts learnt per (topic, payload length), and attempts per block: a file whose every payload
#: is laid out differently is read by the checked path at its own speed, never slower
_MAX_LAYOUTS = 32
_MAX_ATTEMPTS = 4
_BIN_HEADERS = (0xC4, 0xC5, 0xC6)

#: ``(bytes from the record on, its byte offset, its index) -> (topic, datum)``: the checked
#: path's reading of one record, raising its error if it is damaged
RecordReader = Callable[[bytes, int, int], tuple[str, Any]]


@dataclass(frozen=True)
class GazeBlock:
    """The gaze datums of one block, in file order."""

    columns: GazeColumns
    #: the unit named by the topic of the block's first gaze datum that names one
    unit: DiameterUnit | None
    #: index (among the file's gaze datums) of the block's first datum
    first: int


def _topic_header_size(th: NDArray[np.uint8]) -> NDArray[np.int64]:
    size = np.full(th.shape, -1, dtype=np.int64)
    size[(th >= 0xA0) & (th <= 0xBF)] = 1
    size[th == 0xD9] = 2
    size[th == 0xDA] = 3
    size[th == 0xDB] = 5
    return size


class _BlockReader:
    def __init__(self, path: Path, read_record: RecordReader, decode: Callable[[bytes], Any]) -> None:
        self.path = path
        self.source = str(path)
        self.read_record = read_record
        self.decode = decode
        self.layouts: dict[tuple[bytes, int], list[Layout]] = {}
        self.topics: dict[bytes, str | None] = {}
        self.records = 0
        self.gaze = 0

    def topic(self, raw: bytes) -> str | None:
        text = self.topics.get(raw, "")
        if text == "":
            try:
                text = raw.decode()
            except UnicodeDecodeError:
                text = None
            self.topics[raw] = text
        return text

    def block(self, buf: bytes, base: int, items: list[Any], ends: list[int]) -> GazeBlock:
        """The gaze of records ``items`` (ending at file offsets ``ends``; ``buf`` holds the
        file from offset ``base``)."""
        n = len(items)
        data = np.frombuffer(buf + bytes(8), dtype=np.uint8)
        end = np.asarray(ends, dtype=np.int64) - base
        start = np.concatenate(([0], end[:-1])) if n else end
        groups: dict[tuple[bytes, int], list[int]] = {}
        odd: list[int] = []
        for i, item in enumerate(items):
            if type(item) is tuple and len(item) == 2:
                topic, payload = item
                if type(topic) is bytes and type(payload) is bytes:
                    groups.setdefault((topic, len(payload)), []).append(i)
                    continue
            odd.append(i)
        layout_of: list[Layout | None] = [None] * n
        values: dict[int, tuple[Layout, NDArray[np.intp], Fields]] = {}
        for key, members in groups.items():
            idx = np.asarray(members, dtype=np.intp)
            ok = self._framed_as_capture(data, start[idx], end[idx], len(key[0]), key[1])
            if self.topic(key[0]) is None:
                ok[:] = False
            odd.extend(idx[~ok].tolist())
            idx = idx[ok]
            if idx.size:
                self._match(key, idx, data, end, items, layout_of, values)
        return self._assemble(buf, base, items, start, end, odd, layout_of, values)

    @staticmethod
    def _framed_as_capture(
        data: NDArray[np.uint8], start: NDArray[np.int64], end: NDArray[np.int64], topic_len: int, length: int
    ) -> NDArray[np.bool_]:
        """Records framed as ``[str topic, bin payload]`` (anything else: the checked path)."""
        last = data.shape[0] - 1
        head = _topic_header_size(data[np.minimum(start + 1, last)])
        payload_header = data[np.minimum(start + 1 + head + topic_len, last)]
        return (
            (data[start] == 0x92) & (head > 0) & np.isin(payload_header, _BIN_HEADERS) & (end - length > start + head)
        )

    def _match(
        self,
        key: tuple[bytes, int],
        idx: NDArray[np.intp],
        data: NDArray[np.uint8],
        end: NDArray[np.int64],
        items: list[Any],
        layout_of: list[Layout | None],
        values: dict[int, tuple[Layout, NDArray[np.intp], Fields]],
    ) -> None:
        length = key[1]
        width = padded_width(length)
        # every row is ``width`` bytes from its payload's start (``data`` is padded at its end)
        rows = np.lib.stride_tricks.sliding_window_view(data, width)[end[idx] - length]
        known = self.layouts.setdefault(key, [])
        remaining = np.arange(idx.size)
        candidates = list(known)
        attempts = 0
        while remaining.size:
            if candidates:
                layout = candidates.pop(0)
            elif attempts < _MAX_ATTEMPTS and len(known) < _MAX_LAYOUTS:
                attempts += 1
                first = int(idx[remaining[0]])
                learnt = self._learn(key, items[first][1])
                if learnt is None:
                    remaining = remaining[1:]
                    continue
                known.append(learnt)
                layout = learnt
            else:
                break
            hit = layout.matches(rows[remaining])
            if not hit.any():
                continue
            chosen = remaining[hit]
            remaining = remaining[~hit]
            for i in idx[chosen].tolist():
                layout_of[i] = layout
            if layout.is_gaze and layout.fast:
                values[len(values)] = (layout, idx[chosen], layout.read(rows[chosen]))

    def _learn(self, key: tuple[bytes, int], payload: bytes) -> Layout | None:
        try:
            datum = self.decode(payload)
        except (ValueError, TypeError, msgpack.UnpackException):
            return None  # damaged: the checked path says so
        if type(datum) is not dict:
            return None
        topic = self.topic(key[0]) or ""
        is_gaze = topic.startswith("gaze") or str(datum.get("topic", "")).startswith("gaze")
        try:
            return learn_layout(payload, datum, is_gaze)
        except Unsupported:
            return None

    def _assemble(
        self,
        buf: bytes,
        base: int,
        items: list[Any],
        start: NDArray[np.int64],
        end: NDArray[np.int64],
        odd: list[int],
        layout_of: list[Layout | None],
        values: dict[int, tuple[Layout, NDArray[np.intp], Fields]],
    ) -> GazeBlock:
        n = len(items)
        first_record = self.records
        # the checked path, in file order, for every record no fast layout read: damaged ones raise
        checked: dict[int, tuple[str, Any]] = {}
        slow = set(odd)
        slow.update(i for i, layout in enumerate(layout_of) if layout is None or not layout.fast)
        for i in sorted(slow):
            record = buf[int(start[i]) : int(end[i])]
            checked[i] = self.read_record(record, base + int(start[i]), first_record + i)
        is_gaze = np.zeros(n, dtype=bool)
        for i, layout in enumerate(layout_of):
            if i in checked:
                topic, datum = checked[i]
                is_gaze[i] = topic.startswith("gaze") or str(datum.get("topic", "")).startswith("gaze")
            elif layout is not None:
                is_gaze[i] = layout.is_gaze
        position = np.cumsum(is_gaze) - 1
        m = int(is_gaze.sum())
        t, x, y, conf, mm, px = (np.empty(m) for _ in range(6))
        eye = np.empty(m, dtype=np.int8)
        unit = np.zeros(m, dtype=np.int8)  # 0 none, 1 mm, 2 px
        redo: list[int] = [i for i in checked if is_gaze[i]]
        for layout, rec, (lt, lx, ly, lc, lmm, lpx, usable) in values.values():
            at = position[rec]
            for col, v in ((t, lt), (x, lx), (y, ly), (conf, lc), (mm, lmm), (px, lpx)):
                col[at] = v
            eye[at] = layout.eye
            unit[at] = 1 if layout.unit == "mm" else 2 if layout.unit == "px" else 0
            if not usable.all():
                redo.extend(rec[~usable].tolist())
        if redo:
            self._checked_gaze(sorted(redo), items, checked, position, (t, x, y, conf, mm, px), eye, unit)
        named = np.flatnonzero(unit)
        block_unit: DiameterUnit | None = None if not named.size else "mm" if unit[named[0]] == 1 else "px"
        cols = GazeColumns(t, x, y, conf, mm, px, eye, np.ones(m, dtype=bool))
        out = GazeBlock(cols, block_unit, self.gaze)
        self.records += n
        self.gaze += m
        return out

    def _checked_gaze(
        self,
        records: list[int],
        items: list[Any],
        checked: dict[int, tuple[str, Any]],
        position: NDArray[np.int64],
        columns: tuple[NDArray[np.float64], ...],
        eye: NDArray[np.int8],
        unit: NDArray[np.int8],
    ) -> None:
        """Gaze datums read one by one, in file order: the first bad one raises."""
        dec = GazeDecoder(strict=True)
        for i in records:
            datum = checked[i][1] if i in checked else self.decode(items[i][1])
            dec.add_gaze(datum, f"{self.source} datum {self.gaze + int(position[i])}")
            u = _detector_unit(datum.get("topic"))
            unit[position[i]] = 1 if u == "mm" else 2 if u == "px" else 0
        cols, _ = dec.take()
        at = position[np.asarray(records, dtype=np.intp)]
        fields = (cols.t, cols.x, cols.y, cols.confidence, cols.diameter_mm, cols.diameter_px)
        for col, v in zip(columns, fields, strict=True):
            col[at] = v
        eye[at] = cols.eye_id


def iter_gaze_blocks(
    path: Path, read_record: RecordReader, decode: Callable[[bytes], Any], *, block_bytes: int = BLOCK_BYTES
) -> Iterator[GazeBlock]:
    """The gaze of a ``.pldata`` file, a block at a time, in file order.

    Raises
    ------
    InputError
        As the checked path does (via ``read_record`` and :class:`GazeDecoder`): a damaged,
        truncated or corrupt record, or a bad gaze datum, naming the file and the record (byte
        offset) or datum index.
    """
    reader = _BlockReader(path, read_record, decode)
    unpacker = msgpack.Unpacker(
        raw=True, use_list=False, strict_map_key=False, max_buffer_size=max(4 * block_bytes, 100 << 20)
    )
    pending = b""
    base = 0
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(block_bytes)
            if not chunk:
                if pending:
                    read_record(pending, base, reader.records)  # raises: truncated
                    raise InputError(f"{path}: truncated record {reader.records} at byte {base}")
                return
            unpacker.feed(chunk)
            buf = pending + chunk
            items: list[Any] = []
            ends: list[int] = []
            tell = unpacker.tell
            try:
                for item in unpacker:
                    items.append(item)
                    ends.append(tell())
            except (ValueError, TypeError, msgpack.UnpackException):
                at = ends[-1] if ends else base
                reader.block(buf, base, items, ends)  # damaged records before it raise first
                read_record(buf[at - base :], at, reader.records)
                raise InputError(f"{path}: corrupt record {reader.records} at byte {at}") from None
            last = ends[-1] if ends else base
            yield reader.block(buf, base, items, ends)
            pending = buf[last - base :]
            base = last
