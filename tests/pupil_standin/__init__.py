"""A faithful stand-in of Pupil Capture's plugin environment (its ``plugin`` module, ``g_pool``,
the IPC publisher, the world loop that publishes ``events`` and the recorder)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import groupby
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from streamdp.gaze import Recording
from streamdp.pupil_wire import capture_datums, recording_datums

STANDIN = Path(__file__).resolve().parent
PLUGINS = STANDIN.parents[1] / "plugins"
_STANDIN_MODULES = ("streamdp_capture", "plugin", "recorder", "network_api", "time_sync")


@contextmanager
def capture_plugin_environment() -> Iterator[SimpleNamespace]:
    """Import the streamdp plugin as Capture does: the plugin folder on ``sys.path``, with
    Capture's ``plugin`` module importable. Yields ``module`` (the plugin's), ``plugin`` (the
    stand-in's ``plugin`` module), ``world``, ``Recorder`` and ``NetworkApiPlugin``; undone on
    exit. The stand-in's ``pyglui`` is importable too: the plugin builds its real menu."""
    sys.path[:0] = [str(STANDIN), str(PLUGINS)]
    try:
        yield SimpleNamespace(
            module=importlib.import_module("streamdp_capture"),
            plugin=importlib.import_module("plugin"),
            world=importlib.import_module("tests.pupil_standin.world"),
            Recorder=importlib.import_module("recorder").Recorder,
            NetworkApiPlugin=importlib.import_module("network_api").NetworkApiPlugin,
        )
    finally:
        sys.path.remove(str(STANDIN))
        sys.path.remove(str(PLUGINS))
        for name in list(sys.modules):  # the stand-in's modules go with it: the next import is fresh
            if name in _STANDIN_MODULES or name.startswith("pyglui"):
                sys.modules.pop(name, None)


class WorldFrame:
    """What plugins read of ``events["frame"]``: Capture's world camera frame, with its
    ``timestamp`` (Pupil time) and ``index``."""

    def __init__(self, timestamp: float, index: int) -> None:
        self.timestamp = float(timestamp)
        self.index = index


def world_frames(recording: Recording, fps: float = 30.0, *, untidy: bool = False) -> Iterator[dict[str, Any]]:
    """The ``events`` of each world frame as Capture batches them: ``frame`` (a
    :class:`WorldFrame` at the frame's Pupil time) and the gaze and blink datums Capture would
    publish for ``recording`` in the frame's period, none later than the frame. ``untidy``: as
    Capture really does (:func:`streamdp.pupil_wire.capture_datums`, at its own 30 Hz):
    monocular gaze frames late, blink onsets and offsets in every frame while the detector's
    filter fires."""
    if untidy:
        for index, (at, sent) in enumerate(groupby(capture_datums(recording), key=lambda p: p[0])):
            events: dict[str, Any] = {"frame": WorldFrame(at, index), "gaze": [], "blinks": []}
            for _, datum in sent:
                if datum["topic"].startswith("gaze."):
                    events["gaze"].append(datum)
                elif datum["topic"] == "blinks":
                    events["blinks"].append(datum)
            yield events
        return
    t0, index = float(recording.gaze.t[0]), 1
    frame: dict[str, Any] = {"frame": WorldFrame(t0 + 1 / fps, index), "gaze": [], "blinks": []}
    for datum in recording_datums(recording):
        while datum["timestamp"] >= frame["frame"].timestamp:
            yield frame
            index += 1
            frame = {"frame": WorldFrame(t0 + index / fps, index), "gaze": [], "blinks": []}
        if datum["topic"].startswith("gaze."):
            frame["gaze"].append(datum)
        elif datum["topic"] == "blinks":
            frame["blinks"].append(datum)
    yield frame


def idle_frames(start: float, seconds: float, fps: float = 30.0, first_index: int = 0) -> Iterator[dict[str, Any]]:
    """World frames from ``start`` (Pupil time) for ``seconds`` without any gaze: the wearer
    took the headset off, the eye cameras stopped, Capture's world loop runs on."""
    for i in range(1, int(seconds * fps) + 1):
        yield {"frame": WorldFrame(start + i / fps, first_index + i), "gaze": [], "blinks": []}
