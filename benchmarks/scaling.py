"""Scaling figures for replay (issue #13 item 5): time and peak memory of ``streamdp replay`` on
1, 4 and 16 h of 200 Hz gaze as Capture records it, each replay in a fresh process.

    python -m benchmarks.scaling --hours 1 4 16 [--whole 1 4] [--dir /tmp]

The recording is ``gaze.pldata`` (+ ``gaze_timestamps.npy``, ``info.player.json``) of Capture-like
datums (:mod:`benchmarks.capture_traffic`: ~1.3 kB, late monocular gaze, nested pupil datums with
pye3d's fields): ten minutes of synthetic gaze, generated once, repeated with every timestamp
moved on by the pattern's length (the bytes' ``timestamp`` floats are patched in place, so writing
an hour costs a copy, not a re-encoding). Files go to a temporary folder under ``--dir`` and are
deleted afterwards; 16 h take ~16 GB of disk at these datum sizes (checked first).

Each replay runs ``replay_one`` in a child process and reports the wall time and the child's peak
resident memory (``VmHWM``). ``--whole`` also replays those lengths read whole into memory (the
path every format other than ``.pldata`` takes), for comparison. Not a pytest benchmark: CI never
writes files this size.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import msgpack
import numpy as np

from benchmarks.capture_traffic import _pye3d_fields
from streamdp.pupil_wire.encode import capture_datums
from streamdp.synthetic import generate

PATTERN_S = 600.0
RATE = 200.0
_STAMP = re.compile(rb"\xa9timestamp\xcb")

CHILD = """
import json, sys, time
from streamdp.offline import replay as R
path, out, whole = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
config = R.ReplayConfig(seed=0)
t0 = time.perf_counter()
if whole:
    result = R._replay_whole(path, "rec", config, 0, out, None)
else:
    result = R.replay_one(path, "rec", config, 0, out)
seconds = time.perf_counter() - t0
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM"))
print(json.dumps({"seconds": seconds, "peak_mb": hwm / 1024, "chunks": result.chunks, "skipped": result.skipped}))
"""


def pattern(seed: int = 3) -> tuple[bytes, np.ndarray, np.ndarray, float]:
    """Ten minutes of Capture's gaze.pldata: the bytes, the offsets of every ``timestamp`` float
    in them, the gaze datums' own timestamps in file order, and the pattern's length (s)."""
    rec = generate(duration=PATTERN_S, rate=RATE, seed=seed).recording
    pack = msgpack.Packer(use_bin_type=True).pack
    parts: list[bytes] = []
    stamps: list[float] = []
    for _, datum in capture_datums(rec, seed=1):
        if not str(datum["topic"]).startswith("gaze."):
            continue
        for pupil in datum["base_data"]:
            _pye3d_fields(pupil)
        parts.append(pack((datum["topic"], pack(datum))))
        stamps.append(datum["timestamp"])
    buf = b"".join(parts)
    offsets = np.array([m.end() for m in _STAMP.finditer(buf)], dtype=np.int64)
    span = float(rec.gaze.t[-1] - rec.gaze.t[0]) + 1.0 / RATE
    return buf, offsets, np.asarray(stamps), span


def write_recording(folder: Path, hours: float, pat: tuple[bytes, np.ndarray, np.ndarray, float]) -> int:
    """``hours`` of gaze into ``folder``; returns the size of gaze.pldata in bytes."""
    buf, offsets, stamps, span = pat
    folder.mkdir(parents=True)
    repeats = round(hours * 3600.0 / PATTERN_S)
    (folder / "info.player.json").write_text(
        json.dumps({"start_time_synced_s": float(stamps.min()), "start_time_system_s": 1.7e9})
    )
    ts = np.lib.format.open_memmap(folder / "gaze_timestamps.npy", mode="w+", shape=(repeats * stamps.size,))
    base = np.frombuffer(buf, dtype=np.uint8)
    where = offsets[:, None] + np.arange(8)
    original = base[where].copy().view(">f8")[:, 0]
    with open(folder / "gaze.pldata", "wb") as fh:
        for k in range(repeats):
            out = base.copy()
            out[where] = (original + k * span).astype(">f8")[:, None].view(np.uint8)
            fh.write(out.tobytes())
            ts[k * stamps.size : (k + 1) * stamps.size] = stamps + k * span
    ts.flush()
    del ts
    return (folder / "gaze.pldata").stat().st_size


def measure(folder: Path, out: Path, whole: bool) -> dict[str, float]:
    out.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(folder), str(out), "1" if whole else "0"],
        check=True,
        capture_output=True,
        text=True,
    )
    shutil.rmtree(out)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=float, nargs="+", default=[1.0, 4.0, 16.0])
    parser.add_argument("--whole", type=float, nargs="*", default=[], help="also replay these read whole")
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    pat = pattern()
    per_hour = len(pat[0]) * 3600.0 / PATTERN_S
    size = len(pat[0]) / pat[2].size
    print(f"pattern: {pat[2].size} gaze datums, {size:.0f} B each, {time.perf_counter() - t0:.1f} s")
    need = per_hour * max(args.hours) * 1.1
    free = shutil.disk_usage(args.dir).free
    if need > free:
        sys.exit(f"{args.dir}: {free / 1e9:.1f} GB free, {max(args.hours):g} h need {need / 1e9:.1f} GB")
    rows = []
    for hours in args.hours:
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="streamdp-scaling-") as tmp:
            folder = Path(tmp) / "rec"
            size = write_recording(folder, hours, pat)
            for whole in (False, True) if hours in args.whole else (False,):
                r = measure(folder, Path(tmp) / f"out{int(whole)}", whole)
                row = {"hours": hours, "path": "whole" if whole else "streamed", "gb": size / 1e9, **r}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print("\n| gaze | .pldata | path | replay time | per hour | peak RSS | chunks |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['hours']:g} h | {r['gb']:.1f} GB | {r['path']} | {r['seconds']:.1f} s | "
            f"{r['seconds'] / r['hours']:.1f} s | {r['peak_mb']:.0f} MB | {r['chunks']} |"
        )


if __name__ == "__main__":
    main()
