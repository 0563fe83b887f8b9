"""The gaze channel's sanitized ticks as Capture's own gaze datums, for apps that read ``gaze.3d.*``.

hmd-eyes (``GazeData.cs``) and pupil-helpers read Capture's gaze datums: ``norm_pos``,
``confidence``, ``timestamp``, ``gaze_point_3d`` and, binocular, ``eye_centers_3d`` and
``gaze_normals_3d`` keyed ``"0"``/``"1"``. :func:`capture_gaze_frames` builds one from each
sealed tick of the real-time channel, field by field from public or sanitized values only
(:data:`GAZE_DATUM_FIELDS`):

- one topic, ``gaze.3d.01.`` (``gaze.2d.01.`` for a 2d source), every tick: which eyes Capture
  mapped is a function of the raw confidences, so the topic does not follow it;
- ``norm_pos`` the tick's sanitized scene position; ``gaze_point_3d`` the ray through it at a
  public distance (:data:`GAZE_DISTANCE_MM`), in Capture's world-camera frame (x right, y down,
  z forward, mm);
- eye centres from a public default geometry (:data:`EYE_CENTERS_MM`), never the measured ones:
  they carry the wearer's interpupillary distance, a biometric; the gaze normals point from them
  to the sanitized point;
- ``confidence`` a public constant, ``timestamp`` the tick's time on the public grid, and
  ``base_data`` empty (Capture's holds the raw pupil datums).

Examples
--------
>>> from streamdp.config import SessionConfig
>>> from streamdp.session import Session
>>> from streamdp.sinks import CollectingSink
>>> from streamdp.synthetic import generate
>>> rec = generate(duration=1.0, seed=1).recording
>>> sink = CollectingSink(accepts_gaze=True)
>>> _ = Session.for_recording(SessionConfig(seed=0, gaze_channel=True), rec, sinks=[sink]).run(rec)
>>> topic, payload = capture_gaze_frames(sink.ticks[0])[0]
>>> datum = msgpack.unpackb(payload)
>>> topic, sorted(datum) == sorted(GAZE_DATUM_FIELDS), datum["confidence"], datum["eye_centers_3d"]["0"]
(b'gaze.3d.01.', True, 1.0, [31.5, 0.0, 0.0])
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Mapping
from typing import Any

import msgpack

from ..privacy.release import PrivateRelease, check_sealed

__all__ = [
    "EYE_CENTERS_MM",
    "GAZE_CONFIDENCE",
    "GAZE_DATUM_FIELDS",
    "GAZE_DISTANCE_MM",
    "GAZE_TOPICS",
    "capture_gaze_frames",
    "is_gaze_tick",
]

#: the public distance of the sanitized gaze point from the scene camera (mm)
GAZE_DISTANCE_MM = 500.0
#: the public eye geometry: eye 0 (right) and eye 1 (left) at a mean adult interpupillary distance
#: of 63 mm, level with the camera (Capture's frame: x right, y down, z forward, mm)
EYE_CENTERS_MM: Mapping[str, tuple[float, float, float]] = {"0": (31.5, 0.0, 0.0), "1": (-31.5, 0.0, 0.0)}
#: every sanitized datum's confidence: a constant, never the measured one
GAZE_CONFIDENCE = 1.0
#: the topic of each gaze mode
GAZE_TOPICS: Mapping[str, str] = {"3d": "gaze.3d.01.", "2d": "gaze.2d.01."}

#: every field of a sanitized datum and why it may leave (the audit's table)
GAZE_DATUM_FIELDS: Mapping[str, str] = {
    "topic": "public: one constant topic per gaze mode",
    "norm_pos": "sanitized: the tick's noised scene position",
    "confidence": "public: a constant",
    "timestamp": "public: the tick's time on the public grid",
    "base_data": "public: always empty (Capture's holds raw pupil datums)",
    "gaze_point_3d": "sanitized: the ray through norm_pos at the public distance",
    "eye_centers_3d": "public: the default eye geometry",
    "gaze_normals_3d": "sanitized: from the public eye centres to gaze_point_3d",
}
_FIELDS_2D = ("topic", "norm_pos", "confidence", "timestamp", "base_data")
_TOPIC_BYTES = {mode: topic.encode() for mode, topic in GAZE_TOPICS.items()}

_pack = msgpack.Packer(use_bin_type=True).pack


def is_gaze_tick(release: PrivateRelease) -> bool:
    """Whether ``release`` is a tick of the real-time gaze channel (not a chunk of features)."""
    return release.ledger.get("channel") == "gaze"


def _packed_pairs(pairs: Mapping[str, Any]) -> bytes:
    return b"".join(_pack(k) + _pack(v) for k, v in pairs.items())


# A datum's layout is fixed: a map header, the constant pairs, then the computed pairs, every
# number a msgpack float 64 (0xcb, then 8 bytes big-endian), as msgpack's Packer writes them. So a
# tick is one struct.pack: each float preceded by the constant bytes before it (the last of which
# is its 0xcb marker). tests/test_pupil_remote.py checks the bytes against msgpack's own packing.
_F64 = b"\xcb"


def _layout(mode: str) -> tuple[struct.Struct, tuple[bytes, ...]]:
    n_fields = len(GAZE_DATUM_FIELDS) if mode == "3d" else len(_FIELDS_2D)
    constant = _packed_pairs({"topic": GAZE_TOPICS[mode], "confidence": GAZE_CONFIDENCE, "base_data": []})
    if mode == "3d":
        constant += _packed_pairs({"eye_centers_3d": {eye: list(c) for eye, c in EYE_CENTERS_MM.items()}})
    # the bytes before each float: a fixmap header (0x80 + n) and fixarray headers (0x90 + n)
    before = [bytes([0x80 + n_fields]) + constant + _pack("norm_pos") + b"\x92" + _F64, _F64,
              _pack("timestamp") + _F64]  # fmt: skip
    if mode == "3d":
        before += [_pack("gaze_point_3d") + b"\x93" + _F64, _F64, _F64,
                   _pack("gaze_normals_3d") + bytes([0x80 + len(EYE_CENTERS_MM)]) + _pack("0") + b"\x93" + _F64,
                   _F64, _F64, _pack("1") + b"\x93" + _F64, _F64, _F64]  # fmt: skip
    return struct.Struct(">" + "".join(f"{len(b)}sd" for b in before)), tuple(before)


_LAYOUT_3D, _LAYOUT_2D = _layout("3d"), _layout("2d")
(_EYE0, _EYE1) = (EYE_CENTERS_MM["0"], EYE_CENTERS_MM["1"])


def _datum_3d(t: float, ax: float, ay: float, nx: float, ny: float) -> bytes:
    """A 3d datum: the pinhole ray through the published angles (norm_to_degrees' camera; y down
    as Capture's) at the public distance, and the normals from the public eye centres to it."""
    dx, dy = math.tan(math.radians(ax)), -math.tan(math.radians(ay))
    pz = GAZE_DISTANCE_MM / math.sqrt(dx * dx + dy * dy + 1.0)
    px, py = dx * pz, dy * pz
    ax0, ay0, az0 = px - _EYE0[0], py - _EYE0[1], pz - _EYE0[2]
    ax1, ay1, az1 = px - _EYE1[0], py - _EYE1[1], pz - _EYE1[2]
    n0 = math.sqrt(ax0 * ax0 + ay0 * ay0 + az0 * az0)
    n1 = math.sqrt(ax1 * ax1 + ay1 * ay1 + az1 * az1)
    layout, (b0, b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11) = _LAYOUT_3D
    return layout.pack(b0, nx, b1, ny, b2, t, b3, px, b4, py, b5, pz, b6, ax0 / n0, b7, ay0 / n0,
                       b8, az0 / n0, b9, ax1 / n1, b10, ay1 / n1, b11, az1 / n1)  # fmt: skip


def _datum_2d(t: float, ax: float, ay: float, nx: float, ny: float) -> bytes:
    layout, (b0, b1, b2) = _LAYOUT_2D
    return layout.pack(b0, nx, b1, ny, b2, t)


_DATUM = {"3d": _datum_3d, "2d": _datum_2d}


def capture_gaze_frames(
    release: PrivateRelease, mode: str = "3d", *, sealed: bool = False
) -> list[tuple[bytes, bytes]]:
    """One ``(topic, msgpack datum)`` per tick of the sealed gaze-channel ``release`` (``sealed``:
    the caller, a sink, has just checked its seal).

    Raises
    ------
    TypeError
        ``release`` is not a genuine, unmodified release.
    ValueError
        It is not a tick of the gaze channel, or ``mode`` is not "3d" or "2d".
    """
    if not sealed:
        check_sealed(release)
    if mode not in GAZE_TOPICS:
        raise ValueError(f"mode must be '3d' or '2d', got {mode!r}")
    if not is_gaze_tick(release):
        raise ValueError(f"{release.topic}: not a tick of the gaze channel; only ticks become gaze datums")
    return gaze_datums(release, mode)


def gaze_datums(release: PrivateRelease, mode: str) -> list[tuple[bytes, bytes]]:
    """:func:`capture_gaze_frames` for a caller that has checked all it checks (the facade's
    hot path, once a tick: a function call less is measurable there)."""
    topic, datum = _TOPIC_BYTES[mode], _DATUM[mode]
    ax, ay, nx, ny = _columns(release.names)
    return [(topic, datum(t, row[ax], row[ay], row[nx], row[ny]))
            for t, row in zip(release.t.tolist(), release.values.tolist(), strict=True)]  # fmt: skip


@functools.lru_cache(maxsize=8)
def _columns(names: tuple[str, ...]) -> tuple[int, ...]:
    """Where the angles and the scene position are among a tick's ``names`` (one schema a session)."""
    return tuple(names.index(n) for n in ("x_deg", "y_deg", "x_norm", "y_norm"))
