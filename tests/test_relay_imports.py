"""What the relay and the Capture plugin load: no SciPy solver, no sparse matrices, and with the
DFT mechanisms no SciPy at all.

The reachable-set sensitivity a mechanism needs when it is built is solved by a dynamic programme
in NumPy (:mod:`streamdp.privacy.sensitivity`), the DCT and the Gaussian heatmap import SciPy
when they are used. Each check runs in a fresh interpreter, where ``sys.modules`` shows everything
the import and the construction loaded, and its resident memory (``VmRSS``) is read there too.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STANDIN = Path(__file__).resolve().parent / "pupil_standin"

#: never loaded by building a session: SciPy's solvers and sparse matrices (~45 MB resident)
SOLVERS = ("scipy.optimize", "scipy.sparse", "scipy.linalg", "scipy.spatial", "scipy.stats", "scipy.signal")

#: what the relay's process may carry beyond numpy, pyzmq and msgpack, in MB: streamdp's own
#: modules take ~10 MB; SciPy's solvers would add ~45 MB
MAX_RSS_ABOVE_NUMPY_MB = 30.0

_PROBE = """
import json, sys
sys.path[:0] = {path!r}

def rss_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024

import numpy, zmq, msgpack
base = rss_mb()
{build}
print(json.dumps({{"modules": sorted(m for m in sys.modules if m == "scipy" or m.startswith("scipy.")),
                   "rss_above_numpy": rss_mb() - base}}))
"""

_RELAY = """
import streamdp.network.relay, streamdp.network.sink
from streamdp.config import SessionConfig
from streamdp.session import Session
config = SessionConfig(**{settings!r}).check()
session = Session(config, sinks=[], source="Pupil Capture at tcp://127.0.0.1:50020")
"""

_PLUGIN = """
import types
import streamdp_capture
plugin = streamdp_capture.StreamDP(types.SimpleNamespace(), **{settings!r})
assert plugin.session is not None
"""


def _probe(build: str, *, path: tuple[str, ...] = ()) -> dict[str, object]:
    code = _PROBE.format(path=list(path), build=build)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _relay(**settings: object) -> dict[str, object]:
    return _probe(_RELAY.format(settings=settings))


def test_the_default_relay_session_loads_no_scipy_and_little_memory():
    got = _relay()
    assert got["modules"] == []
    assert isinstance(got["rss_above_numpy"], float) and got["rss_above_numpy"] < MAX_RSS_ABOVE_NUMPY_MB


def test_the_default_capture_plugin_session_loads_no_scipy():
    got = _probe(_PLUGIN.format(settings={}), path=(str(STANDIN), str(ROOT / "plugins")))
    assert got["modules"] == []


@pytest.mark.parametrize(
    "settings",
    [
        {"chunk_length": 16},
        {"chunk_length": 32, "k": 2},
        {"chunk_length": 128, "k": 3},
        {"chunk_length": 256},
        {"chunk_length": 32, "k": "private"},
        {"mechanism": "cfpa", "chunk_length": 32, "k": 4},
        {"mechanism": "dcfpa-bozkir", "chunk_length": 64},
        {"mechanism": "lpa", "chunk_length": 16},
        {"mechanism": "steil", "chunk_length": 32},
        {"signal": "eye-camera-norm"},
    ],
    ids=repr,
)
def test_common_dft_choices_load_no_scipy(settings):
    assert _relay(**settings)["modules"] == []


def test_a_dct_session_loads_scipy_fft_but_no_solver():
    modules = _relay(transform="dct", chunk_length=32, k=3)["modules"]
    assert isinstance(modules, list)
    assert "scipy.fft" in modules  # the probe sees what the construction loads
    assert not [m for m in modules if m.startswith(SOLVERS)]


def test_the_probe_reports_a_solver_the_construction_loads():
    got = _probe("import scipy.optimize")
    assert "scipy.optimize" in got["modules"] and "scipy.sparse" in got["modules"]
    assert isinstance(got["rss_above_numpy"], float) and got["rss_above_numpy"] > 10.0
