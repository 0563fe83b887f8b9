"""Write recordings to disk in Pupil Capture's own format, for tests and benchmarks."""

from __future__ import annotations

import json
from pathlib import Path

import msgpack
import numpy as np

from streamdp.gaze import Recording
from streamdp.pupil_wire import recording_datums as gaze_datums


def write_capture_recording(recording: Recording, folder: Path) -> Path:
    """A Capture recording folder: info.player.json, gaze.pldata + gaze_timestamps.npy, as
    Capture writes them ((topic, msgpack(datum)) pairs)."""
    folder.mkdir(parents=True, exist_ok=True)
    t0 = float(recording.gaze.t[0])
    (folder / "info.player.json").write_text(
        json.dumps({"start_time_synced_s": t0, "start_time_system_s": 1.7e9, "recording_name": recording.name})
    )
    pack = msgpack.Packer(use_bin_type=True).pack
    stamps = []
    with open(folder / "gaze.pldata", "wb") as fh:
        for d in gaze_datums(recording):
            if d["topic"].startswith("gaze."):
                fh.write(pack(("gaze", pack(d))))
                stamps.append(d["timestamp"])
    np.save(folder / "gaze_timestamps.npy", np.asarray(stamps))
    return folder
