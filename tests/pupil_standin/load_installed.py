"""Run as a script by another Python: load an installed plugin folder as Capture does and release.

``python load_installed.py PLUGINS_DIR [BLOCKED_MODULE ...]``: Capture's ``plugin`` module is
this stand-in's, the plugin folder comes first on ``sys.path`` (as Capture puts it), and every
``BLOCKED_MODULE`` refuses to import (a meta-path finder, as if the bundle lacked it). The plugin
is fed two minutes of 3d gaze built here with numpy alone (streamdp's synthetic data is not part
of the installed folder), serving its own endpoint on a free loopback port to one subscriber,
and the script prints one JSON line: the releases' topics and timestamps, how many chunks the
subscriber received, the privacy verdict, where ``streamdp`` was imported from, and which
streamdp modules were loaded.
"""

from __future__ import annotations

import importlib.abc
import json
import sys
from pathlib import Path
from types import SimpleNamespace


class Blocked(importlib.abc.MetaPathFinder):
    def __init__(self, names: list[str]) -> None:
        self.names = set(names)

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname.split(".")[0] in self.names:
            raise ImportError(f"{fullname} is not in this Capture")
        return None


def gaze_frames(seconds: float = 120.0, rate: float = 120.0, fps: float = 30.0):  # type: ignore[no-untyped-def]
    import numpy as np

    rng = np.random.default_rng(5)
    n = int(seconds * rate)
    t = np.arange(n) / rate
    # fixations of ~0.3 s joined by jumps, plus noise
    targets = rng.uniform(0.2, 0.8, (n // 36 + 1, 2))
    xy = targets[np.arange(n) // 36] + rng.normal(0.0, 0.003, (n, 2))
    frame: list[dict] = []
    t_next = 1 / fps
    for i in range(n):
        if t[i] >= t_next:
            yield {"gaze": frame}
            frame, t_next = [], t_next + 1 / fps
        ts, x, y = float(t[i]), float(xy[i, 0]), float(xy[i, 1])
        base = [
            {
                "topic": f"pupil.{e}.3d",
                "id": e,
                "timestamp": ts,
                "confidence": 0.95,
                "diameter_3d": 3.5,
                "diameter": 40.0,
                "norm_pos": [0.5, 0.5],
            }
            for e in (0, 1)
        ]
        frame.append(
            {"topic": "gaze.3d.01.", "norm_pos": [x, y], "confidence": 0.95, "timestamp": ts, "base_data": base}
        )
    yield {"gaze": frame}


def main() -> None:
    plugins_dir, blocked = sys.argv[1], sys.argv[2:]
    sys.meta_path.insert(0, Blocked(blocked))
    sys.path[:0] = [plugins_dir, str(Path(__file__).resolve().parent)]
    plugin = importlib.import_module("plugin")  # the stand-in of Capture's
    failures = []
    for entry in sorted(Path(plugins_dir).iterdir()):  # Capture imports every entry of the folder
        if entry.suffix == ".py" or (entry / "__init__.py").is_file():
            # and reads every name its dir() lists (plugin.import_runtime_plugins), warning
            # "Failed to load" on the first that raises
            try:
                loaded = importlib.import_module(entry.stem)
                for name in dir(loaded):
                    getattr(loaded, name)
            except Exception as exc:
                failures.append(f"{entry.name}: {exc}")
    module = sys.modules["streamdp_capture"]
    import zmq

    g_pool = SimpleNamespace(app="capture", menubar=[], plugins=None, timebase=SimpleNamespace(value=0.0))
    settings = {
        "chunk_length": 8,
        "window": 4.0,
        "step": 0.5,
        "bind": "tcp://127.0.0.1:0",
        "status_bind": "tcp://127.0.0.1:0",
    }
    plugin.Plugin_List(g_pool, [(module.StreamDP, settings)])
    streamdp_plugin = next(iter(g_pool.plugins))
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.connect(streamdp_plugin.endpoint.endpoint)
    sub.subscribe(b"streamdp.features.")
    assert streamdp_plugin.endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
    released, received = [], 0
    for events in gaze_frames():
        for p in g_pool.plugins:
            p.recent_events(events)
        released += events.get("streamdp", [])
    while sub.poll(1000):
        sub.recv_multipart()
        received += 1
    privacy = streamdp_plugin.privacy
    for p in g_pool.plugins:
        p.alive = False
    g_pool.plugins.clean()
    sub.close()
    import streamdp

    print(
        json.dumps(
            {
                "topics": sorted({d["topic"] for d in released}),
                "timestamps": [d["timestamp"] for d in released],
                "received": received,
                "privacy": privacy,
                "streamdp": streamdp.__file__,
                "modules": sorted(m for m in sys.modules if m.startswith("streamdp.")),
                "blocked_loaded": sorted(m for m in blocked if m in sys.modules),
                "load_failures": failures,
            }
        )
    )


if __name__ == "__main__":
    main()
