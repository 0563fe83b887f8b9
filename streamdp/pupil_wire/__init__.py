"""Pupil's wire format, both ways: gaze and blink datums as Capture publishes them on its IPC
backbone and records them in ``.pldata``, decoded straight into columns, and encoded from a
recording (the simulator's side). One package, both sides together, so that what the simulator sends and what the relay,
the plugin and the readers take cannot drift apart.

A gaze datum has ``topic`` (``gaze.3d.01.``, ``gaze.3d.0.``, ``gaze.2d.1.``…), ``norm_pos``
(world camera, origin bottom-left), ``confidence``, ``timestamp`` (Pupil time, s) and
``base_data``: the pupil datums it was mapped from, with ``diameter`` (px) and, from the 3d
detector, ``diameter_3d`` (mm). Frames on the backbone are ``[topic (UTF-8), msgpack(datum)]``.

Decoding keeps no Python object per sample: every field goes into a typed ``array.array`` column
as it is read, and :meth:`GazeDecoder.take` hands the columns over as NumPy arrays without a copy.
"""

from .blink_pairing import BlinkPairing
from .decode import GazeDecoder, gaze_from_datums
from .encode import capture_datums, encode, gaze_datum, pupil_datum, recording_datums
from .timing import BLINK_HISTORY, MATCHER_LATENESS, WORLD_FPS

__all__ = [
    "BLINK_HISTORY",
    "MATCHER_LATENESS",
    "WORLD_FPS",
    "BlinkPairing",
    "GazeDecoder",
    "capture_datums",
    "encode",
    "gaze_datum",
    "gaze_from_datums",
    "pupil_datum",
    "recording_datums",
]
