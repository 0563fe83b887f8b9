"""Bad input and faults of the machine through the command line: one table.

Each row is a command line, the exit status it must end with, and a pattern the one line it
writes to stderr must match, naming the input at fault. No row may print a traceback or leave
anything partial behind (no ``.partial`` file or staging folder, no output), except the rows in
``WRITES``: they run to the end and say on that line what their output leaves out (gaze mostly under
the confidence threshold, steps outside the public chunk grid). Work the options make too large for
the machine's memory is refused before it starts; long work is announced before it starts (status
``KILLED``: the test reads that line, then kills the process, so no row runs for long). Sockets are
real (a port made busy by binding it here), paths are real files and folders under ``tmp_path``.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import zmq.auth

from streamdp.cli import main
from streamdp.network.sink import ReleasePublisher
from streamdp.synthetic import generate

from .recording_files import write_capture_recording
from .stderr_lines import first_lines_then_kill

#: the configuration files of the table's {tmp}: unknown keys, keys a command does not read, bad values
CONFIG_FILES = {
    "bad.toml": "epsilom = 2\n",
    "gaze.toml": "gaze_epsilon = 5.0\n",
    "session.toml": 'epsilon = 0.5\nunit = "session"\nbudget = 500.0\n',
    "live.toml": "reorder_window = 0.5\n",
    "replay.json": '{"config": {"epsilon": 2.0}}\n',
    "typos.toml": "epsilom = 1\nwindw = 2\n",
    "table.toml": "[privacy]\nepsilon = 1.0\n",
    "notoml.toml": "epsilon = = 1\n",
    "badstep.toml": "step = -1.0\n",
    "wrongtype.toml": 'epsilon = "high"\n',
    "garbage.json": "not json\n",
    "negseed.toml": "seed = -3\n",
}

#: the input files of the table's {tmp} that are not configuration: eye-camera data (Player's
#: pupil_positions.csv) where gaze is expected, and a picture where a bounds profile is expected
INPUT_FILES = {
    "pupil_positions.csv": "pupil_timestamp,eye_id,confidence,norm_pos_x,norm_pos_y,diameter\n"
    + "".join(f"{1000 + i / 120:.4f},0,0.99,0.5,0.5,30\n" for i in range(240)),
    "x.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe",
    # a folder holding only a file whose name no reader looks for (Capture's binocular gaze alone)
    "binocular/binocular_only_gaze.pldata": b"\x00",
}

#: placeholders in the table: {tmp} the test's folder, {busy} a port a plain socket listens on,
#: {relay} the port of a running relay's publisher, {cert} a certificate pair in {tmp}/certs
BUSY = r"tcp://127\.0\.0\.1:\d+: cannot listen there: the address is already in use"

#: the recordings in {data} (Capture folders of synthetic gaze from t 1000 s): "lost" 40 s, every sample
#: below the default --min-confidence 0.6; "mostly" 40 s, three samples in four below it; "short" 39.2 s,
#: whose steps with full windows (t 1030–1039 s) hold no slot of 16 steps of the public grid, one of 8
LOST = r"all 8000 gaze samples are below --min-confidence 0\.6 \(as when the eye tracker loses the eye\)"
GRID = r"chunks are fixed slots of {n} steps × 0\.5 s on the public grid of the source clock \(one every {s} s, "

#: how every estimate ends
WITHIN = r"\(an estimate, within a factor of 3\)"
#: the status of a row whose work is long but announced before it starts: the test reads the
#: announcement and kills the process (SIGKILL), never running the work
KILLED = -signal.SIGKILL

#: a features run on {tmp}/gaze.csv, and the options that describe its format
CSV = ["features", "{tmp}/gaze.csv", "--out", "{tmp}/f.csv"]
CSV_FORMAT = ["--csv-no-header", "--csv-delimiter", ";", "--time-unit", "ms"]

ROWS = [
    ("postprocess-steil", ["demo", "--mechanism", "steil", "--postprocess-releases"], 2,
     r"postprocess_releases needs a mechanism whose noise the ledger states \(dcfpa, cfpa, dcfpa-bozkir, lpa\), "
     r"got 'steil'"),
    # sockets
    ("relay-bind-busy", ["relay", "--bind", "tcp://127.0.0.1:{busy}"], 2, rf"^streamdp relay: error: {BUSY}"),
    ("second-relay", ["relay", "--bind", "tcp://127.0.0.1:{relay}"], 2, rf"^streamdp relay: error: {BUSY}"),
    ("simulate-port-busy", ["simulate", "--port", "{busy}", "--synthetic", "5"], 2,
     rf"^streamdp simulate: error: {BUSY}"),
    ("bind-not-here", ["relay", "--bind", "tcp://192.0.2.1:5570", "--insecure"], 2,
     r"^streamdp relay: error: tcp://192\.0\.2\.1:5570: cannot listen there: no interface of this machine has"),
    ("subscribe-foo", ["subscribe", "foo"], 2, r"^streamdp subscribe: error: foo: not an address to connect to"),
    ("pupil-remote-lan", ["relay", "--pupil-remote", "tcp://0.0.0.0:50020"], 2,
     r"^streamdp relay: error: tcp://0\.0\.0\.0:50020: refusing to publish sanitized features beyond this machine"),
    ("pupil-remote-busy", ["relay", "--pupil-remote", "tcp://127.0.0.1:{busy}"], 2,
     rf"^streamdp relay: error: {BUSY}"),
    ("pupil-remote-neon", ["relay", "--neon", "--pupil-remote", "tcp://127.0.0.1:50029"], 2,
     r"^streamdp relay: error: --pupil-remote serves apps of Pupil Capture: it needs Capture \(not --neon\)"),
    ("pupil-remote-is-capture", ["relay", "--pupil-remote", "tcp://127.0.0.1:50020"], 2,
     r"^streamdp relay: error: streamdp's Pupil Remote \(tcp://127\.0\.0\.1:50020\) cannot be Capture's"),
    ("evaluate-gaze-postprocess", ["evaluate", "--channel", "gaze", "--postprocess"], 2,
     r"^streamdp evaluate: error: --channel gaze and --postprocess contradict each other"),
    ("relay-remote-foo", ["relay", "--remote", "foo"], 2,
     r"^streamdp relay: error: foo: not an address to connect to \(give e\.g\. tcp://127\.0\.0\.1:50020\)"),
    ("remote-port", ["relay", "--remote", "tcp://127.0.0.1:99999"], 2,
     r"^streamdp relay: error: tcp://127\.0\.0\.1:99999: the port must be a number 1–65535"),
    ("curve-missing", ["relay", "--curve-secret", "/no", "--curve-clients", "{tmp}/certs"], 2,
     r"^streamdp relay: error: /no: no such certificate file"),
    ("curve-garbage", ["relay", "--curve-secret", "{tmp}/garbage.key", "--curve-clients", "{tmp}/certs"], 2,
     r"^streamdp relay: error: .*garbage\.key: not a ZeroMQ certificate"),
    ("curve-public-only", ["relay", "--curve-secret", "{tmp}/certs/server.key", "--curve-clients", "{tmp}/certs"], 2,
     r"^streamdp relay: error: .*server\.key: holds no secret key"),
    ("curve-no-clients", ["relay", "--curve-secret", "{tmp}/certs/server.key_secret", "--curve-clients", "{tmp}/no"],
     2, r"^streamdp relay: error: .*/no: no such folder of allowed clients' public certificates"),
    ("curve-half", ["relay", "--curve-secret", "{tmp}/certs/server.key_secret"], 2,
     r"^streamdp relay: error: CURVE needs both --curve-secret and --curve-clients"),
    ("subscribe-curve", ["subscribe", "tcp://127.0.0.1:5", "--curve-server-key", "/no", "--curve-client-cert", "/no"],
     2, r"^streamdp subscribe: error: /no: no such certificate file"),
    ("neon-unreachable", ["relay", "--neon", "127.0.0.1:1"], 2,
     r"^streamdp relay: error: --neon 127\.0\.0\.1:1: cannot reach the device: .*127\.0\.0\.1.*1"),
    ("neon-address", ["relay", "--neon", "host:99999"], 2,
     r"^streamdp relay: error: --neon host:99999: give HOST or HOST:PORT with a port 1–65535"),
    # paths
    ("out-proc", ["features", "--synthetic", "40", "--out", "/proc/streamdp/x.csv"], 2,
     r"^streamdp features: error: --out /proc/streamdp/x\.csv: cannot create files in /proc$"),
    ("out-folder", ["features", "--synthetic", "40", "--out", "{tmp}/certs"], 2,
     r"^streamdp features: error: --out .*/certs: is a folder: give a file name ending in \.csv or \.npz or \.parquet"),
    ("out-under-file", ["features", "--synthetic", "40", "--out", "{tmp}/garbage.key/x.csv"], 2,
     r"^streamdp features: error: --out .*garbage\.key/x\.csv: lies under .*garbage\.key, which is a file"),
    ("out-extension", ["features", "--synthetic", "40", "--out", "{tmp}/x.txt"], 2,
     r"^streamdp features: error: --out .*x\.txt: unknown extension '\.txt': give a file ending in \.csv"),
    ("replay-out-file", ["replay", "x", "--out", "{tmp}/garbage.key"], 2,
     r"^streamdp replay: error: --out .*garbage\.key: is a file, not a folder"),
    ("replay-out-proc", ["replay", "x", "--out", "/proc/streamdp-out"], 2,
     r"^streamdp replay: error: --out /proc/streamdp-out: cannot create files in /proc"),
    ("heatmap-shape", ["heatmap", "x", "--out", "{tmp}/m.npy", "--shape", "0x0"], 2,
     r"^streamdp heatmap: error: --shape 0x0: height and width must be whole numbers ≥ 1"),
    ("heatmap-cap", ["heatmap", "x", "--out", "{tmp}/m.npy", "--cap", "0"], 2,
     r"^streamdp heatmap: error: --cap must be a whole number ≥ 1 or 'auto', got '0'"),
    ("heatmap-png", ["heatmap", "x", "--out", "{tmp}/m.npy", "--png", "{tmp}/m.jpg"], 2,
     r"^streamdp heatmap: error: --png .*m\.jpg: unknown extension '\.jpg'"),
    ("config-missing", ["demo", "--config", "{tmp}/missing.toml"], 2,
     r"^streamdp demo: error: .*missing\.toml: no such file$"),
    ("config-key", ["relay", "--config", "{tmp}/bad.toml"], 2,
     r"^streamdp relay: error: .*bad\.toml: unknown key 'epsilom' \(did you mean 'epsilon'\?\)"),
    # library messages turned into sentences about the input
    ("chunk-longer-than-data", ["evaluate", "--chunk-lengths", "512", "--people", "2", "--seconds", "100",
                                "--mechanisms", "lpa", "--epsilons", "1", "--out", "{tmp}/eval", "-q"], 2,
     r"^streamdp evaluate: error: --chunk-lengths 512: 4 recordings of 4 give no two whole chunks of 512 steps"),
    ("chunk-not-power", ["evaluate", "--chunk-lengths", "100", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: chunk_length must be a power of two"),
    ("evaluate-per-feature", ["evaluate", "--epsilon-per-feature", "2.4", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: --epsilon-per-feature: the grid's ε is the total of a chunk; give --epsilons "
     r"52 × the per-feature ε \(e\.g\. --epsilons 124\.8 for 2\.4 per feature\)$"),
    ("audit-runs", ["audit", "--runs", "0"], 2,
     r"^streamdp audit: error: argument --runs: must be a whole number ≥ 1, got '0'"),
    ("audit-alpha", ["audit", "--alpha", "2"], 2,
     r"^streamdp audit: error: argument --alpha: must be a number strictly between 0 and 1, got '2'"),
    ("tiny-epsilon", ["demo", "--offline", "--epsilon", "1e-300"], 2,
     r"^streamdp demo: error: -?-?epsilon.1e-300 is (so|too) small.*noise scale overflows"),
    # options refused where they do not apply, or out of range
    ("budget-chunk", ["demo", "--budget", "5"], 2,
     r"^streamdp demo: error: budget applies to the w-event and session units, not to the chunk unit$"),
    ("w-session", ["replay", "x", "--out", "{tmp}/o", "--unit", "session", "--budget", "999", "--w", "3"], 2,
     r"^streamdp replay: error: w applies to the w-event unit, not to the session unit$"),
    ("k-lpa", ["demo", "--mechanism", "lpa", "--k", "3"], 2, r"^streamdp demo: error: lpa does not take parameter 'k'"),
    ("jobs-0", ["replay", "x", "--out", "{tmp}/o", "--jobs", "0"], 2,
     r"^streamdp replay: error: argument --jobs: must be a whole number ≥ 1, got '0'"),
    ("jobs-neg", ["replay", "x", "--out", "{tmp}/o", "--jobs", "-2"], 2, r"argument --jobs: .*got '-2'"),
    ("scheduler", ["replay", "x", "--out", "{tmp}/o", "--scheduler", "tcp://h:1"], 2,
     r"^streamdp replay: error: --scheduler needs --executor dask: it is the address of a dask\.distributed scheduler"),
    ("port-neg", ["simulate", "--port", "-1"], 2,
     r"^streamdp simulate: error: argument --port: must be a whole number from 0 to 65535, got '-1'"),
    ("port-big", ["simulate", "--port", "70000"], 2, r"argument --port: must be a whole number from 0 to 65535"),
    ("status-interval", ["relay", "--status-interval", "0"], 2, r"argument --status-interval: must be a number > 0"),
    ("demo-chunk-1024", ["demo", "--offline", "--chunk-length", "1024"], 2,
     r"^streamdp demo: error: --seconds 150 gives no whole chunk: .* ends 1047\.5 s after .*give --seconds 1048 "),
    ("demo-10-s", ["demo", "--seconds", "10"], 2,
     r"^streamdp demo: error: --seconds 10 gives no whole chunk: .*give --seconds 88 or more"),
    ("demo-speed", ["demo", "--speed", "-1"], 2, r"argument --speed: must be a number ≥ 0, got '-1'"),
    ("subscribe-count", ["subscribe", "x", "--count", "-1"], 2, r"argument --count: must be a whole number ≥ 0"),
    ("heatmap-delta", ["heatmap", "x", "--out", "{tmp}/m.npy", "--delta", "2"], 2,
     r"argument --delta: must be a number strictly between 0 and 1"),
    ("evaluate-people", ["evaluate", "--people", "1"], 2, r"argument --people: must be a whole number ≥ 2, got '1'"),
    ("evaluate-exists", ["evaluate", "--out", "{tmp}/certs", "--mechanisms", "lpa", "--epsilons", "1"], 2,
     r"^streamdp evaluate: error: .*certs: exists; pass --overwrite to replace it$"),
    # a CSV of any layout ({tmp}/gaze.csv: headerless, ';', times in ms, a bad cell in row 7)
    ("csv-stray", [*CSV, "--time-unit", "ms"], 2,
     r"^streamdp features: error: --time-unit applies to a CSV read with --csv-columns only$"),
    ("csv-role", [*CSV, "--csv-columns", "t=0,x=1,z=2"], 2,
     r"^streamdp features: error: --csv-columns: unknown role 'z' \(expected t, x, y, confidence, diameter\)"),
    ("csv-syntax", [*CSV, "--csv-columns", "t0,x=1,y=2"], 2,
     r"^streamdp features: error: --csv-columns: 't0' is not role=column \(e\.g\. t=0,x=1,y=2\)$"),
    ("csv-missing-y", [*CSV, "--csv-columns", "t=0,x=1"], 2,
     r"^streamdp features: error: --csv-columns must give y \(t, x and y are required\), got t=0,x=1$"),
    ("csv-twice", [*CSV, "--csv-columns", "t=0,x=1,y=2,x=3"], 2,
     r"^streamdp features: error: --csv-columns: x given twice"),
    ("csv-name-no-header", [*CSV, "--csv-columns", "t=time,x=1,y=2", "--csv-no-header"], 2,
     r"^streamdp features: error: --csv-columns: t is the name 'time', but the file has no header: give an index$"),
    ("csv-delimiter", [*CSV, "--csv-columns", "t=0,x=1,y=2", "--csv-delimiter", ";;"], 2,
     r"^streamdp features: error: --csv-delimiter must be one character other than a quote or line break, got ';;'$"),
    ("csv-px", [*CSV, "--csv-columns", "t=0,x=1,y=2", "--position-unit", "px"], 2,
     r"^streamdp features: error: --position-unit px needs --scene-size WxH"),
    ("csv-size", [*CSV, "--csv-columns", "t=0,x=1,y=2", "--position-unit", "px", "--scene-size", "big"], 2,
     r"^streamdp features: error: --scene-size 'big': give the width and height in px as WxH, e.g\. 1088x1080$"),
    ("csv-size-norm", [*CSV, "--csv-columns", "t=0,x=1,y=2", "--scene-size", "640x480"], 2,
     r"^streamdp features: error: --scene-size applies to --position-unit px only$"),
    ("csv-diameter", [*CSV, "--csv-columns", "t=0,x=1,y=2,diameter=3"], 2,
     r"^streamdp features: error: --csv-columns has a diameter column: say its unit with --diameter-unit mm or px"),
    ("csv-index", [*CSV, "--csv-columns", "t=0,x=1,y=9", *CSV_FORMAT], 2,
     r"^streamdp features: error: .*gaze\.csv: has 4 columns, y is column 9 \(0-based\)$"),
    ("csv-cell", [*CSV, "--csv-columns", "t=0,x=1,y=2,confidence=3", *CSV_FORMAT], 2,
     r"^streamdp features: error: .*gaze\.csv: row 7, column 1: 'abc' is not a number$"),
    ("csv-unit", [*CSV, "--csv-columns", "t=0,x=1,y=2", "--csv-no-header", "--csv-delimiter", ";"], 2,
     r"^streamdp features: error: .*gaze\.csv, column 0: timestamps look like milliseconds"),
    ("csv-folder", ["features", "{tmp}/certs", "--out", "{tmp}/f.csv", "--csv-columns", "t=0,x=1,y=2"], 2,
     r"^streamdp features: error: .*certs: is a folder; --csv-columns reads CSV files$"),
    ("csv-synthetic", ["features", "--synthetic", "40", "--out", "{tmp}/f.csv", "--csv-columns", "t=0,x=1,y=2"], 2,
     r"^streamdp features: error: --csv-columns describes a CSV file: give its path$"),
    ("csv-evaluate", ["evaluate", "--out", "{tmp}/eval", "--csv-columns", "t=0,x=1,y=2"], 2,
     r"^streamdp evaluate: error: --csv-columns reads the recordings of a --manifest; give one$"),
    # no silent wrong output
    ("zero-rows", ["features", "--synthetic", "20", "--out", "{tmp}/f.csv"], 1,
     r"^streamdp features: error: synthetic-reading-0: 20\.0 s of gaze is shorter than one 30 s window: no feature"),
    ("parquet-extra", ["features", "--synthetic", "40", "--out", "{tmp}/f.parquet"], 2,
     r"^streamdp features needs the optional extra: pip install 'streamdp\[parquet\]'$"),
    ("features-lost-eye", ["features", "{data}/lost", "--out", "{tmp}/f.csv"], 1,
     rf"^streamdp features: error: .*/lost: {LOST}: no feature rows, nothing written$"),
    ("features-mostly-lost", ["features", "{data}/mostly", "--out", "{tmp}/f.csv", "-q"], 0,
     r"^streamdp: warning: .*/mostly: 7\d% of 8000 gaze samples are below --min-confidence 0\.6: only the other 2\d% "
     r"count$"),
    ("replay-lost-eye", ["replay", "{data}/lost", "--out", "{tmp}/o"], 1,
     rf"^streamdp replay: error: .*/lost: {LOST}; nothing written to .*/o$"),
    ("replay-mostly-lost", ["replay", "{data}/mostly", "--out", "{tmp}/o", "--chunk-length", "8", "-q"], 0,
     r"^streamdp: warning: .*/mostly: 7\d% of 8000 gaze samples are below --min-confidence 0\.6: only the other"),
    ("heatmap-lost-eye", ["heatmap", "{data}/lost", "--out", "{tmp}/m.npy"], 1,
     rf"^streamdp heatmap: error: .*/lost: {LOST}: no fixation to map: leave it out of the observers; "
     r"nothing written$"),
    ("replay-no-slot", ["replay", "{data}/short", "--out", "{tmp}/o", "--chunk-length", "16"], 1,
     r"^streamdp replay: error: .*/short: no whole chunk: 39\.2 s of gaze gives 19 steps, enough for a chunk of 16 "
     r"but not on the public grid: " + GRID.format(n=16, s=8) + r"whatever the gaze\); the first slot after the "
     r"gaze's first full 30 s window \(t 1030\.0 s\) runs t 1032\.0–1039\.5 s, past the end of the gaze at "
     r"t 1039\.2 s; the 4 steps before it lie in a slot that starts before the first full window: give "
     r"--chunk-length 8 or less, or a longer recording; nothing written to .*/o$"),
    ("replay-too-short", ["replay", "{data}/short", "--out", "{tmp}/o", "--chunk-length", "32"], 1,
     r"^streamdp replay: error: .*/short: shorter than one chunk: 39\.2 s of gaze gives 19 steps, a chunk needs 32: "
     r"chunks are fixed slots .* give --chunk-length 8 or less, or a longer recording; nothing written to .*/o$"),
    ("replay-one-slot", ["replay", "{data}/short", "--out", "{tmp}/o", "--chunk-length", "8"], 0,
     r"^streamdp replay: .*/short: 19 steps with a full 30 s window \(t 1030\.0–1039\.0 s\), 8 of them in 1 whole "
     r"chunk \(t 1032\.0–1035\.5 s\); the other steps fall outside the public grid's chunk slots and are not "
     r"released \(-v: why\)$"),
    # options a command does not read, or does not have, and options that contradict each other (issue #27)
    ("features-mechanism", ["features", "--synthetic", "40", "--out", "{tmp}/f.csv", "--mechanism", "lpa"], 2,
     r"^streamdp features: error: --mechanism: streamdp features does not read mechanism \(read by streamdp demo, "),
    ("heatmap-window", ["heatmap", "x", "--out", "{tmp}/m.npy", "--window", "20"], 2,
     r"^streamdp heatmap: error: --window: streamdp heatmap does not read window \(read by streamdp features, "),
    ("heatmap-chunk-length", ["heatmap", "x", "--out", "{tmp}/m.npy", "--chunk-length", "32"], 2,
     r"^streamdp heatmap: error: --chunk-length: streamdp heatmap does not read chunk_length"),
    ("audit-unit", ["audit", "--unit", "session", "--budget", "5"], 2,
     r"^streamdp audit: error: --unit: streamdp audit does not read unit \(read by streamdp demo, relay, doctor"),
    ("audit-gaze-channel", ["audit", "--gaze-channel"], 2,
     r"^streamdp audit: error: --gaze-channel: streamdp audit does not read gaze_channel"),
    ("evaluate-identity", ["evaluate", "--identity", "alice@headset1", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: --identity: streamdp evaluate does not read identity \(read by streamdp demo"),
    ("doctor-epsilon", ["doctor", "--epsilon", "2"], 2,
     r"^streamdp doctor: error: --epsilon: streamdp doctor does not read epsilon"),
    ("simulate-epsilon", ["simulate", "--epsilon", "2"], 2,
     r"^streamdp simulate: error: --epsilon: streamdp simulate does not read epsilon \(read by "),
    ("subscribe-window", ["subscribe", "x", "--window", "3"], 2,
     r"^streamdp subscribe: error: --window: streamdp subscribe does not read window"),
    ("budget-epsilon", ["budget", "show", "--epsilon", "3"], 2,
     r"^streamdp budget: error: --epsilon: streamdp budget does not read epsilon"),
    ("replay-reorder", ["replay", "x", "--out", "{tmp}/o", "--reorder-window", "1"], 2,
     r"^streamdp replay: error: --reorder-window: streamdp replay does not read reorder_window \(read by streamdp "
     r"demo, relay\)"),
    ("unknown-option", ["demo", "--frobnicate"], 2, r"^streamdp demo: error: --frobnicate: no option of streamdp demo"),
    ("abbreviated", ["demo", "--offl"], 2, r"^streamdp demo: error: --offl: no option of streamdp demo"),
    ("abbreviated-w", ["audit", "--w", "3"], 2, r"^streamdp audit: error: --w: streamdp audit does not read w"),
    ("features-path-synthetic", ["features", "{data}/mostly", "--synthetic", "40", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: PATH and --synthetic contradict each other: synthetic gaze is made only when no"),
    ("features-path-seed", ["features", "{data}/mostly", "--seed", "4", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: PATH and --seed contradict each other: --seed seeds the synthetic gaze"),
    ("simulate-path-synthetic", ["simulate", "x", "--synthetic", "5"], 2,
     r"^streamdp simulate: error: PATH and --synthetic contradict each other"),
    ("relay-invisible", ["relay", "--invisible"], 2,
     r"^streamdp relay: error: --invisible needs --neon: it says that the device --neon reads is a Pupil Invisible"),
    ("relay-neon-remote", ["relay", "--neon", "--remote", "tcp://127.0.0.1:50020"], 2,
     r"^streamdp relay: error: --neon and --remote contradict each other: --remote is Pupil Capture's Pupil Remote"),
    ("relay-neon-backbone", ["relay", "--neon", "host", "--to-backbone"], 2,
     r"^streamdp relay: error: --neon and --to-backbone contradict each other"),
    ("relay-neon-blinks", ["relay", "--neon", "--blinks", "confidence"], 2,
     r"^streamdp relay: error: --neon and --blinks confidence contradict each other: a Neon's confidence is 1"),
    ("relay-pupil-remote-gaze", ["relay", "--pupil-remote-gaze", "2d"], 2,
     r"^streamdp relay: error: --pupil-remote-gaze needs --pupil-remote"),
    ("relay-pupil-remote-channel-off", ["relay", "--pupil-remote", "tcp://127.0.0.1:50029", "--no-gaze-channel"], 2,
     r"^streamdp relay: error: --pupil-remote and --no-gaze-channel contradict each other"),
    ("relay-neon-wait", ["relay", "--neon", "--wait-timeout", "5"], 2,
     r"^streamdp relay: error: --neon and --wait-timeout contradict each other"),
    ("relay-wait-0", ["relay", "--wait-timeout", "0"], 2, r"argument --wait-timeout: must be a number > 0, got '0'"),
    ("demo-offline-speed", ["demo", "--offline", "--speed", "1"], 2,
     r"^streamdp demo: error: --offline and --speed contradict each other: the offline demo runs in-process"),
    ("demo-offline-slack", ["demo", "--offline", "--deadline-slack", "1"], 2,
     r"^streamdp demo: error: --offline and --deadline-slack contradict each other"),
    ("doctor-neon-timeout", ["doctor", "--neon", "--timeout", "3"], 2,
     r"^streamdp doctor: error: --neon and --timeout contradict each other"),
    ("doctor-neon-remote", ["doctor", "--neon", "h", "--remote", "tcp://127.0.0.1:50020"], 2,
     r"^streamdp doctor: error: --neon and --remote contradict each other"),
    ("heatmap-laplace-delta", ["heatmap", "x", "--out", "{tmp}/m.npy", "--mechanism", "laplace", "--delta", "0.1"], 2,
     r"^streamdp heatmap: error: --mechanism laplace and --delta contradict each other: the Laplace mechanism has no"),
    # gaze beyond the public plausibility bounds ({data}/far: one sample in ten at 10⁶ scene widths; nowhere: all)
    ("features-far", ["features", "{data}/far", "--out", "{tmp}/f.csv"], 0,
     r"^wrote \d+ UNSANITIZED feature rows of far .*; 800 of 8000 gaze samples \(10%\) beyond the public "
     r"plausibility bounds \(800 positions beyond 10 scene widths\), counted as invalid$"),
    ("features-nowhere", ["features", "{data}/nowhere", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: .*/nowhere: no plausible gaze left: 8000 of 8000 gaze samples \(100%\) beyond "
     r"the public plausibility bounds \(8000 positions beyond 10 scene widths\), counted as invalid$"),
    ("heatmap-nowhere", ["heatmap", "{data}/nowhere", "--out", "{tmp}/m.npy"], 2,
     r"^streamdp heatmap: error: .*/nowhere: no plausible gaze left: 8000 of 8000"),
    ("replay-nowhere", ["replay", "{data}/nowhere", "--out", "{tmp}/o"], 1,
     r"^streamdp replay: error: .*/nowhere: cannot read: .*/nowhere: no plausible gaze left: 8000 of 8000 .*; "
     r"nothing written to .*/o$"),
    # work sized by the options: refused when it cannot fit in memory, else announced before it starts
    # (issue #27 item 2; KILLED rows: the test reads the announcement, then kills the process)
    ("features-step-an-hour", ["features", "--synthetic", "3600", "--step", "1e-6", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: needs about \S+ years and \S+ TB of memory for 3\.6e\+09 steps × 52 features "
     rf"{WITHIN}, more than the \S+ [GT]B this machine has available: give a larger --step or less gaze$"),
    ("features-step-long", ["features", "{data}/far", "--step", "1e-5", "--out", "{tmp}/f.csv"], KILLED,
     rf"^streamdp features: this will take about \S+ weeks and \S+ GB of memory for 1e\+06 steps × 52 features "
     rf"{WITHIN}; progress follows \(Ctrl-C stops it\)$"),
    ("replay-step-long", ["replay", "{data}/far", "--step", "1e-5", "--out", "{tmp}/o"], KILLED,
     rf"^streamdp replay: this will take about \S+ weeks and \S+ GB of memory for 1e\+06 steps × 52 features "
     rf"{WITHIN}; progress follows \(Ctrl-C stops it\)$"),
    ("demo-seconds-1e7", ["demo", "--seconds", "1e7"], 2,
     r"^streamdp demo: error: needs about .* GB of memory for 2e\+09 gaze samples → 2e\+07 steps × 52 features "
     rf"{WITHIN}, more than .* give a smaller --seconds \(or a larger --step\)$"),
    ("demo-offline-1e9-quiet", ["demo", "--offline", "--seconds", "1e9", "-q"], 2,
     r"^streamdp demo: error: needs about .* TB of memory for 2e\+11 gaze samples"),
    ("demo-step-long", ["demo", "--offline", "--step", "0.001"], KILLED,
     r"^streamdp demo: this will take about \S+ min and \S+ MB of memory for 3e\+04 gaze samples → 1\.2e\+05 steps "
     r"× 52 features"),
    ("simulate-synthetic-1e7", ["simulate", "--synthetic", "1e7", "--port", "0"], 2,
     rf"^streamdp simulate: error: needs about .* GB of memory for 2e\+09 gaze datums {WITHIN}, more than .* give a "
     r"smaller --synthetic$"),
    ("heatmap-shape-huge", ["heatmap", "{data}/mostly", "--out", "{tmp}/m.npy", "--shape", "10000x10000"], 2,
     r"^streamdp heatmap: error: needs about .* GB of memory for a map of 1e\+08 pixels over 1 observer and its "
     r"picture .* give a smaller --shape$"),
    ("audit-runs-huge", ["audit", "--mechanisms", "lpa", "--runs", "100000000"], 2,
     r"^streamdp audit: error: needs about .* TB of memory for 1 mechanism × 100000000 runs .* give a smaller --runs "
     r"or fewer mechanisms$"),
    ("audit-runs-long", ["audit", "--mechanisms", "lpa", "--runs", "10000"], KILLED,
     rf"^streamdp audit: this will take about 70 s and 2\.2 GB of memory for 1 mechanism × 10000 runs {WITHIN}"),
    ("evaluate-people-huge", ["evaluate", "--people", "100000", "--seconds", "10000", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: needs about .* TB of memory for 2\.4e\+11 synthetic gaze samples, then 90 jobs "
     r"\(grid points × seeds\) .* give fewer --people, a smaller --seconds, or fewer grid points or --seeds$"),
    ("evaluate-seeds-long", ["evaluate", "--seeds", "1000", "--out", "{tmp}/eval"], KILLED,
     r"^streamdp evaluate: this will take about .* for 3\.5e\+05 synthetic gaze samples, then 30000 jobs "
     r"\(grid points × seeds\) over 5\.1e\+03 feature steps"),
    ("evaluate-gaze-people-huge", ["evaluate", "--channel", "gaze", "--people", "10000000", "--out", "{tmp}/eval"],
     2, r"^streamdp evaluate: error: needs about .* TB of memory for 34 jobs \(grid points × seeds\) over 10000000 "
     r"synthetic people .* or --no-reid$"),
    # configuration files: an unknown key, or one the command does not read, names the file and the key
    ("config-unread-evaluate", ["evaluate", "--config", "{tmp}/gaze.toml", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: .*gaze\.toml: gaze_epsilon = 5\.0: streamdp evaluate does not read gaze_epsilon "
     r"\(read by streamdp demo, relay, replay, audit\)$"),
    ("config-unread-doctor", ["doctor", "--config", "{tmp}/session.toml"], 2,
     r"^streamdp doctor: error: .*session\.toml: epsilon = 0\.5: streamdp doctor does not read epsilon \(read by "),
    ("config-unread-replay", ["replay", "x", "--out", "{tmp}/o", "--config", "{tmp}/live.toml"], 2,
     r"^streamdp replay: error: .*live\.toml: reorder_window = 0\.5: streamdp replay does not read reorder_window "
     r"\(read by streamdp demo, relay\)$"),
    ("config-unread-json", ["doctor", "--config", "{tmp}/replay.json"], 2,
     r"^streamdp doctor: error: .*replay\.json: epsilon = 2\.0: streamdp doctor does not read epsilon"),
    ("config-typos", ["demo", "--config", "{tmp}/typos.toml"], 2,
     r"^streamdp demo: error: .*typos\.toml: unknown keys 'epsilom' \(did you mean 'epsilon'\?\), 'windw' \(did you "
     r"mean 'window'\?\)$"),
    ("config-table", ["relay", "--config", "{tmp}/table.toml"], 2,
     r"^streamdp relay: error: .*table\.toml: unknown key 'privacy'$"),
    ("config-not-toml", ["demo", "--config", "{tmp}/notoml.toml"], 2,
     r"^streamdp demo: error: .*notoml\.toml: not valid TOML: .*line 1"),
    ("config-folder", ["evaluate", "--config", "{tmp}/certs", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: .*certs: is a folder, not a TOML file$"),
    ("config-bad-step", ["demo", "--config", "{tmp}/badstep.toml"], 2,
     r"^streamdp demo: error: .*badstep\.toml: WindowConfig\.step must be finite and > 0, got -1\.0$"),
    ("config-wrong-type", ["demo", "--config", "{tmp}/wrongtype.toml"], 2,
     r"^streamdp demo: error: .*wrongtype\.toml: epsilon must be a number, got 'high'$"),
    ("config-not-json", ["replay", "x", "--out", "{tmp}/o", "--config", "{tmp}/garbage.json"], 2,
     r"^streamdp replay: error: .*garbage\.json: not valid JSON: "),
    ("config-negative-seed", ["demo", "--config", "{tmp}/negseed.toml"], 2,
     r"^streamdp demo: error: .*negseed\.toml: seed must be ≥ 0 \(or None: OS entropy\), got -3$"),
    # the configuration's own rules, as the library keeps them
    ("demo-seed-negative", ["demo", "--offline", "--seed", "-1"], 2,
     r"^streamdp demo: error: seed must be ≥ 0 \(or None: OS entropy\), got -1$"),
    ("features-seed-negative", ["features", "--synthetic", "40", "--seed", "-1", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: argument --seed: must be a whole number ≥ 0, got '-1'"),
    ("heatmap-seed-negative", ["heatmap", "x", "--out", "{tmp}/m.npy", "--seed", "-5"], 2,
     r"^streamdp heatmap: error: argument --seed: must be a whole number ≥ 0, got '-5'"),
    ("evaluate-seed-negative", ["evaluate", "--seed", "-1", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: argument --seed: must be a whole number ≥ 0, got '-1'"),
    ("blink-onset", ["features", "--synthetic", "40", "--blink-onset", "1.5", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: blink_onset must be strictly between 0 and 1, got 1\.5$"),
    ("min-blink-duration", ["heatmap", "x", "--out", "{tmp}/m.npy", "--min-blink-duration", "3"], 2,
     r"^streamdp heatmap: error: min_blink_duration must be ≥ 0 and at most max_blink_duration \(2\.0\), got 3\.0$"),
    ("gaze-smoothing", ["demo", "--gaze-channel", "--gaze-smoothing", "median4"], 2,
     r"^streamdp demo: error: --gaze-smoothing must be none, median<k> or adaptive<k> with k odd, 3 ≤ k ≤ 31 ticks, "
     r"got 'median4'$"),
    ("chunk-length-2^21", ["demo", "--chunk-length", "2097152"], 2,
     r"^streamdp demo: error: chunk_length must be at most 2\^20 = 1048576, got 2097152$"),
    ("chunk-length-3", ["demo", "--offline", "--chunk-length", "3"], 2,
     r"^streamdp demo: error: chunk_length must be a power of two ≥ 2, got 3$"),
    ("min-confidence-2", ["features", "--synthetic", "40", "--min-confidence", "2", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: EventConfig\.min_confidence must be in \[0, 1\], got 2\.0$"),
    ("epsilon-and-per-feature", ["demo", "--epsilon-per-feature", "1", "--epsilon", "2"], 2,
     r"^streamdp demo: error: give epsilon \(a chunk's total, 2\.0\) or epsilon_per_feature \(1\.0\), not both$"),
    ("epsilon-nan", ["demo", "--offline", "--epsilon", "nan"], 2, r"^streamdp demo: error: epsilon must be finite, "
     r"got nan$"),
    ("step-0", ["features", "--synthetic", "40", "--step", "0", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: WindowConfig\.step must be finite and > 0, got 0\.0$"),
    ("window-negative", ["features", "--synthetic", "40", "--window", "-5", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: WindowConfig\.window must be finite and > 0, got -5\.0$"),
    # issue #37: silent or misleading answers to a typo, an empty subscription, the wrong file
    ("budget-reset-unknown", ["budget", "reset", "nobody@nowhere", "--ledger-dir", "{tmp}/certs"], 2,
     r"^streamdp budget: error: nobody@nowhere: no ledger of this identity in .*/certs \(streamdp budget show "
     r"--ledger-dir .*/certs lists them; give --create to start one\)$"),
    ("budget-show-file", ["budget", "show", "--ledger-dir", "{tmp}/garbage.key"], 2,
     r"^streamdp budget: error: --ledger-dir .*/garbage\.key: is a file, not a folder of ledgers$"),
    ("budget-show-missing", ["budget", "show", "--ledger-dir", "{tmp}/no-ledgers"], 2,
     r"^streamdp budget: error: --ledger-dir .*/no-ledgers: no such folder$"),
    ("budget-reset-file", ["budget", "reset", "alice@h", "--create", "--ledger-dir", "{tmp}/garbage.key"], 2,
     r"^streamdp budget: error: --ledger-dir .*/garbage\.key: is a file, not a folder of ledgers$"),
    ("subscribe-nothing-arrives", ["subscribe", "tcp://127.0.0.1:{busy}", "--timeout", "0.3"], 1,
     r"^streamdp subscribe: error: tcp://127\.0\.0\.1:\d+: nothing arrived within 0\.3 s \(is a relay publishing "
     r"there, on streamdp\.features\. and streamdp\.gaze\.\?\)$"),
    ("features-pupil-positions", ["features", "{tmp}/pupil_positions.csv", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: .*/pupil_positions\.csv: eye-camera data \(pupil positions in the eye images, "
     r"from Player's pupil_positions\.csv\), not gaze in the scene: give the export's gaze_positions\.csv"),
    ("replay-pupil-positions", ["replay", "{tmp}/pupil_positions.csv", "--out", "{tmp}/o"], 2,
     r"^streamdp replay: error: .*/pupil_positions\.csv: eye-camera data"),
    ("heatmap-pupil-positions", ["heatmap", "{tmp}/pupil_positions.csv", "--out", "{tmp}/m.npy"], 2,
     r"^streamdp heatmap: error: .*/pupil_positions\.csv: eye-camera data"),
    ("relay-bind-nonsense", ["relay", "--bind", "nonsense"], 2,
     r"^streamdp relay: error: --bind nonsense: not an address to listen on \(give e\.g\. tcp://127\.0\.0\.1:5570\)$"),
    ("relay-status-bind-port", ["relay", "--status-bind", "tcp://127.0.0.1:http"], 2,
     r"^streamdp relay: error: --status-bind tcp://127\.0\.0\.1:http: not an address to listen on"),
    ("demo-bounds-png", ["demo", "--offline", "--bounds", "{tmp}/x.png"], 2,
     r"^streamdp demo: error: .*/x\.png: not a bounds profile: not UTF-8 text \(byte 0\); give a TOML or JSON file$"),
    ("doctor-pupil-remote-is-capture", ["doctor", "--pupil-remote", "tcp://127.0.0.1:50020", "--remote",
                                        "tcp://127.0.0.1:50020"], 2,
     r"^streamdp doctor: error: streamdp's Pupil Remote \(tcp://127\.0\.0\.1:50020\) cannot be Capture's "
     r"\(tcp://127\.0\.0\.1:50020\)$"),
    ("replay-binocular-only", ["replay", "{tmp}/binocular", "--out", "{tmp}/o"], 1,
     r"^streamdp replay: error: .*/binocular: cannot read: .*/binocular: not a recording streamdp reads: it holds "
     r"none of info\.player\.json, gaze\.pldata or offline_data/ \(a Pupil Capture recording\), gaze_positions\.csv "
     r"\(a Player export\), gaze\.csv \(a Pupil Cloud export\), info\.json with gaze\*\.raw \(a Neon recording\); "
     r"nothing written to .*/o$"),
    ("evaluate-manifest-missing", ["evaluate", "--manifest", "{tmp}/none.csv", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: --manifest .*/none\.csv: no such file$"),
    ("evaluate-mechanism-and-mechanisms", ["evaluate", "--mechanism", "lpa", "--mechanisms", "cfpa"], 2,
     r"^streamdp evaluate: error: give --mechanism or --mechanisms, not both$"),
    # what argparse refuses: one line, no usage block
    ("no-command", [], 2, r"^streamdp: error: the following arguments are required: COMMAND \(see streamdp --help\)$"),
    ("unknown-command", ["frobnicate"], 2, r"^streamdp: error: argument COMMAND: invalid choice: 'frobnicate'"),
    ("features-no-out", ["features", "--synthetic", "40"], 2,
     r"^streamdp features: error: the following arguments are required: --out"),
    ("step-word", ["features", "--synthetic", "40", "--step", "fast", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: argument --step: invalid float value: 'fast'"),
    ("features-synthetic-0", ["features", "--synthetic", "0", "--out", "{tmp}/f.csv"], 2,
     r"^streamdp features: error: argument --synthetic: must be a number > 0, got '0'"),
    ("demo-seconds-inf", ["demo", "--seconds", "inf"], 2,
     r"^streamdp demo: error: argument --seconds: must be a number > 0, got 'inf'"),
    ("heatmap-shape-word", ["heatmap", "x", "--out", "{tmp}/m.npy", "--shape", "big"], 2,
     r"^streamdp heatmap: error: --shape must be HEIGHTxWIDTH, e\.g\. 48x64, got 'big'$"),
    ("evaluate-epsilons-0", ["evaluate", "--epsilons", "0", "--out", "{tmp}/eval"], 2,
     r"^streamdp evaluate: error: argument --epsilons: must be a number > 0, got '0'"),
    ("evaluate-workers-0", ["evaluate", "--workers", "0"], 2,
     r"^streamdp evaluate: error: argument --workers: must be a whole number ≥ 1, got '0'"),
    ("audit-runs-10", ["audit", "--runs", "10"], 2, r"^streamdp audit: error: --runs must be ≥ 20, got 10$"),
    ("subscribe-nothing", ["subscribe"], 2,
     r"^streamdp subscribe: error: the following arguments are required: endpoint"),
    ("budget-nothing", ["budget"], 2, r"^streamdp budget: error: the following arguments are required: ACTION"),
]

#: rows run in a fresh interpreter: what a library prints while the interpreter tears an object
#: down (the realtime API's cleanup) shows only there
SUBPROCESS = {"neon-unreachable"}
#: rows run as if an optional extra were not installed
WITHOUT = {"parquet-extra": "pyarrow"}
#: rows that run and write their output (exit 0, a warning or a note on stderr): what appears in the folder
WRITES = {
    "features-far": {"f.csv"},
    "features-mostly-lost": {"f.csv"},
    "replay-mostly-lost": {"o"},
    "replay-one-slot": {"o"},
}


@pytest.fixture(scope="module")
def ports():
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    relay = ReleasePublisher("tcp://127.0.0.1:0")  # a relay already publishing there
    try:
        yield {"busy": busy.getsockname()[1], "relay": relay.endpoint.rsplit(":", 1)[1]}
    finally:
        relay.close()
        busy.close()


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The recordings of the table's {data} (see LOST above)."""
    folder = tmp_path_factory.mktemp("recordings")
    rec = generate(duration=40.0, rate=200.0, seed=0).recording
    gaze, n = rec.gaze, len(rec.gaze)
    lost = np.full(n, 0.3)
    mostly = np.where(np.arange(n) % 4 == 0, gaze.confidence, 0.3)
    for name, confidence in (("lost", lost), ("mostly", mostly)):
        write_capture_recording(replace(rec, gaze=replace(gaze, confidence=confidence)), folder / name)
    write_capture_recording(generate(duration=39.2, rate=200.0, seed=0).recording, folder / "short")
    far = gaze.x.copy()
    far[::10] = 1e6
    write_capture_recording(replace(rec, gaze=replace(gaze, x=far)), folder / "far")
    write_capture_recording(replace(rec, gaze=replace(gaze, x=np.full(n, 1e300))), folder / "nowhere")
    return folder


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


@pytest.mark.parametrize(("argv", "code", "pattern"), [pytest.param(*r[1:], id=r[0]) for r in ROWS])
def test_bad_input_ends_with_one_line_naming_it(
    request, tmp_path, ports, data, monkeypatch, capsys, argv, code, pattern
):
    row = request.node.callspec.id
    if row == "neon-unreachable":
        pytest.importorskip("pupil_labs.realtime_api")
    (tmp_path / "certs").mkdir()
    zmq.auth.create_certificates(str(tmp_path / "certs"), "server")
    (tmp_path / "garbage.key").write_text("not a certificate\n")
    for name, text in CONFIG_FILES.items():
        (tmp_path / name).write_text(text)
    for name, content in INPUT_FILES.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        else:
            (tmp_path / name).write_text(content)
    cells = [f"{1000 + 5 * i};0.5;0.{i % 9};0.9" for i in range(400)]
    cells[6] = "1030;abc;0.5;0.9"
    (tmp_path / "gaze.csv").write_text("\n".join(cells) + "\n")
    before = _files(tmp_path)
    args = [a.format(tmp=tmp_path, data=data, **ports) for a in argv]
    if code == KILLED:
        status, err = KILLED, "\n".join(first_lines_then_kill(args, 1))
    elif row in SUBPROCESS:
        proc = subprocess.run(
            [sys.executable, "-m", "streamdp.cli", *args], capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        status, err = proc.returncode, proc.stderr
    else:
        if row in WITHOUT:
            monkeypatch.setitem(sys.modules, WITHOUT[row], None)  # importing it raises ImportError
        try:
            status = main(args)
        except SystemExit as exc:  # argparse refuses an option value
            status = exc.code
        err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1, f"want one line on stderr, got {lines}"
    assert re.search(pattern, lines[0]), lines[0]
    assert status == code
    after = _files(tmp_path)
    assert before <= after and {p for p in after - before if "/" not in p} == WRITES.get(row, set()), (
        "something was left behind" if row not in WRITES else "the output is not where it belongs"
    )
