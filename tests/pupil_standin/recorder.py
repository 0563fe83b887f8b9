"""Capture's recorder as plugins meet it (pupil_src/shared_modules/recorder.py and
file_methods.PLData_Writer, v3): at order 0.9 it runs after every analysis plugin and, while
recording, writes every list of ``events`` (but the frames) to ``<key>.pldata`` and
``<key>_timestamps.npy``. Each datum is packed with msgpack and its ``timestamp`` appended to the
timestamps: a datum without ``timestamp`` raises KeyError, which crashes Capture's world process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgpack
import numpy as np
from plugin import Plugin


class PLDataWriter:
    def __init__(self, directory: Path, name: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.data_path = directory / f"{name}.pldata"
        self.ts_path = directory / f"{name}_timestamps.npy"
        self._file = open(self.data_path, "wb")  # closed in close(), as Capture does
        self._timestamps: list[float] = []

    def append(self, datum: dict[str, Any]) -> None:
        payload = msgpack.packb(datum, use_bin_type=True)
        self._timestamps.append(datum["timestamp"])
        msgpack.pack((datum["topic"], payload), self._file, use_bin_type=True)

    def extend(self, data: list[dict[str, Any]]) -> None:
        for d in data:
            self.append(d)

    def close(self) -> None:
        self._file.close()
        np.save(self.ts_path, np.asarray(self._timestamps))


class Recorder(Plugin):
    order = 0.9

    def __init__(self, g_pool: Any, rec_dir: str = "") -> None:
        super().__init__(g_pool)
        self.rec_dir = Path(rec_dir)
        self.running = False
        self.writers: dict[str, PLDataWriter] = {}

    def get_init_dict(self) -> dict[str, Any]:
        return {"rec_dir": str(self.rec_dir)}

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        self.running = False
        for w in self.writers.values():
            w.close()
        self.writers = {}

    def recent_events(self, events: dict[str, Any]) -> None:
        if not self.running:
            return
        for key, data in events.items():
            if key in ("dt", "depth_frame") or key.startswith("frame"):
                continue
            if key not in self.writers:
                self.writers[key] = PLDataWriter(self.rec_dir, key)
            self.writers[key].extend(data)
