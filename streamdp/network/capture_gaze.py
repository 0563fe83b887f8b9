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

_pack = msgpack.Packer(use_bin_type=True).pack


def is_gaze_tick(release: PrivateRelease) -> bool:
    """Whether ``release`` is a tick of the real-time gaze channel (not a chunk of features)."""
    return release.ledger.get("channel") == "gaze"


def _ray(ax: float, ay: float) -> tuple[list[float], dict[str, list[float]]]:
    """The gaze point at the public distance and the normals from the public eye centres to it."""
    # the pinhole ray through the published angles (norm_to_degrees' camera), y down as Capture's
    dx, dy = math.tan(math.radians(ax)), -math.tan(math.radians(ay))
    scale = GAZE_DISTANCE_MM / math.sqrt(dx * dx + dy * dy + 1.0)
    px, py, pz = dx * scale, dy * scale, scale
    normals = {}
    for eye, (cx, cy, cz) in EYE_CENTERS_MM.items():
        vx, vy, vz = px - cx, py - cy, pz - cz
        n = math.sqrt(vx * vx + vy * vy + vz * vz)
        normals[eye] = [vx / n, vy / n, vz / n]
    return [px, py, pz], normals


def _packed_pairs(pairs: Mapping[str, Any]) -> bytes:
    return b"".join(_pack(k) + _pack(v) for k, v in pairs.items())


# every datum's constant fields, packed once: a tick packs only what it computes (a map's header,
# then these pairs, then its own); msgpack's map header for fewer than 16 entries is 0x80 + n
_CONSTANT = {
    mode: _packed_pairs({"topic": topic, "confidence": GAZE_CONFIDENCE, "base_data": []})
    + (_packed_pairs({"eye_centers_3d": {eye: list(c) for eye, c in EYE_CENTERS_MM.items()}}) if mode == "3d" else b"")
    for mode, topic in GAZE_TOPICS.items()
}
_HEADER = {"3d": bytes([0x80 + len(GAZE_DATUM_FIELDS)]), "2d": bytes([0x80 + len(_FIELDS_2D)])}
_KEYS = {k: _pack(k) for k in ("norm_pos", "timestamp", "gaze_point_3d", "gaze_normals_3d")}


def _datum(t: float, ax: float, ay: float, nx: float, ny: float, mode: str) -> bytes:
    k = _KEYS
    out = _HEADER[mode] + _CONSTANT[mode] + k["norm_pos"] + _pack([nx, ny]) + k["timestamp"] + _pack(t)
    if mode == "2d":
        return out
    point, normals = _ray(ax, ay)
    return out + k["gaze_point_3d"] + _pack(point) + k["gaze_normals_3d"] + _pack(normals)


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
    topic = GAZE_TOPICS[mode].encode()
    ax, ay, nx, ny = _columns(release.names)
    out = []
    for t, row in zip(release.t.tolist(), release.values.tolist(), strict=True):
        out.append((topic, _datum(t, row[ax], row[ay], row[nx], row[ny], mode)))
    return out


@functools.lru_cache(maxsize=8)
def _columns(names: tuple[str, ...]) -> tuple[int, ...]:
    """Where the angles and the scene position are among a tick's ``names`` (one schema a session)."""
    return tuple(names.index(n) for n in ("x_deg", "y_deg", "x_norm", "y_norm"))
