"""Byte layouts of ``.pldata`` datums: where the fields streamdp reads sit in a payload, so that
payloads laid out alike are read by NumPy over a whole block instead of one msgpack decode each.

Capture writes every gaze datum of a stream with the same keys, in the same order, with the same
strings and floats always as 9-byte float64: payloads differ only in the bytes of their numbers.
A :class:`Layout` is learnt from one payload the checked path decoded: the bytes that must match
exactly (everything but the value bytes of numbers; a small int may vary but must stay a small
int) and the offsets of timestamp, confidence, ``norm_pos`` and each pupil datum's diameters. A
payload of the same length whose bytes match under that mask decodes to the same structure with
other numbers, so reading the numbers at those offsets gives exactly what decoding it would.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..pupil_wire import GazeDecoder

#: msgpack ExtType code Pupil uses for nested serialized dicts
SERIALIZED_DICT = 13

_U8 = NDArray[np.uint8]
_F64 = NDArray[np.float64]
#: (t, x, y, confidence, mm, px, usable) of rows of one layout
Fields = tuple[_F64, _F64, _F64, _F64, _F64, _F64, NDArray[np.bool_]]
# node kinds of the walk: what a value is, where its number sits (offset of the 8 payload bytes)
_F8, _INT, _MAP, _ARR, _OTHER = range(5)


class Unsupported(Exception):
    """A payload whose layout is not worth learning (the checked path reads it)."""


@dataclass(frozen=True)
class _Node:
    kind: int
    offset: int = -1
    items: tuple[_Node, ...] = ()
    keys: dict[str, _Node] | None = None


def _walk(buf: bytes, pos: int, mask: bytearray, depth: int = 0) -> tuple[int, _Node]:
    """Parse one msgpack value at ``pos``; clear in ``mask`` the bits of its number bytes that may
    vary. Returns the end offset and the value's node."""
    if depth > 32:
        raise Unsupported("nested too deeply")
    b = buf[pos]
    if b <= 0x7F:  # positive fixint: stays one if its top bit stays clear
        mask[pos] = 0x80
        return pos + 1, _Node(_INT)
    if b >= 0xE0:  # negative fixint
        mask[pos] = 0xE0
        return pos + 1, _Node(_INT)
    if 0x80 <= b <= 0x8F:
        return _walk_map(buf, pos + 1, b & 0x0F, mask, depth)
    if 0x90 <= b <= 0x9F:
        return _walk_array(buf, pos + 1, b & 0x0F, mask, depth)
    if 0xA0 <= b <= 0xBF:
        return pos + 1 + (b & 0x1F), _Node(_OTHER)
    if b in (0xC0, 0xC2, 0xC3):
        return pos + 1, _Node(_OTHER)
    if b == 0xCB:
        mask[pos + 1 : pos + 9] = bytes(8)
        return pos + 9, _Node(_F8, pos + 1)
    if b == 0xCA:  # float32: its value varies, never read fast
        mask[pos + 1 : pos + 5] = bytes(4)
        return pos + 5, _Node(_INT)
    if b in (0xCC, 0xCD, 0xCE, 0xCF, 0xD0, 0xD1, 0xD2, 0xD3):
        size = 1 << (b & 0x03)
        mask[pos + 1 : pos + 1 + size] = bytes(size)
        return pos + 1 + size, _Node(_INT)
    if b in (0xC4, 0xC5, 0xC6, 0xD9, 0xDA, 0xDB):  # bin and str of 8, 16, 32-bit length
        width = 1 << ((b - 0xC4) % 3 if b < 0xD9 else b - 0xD9)
        n = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
        return pos + 1 + width + n, _Node(_OTHER)
    if b in (0xDC, 0xDD, 0xDE, 0xDF):
        width = 2 if b in (0xDC, 0xDE) else 4
        n = int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
        walk = _walk_array if b < 0xDE else _walk_map
        return walk(buf, pos + 1 + width, n, mask, depth)
    if b in (0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xC7, 0xC8, 0xC9):
        if b >= 0xD4:
            head, n = pos + 1, 1 << (b - 0xD4)
        else:
            width = 1 << (b - 0xC7)
            head, n = pos + 1 + width, int.from_bytes(buf[pos + 1 : pos + 1 + width], "big")
        code = struct.unpack_from(">b", buf, head)[0]
        start, end = head + 1, head + 1 + n
        if code != SERIALIZED_DICT:
            return end, _Node(_OTHER)
        inner_end, node = _walk(buf, start, mask, depth + 1)
        if inner_end != end:
            raise Unsupported("extension 13 with trailing bytes")
        return end, node
    raise Unsupported(f"byte 0x{b:02x}")


def _text(buf: bytes, start: int, end: int) -> str | None:
    """The str value encoded at ``buf[start:end]``, None if it is no str."""
    b = buf[start]
    head = 1 if 0xA0 <= b <= 0xBF else 2 if b == 0xD9 else 3 if b == 0xDA else 5 if b == 0xDB else 0
    return buf[start + head : end].decode() if head else None


def _walk_array(buf: bytes, pos: int, n: int, mask: bytearray, depth: int) -> tuple[int, _Node]:
    items = []
    for _ in range(n):
        pos, node = _walk(buf, pos, mask, depth + 1)
        items.append(node)
    return pos, _Node(_ARR, items=tuple(items))


def _walk_map(buf: bytes, pos: int, n: int, mask: bytearray, depth: int) -> tuple[int, _Node]:
    keys: dict[str, _Node] = {}
    for _ in range(n):
        key_start = pos
        pos, _ = _walk(buf, pos, mask, depth + 1)
        key = _text(buf, key_start, pos)
        pos, value = _walk(buf, pos, mask, depth + 1)
        if key is not None:  # numbers and other keys never equal the text keys read here
            keys[key] = value
    return pos, _Node(_MAP, keys=keys)


def _diameter_offset(node: _Node | None) -> int | None:
    """The offset of a diameter that is a float64; None where the checked path ignores it
    (absent, nil, text...). A diameter of another number type varies: not learnt."""
    if node is None or node.kind == _OTHER or node.kind == _MAP or node.kind == _ARR:
        return None
    if node.kind == _F8:
        return node.offset
    raise Unsupported("diameter not a float64")


def _f8(rows: _U8, offset: int) -> NDArray[np.float64]:
    return rows[:, offset : offset + 8].copy().view(">f8")[:, 0].astype(np.float64)


def _mean_of_positive(rows: _U8, offsets: tuple[int, ...]) -> NDArray[np.float64]:
    """Per row, the mean of the finite values > 0 at ``offsets``, summed in the checked path's
    order so that the result is the same to the bit; NaN where there is none."""
    total = np.zeros(rows.shape[0])
    count = np.zeros(rows.shape[0])
    for off in offsets:
        v = _f8(rows, off)
        ok = (v > 0.0) & (v < math.inf)
        total = total + np.where(ok, v, 0.0)
        count += ok
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(count > 0, total / np.maximum(count, 1.0), np.nan)


@dataclass(frozen=True)
class Layout:
    """What a payload of this layout holds: the byte mask to match, and for gaze the offsets
    of the fields read (``fast`` False: a recognised layout whose datums take the checked path).
    """

    #: the payload's 8-byte words under ``mask``: what every payload of the layout holds there
    template: NDArray[np.uint64]
    mask: NDArray[np.uint64]
    is_gaze: bool
    fast: bool
    eye: int = 0
    unit: str | None = None
    t: int = 0
    confidence: int = 0
    x: int = 0
    y: int = 0
    mm: tuple[int, ...] = ()
    px: tuple[int, ...] = ()

    def read(self, rows: _U8) -> Fields:
        """(t, x, y, confidence, mm, px, usable) of rows of this layout; ``usable`` False where
        the checked path would refuse the datum (it then reads it, to say why)."""
        t, x, y, conf = (_f8(rows, o) for o in (self.t, self.x, self.y, self.confidence))
        mm = _mean_of_positive(rows, self.mm)
        px = _mean_of_positive(rows, self.px)
        usable = np.isfinite(t) & np.isfinite(x) & np.isfinite(y) & (conf >= 0.0) & (conf <= 1.0)
        return t, x, y, conf, mm, px, usable

    def matches(self, rows: _U8) -> NDArray[np.bool_]:
        """Which rows (payload bytes padded to a multiple of 8) have this layout."""
        words = rows.view(np.uint64) & self.mask
        return np.all(words == self.template, axis=1)


def padded_width(n: int) -> int:
    return (n + 7) // 8 * 8


def learn_layout(payload: bytes, datum: dict[str, Any], is_gaze: bool) -> Layout:
    """The layout of ``payload``, which the checked path decoded to ``datum`` (a dict).

    Raises
    ------
    Unsupported
        Nothing worth learning (the caller reads such payloads one by one).
    """
    width = padded_width(len(payload))
    mask = bytearray(b"\xff" * len(payload) + bytes(width - len(payload)))
    padded = payload + bytes(width - len(payload))
    try:
        end, root = _walk(payload, 0, mask)
    except (IndexError, UnicodeDecodeError, struct.error) as exc:
        raise Unsupported(str(exc)) from None
    if end != len(payload) or root.kind != _MAP or root.keys is None:
        raise Unsupported("not one map")
    mask_words = np.frombuffer(bytes(mask), dtype=np.uint64)
    template = np.frombuffer(padded, dtype=np.uint64) & mask_words
    if not is_gaze:
        return Layout(template, mask_words, is_gaze=False, fast=True)
    slow = Layout(template, mask_words, is_gaze=True, fast=False)
    keys = root.keys
    t, conf, pos, topic = (keys.get(k) for k in ("timestamp", "confidence", "norm_pos", "topic"))
    if (
        t is None
        or conf is None
        or t.kind != _F8
        or conf.kind != _F8
        or pos is None
        or pos.kind != _ARR
        or len(pos.items) != 2
        or not all(p.kind == _F8 for p in pos.items)
        or (topic is not None and topic.kind != _OTHER)
    ):
        return slow
    base = keys.get("base_data")
    elements: tuple[_Node, ...] = ()
    if base is not None and base.kind == _MAP:
        elements = (base,)
    elif base is not None and base.kind == _ARR:
        elements = base.items
    mm: list[int] = []
    px: list[int] = []
    try:
        for element in elements:
            if element.kind != _MAP or element.keys is None:
                continue
            for name, out in (("diameter_3d", mm), ("diameter", px)):
                off = _diameter_offset(element.keys.get(name))
                if off is not None:
                    out.append(off)
    except Unsupported:
        return slow
    # the eye, the detector's unit and the values themselves exactly as the checked path reads
    # this datum: a layout that disagrees with it is not used
    dec = GazeDecoder(strict=True)
    try:
        dec.add_gaze(datum, "layout")
    except InputError:
        raise Unsupported("a datum the checked path refuses") from None
    cols, _ = dec.take()
    layout = Layout(
        template,
        mask_words,
        is_gaze=True,
        fast=True,
        eye=int(cols.eye_id[0]),
        unit=dec.detector_unit,
        t=t.offset,
        confidence=conf.offset,
        x=pos.items[0].offset,
        y=pos.items[1].offset,
        mm=tuple(mm),
        px=tuple(px),
    )
    row = np.frombuffer(padded, dtype=np.uint8)[None, :]
    got = layout.read(row)
    want = (cols.t, cols.x, cols.y, cols.confidence, cols.diameter_mm, cols.diameter_px)
    if not all(np.array_equal(g, w, equal_nan=True) for g, w in zip(got[:6], want, strict=True)):
        return slow
    return layout

