"""streamdp on the oldest numpy and scipy a bundled Capture v3.6+ can carry (issue #24, item 3).

These tests run another Python: the venv of tests/oldest_numpy.py (Python 3.11, numpy 1.23.2,
scipy 1.9.2, msgpack 1.0.5, pyzmq 25.0.0), named by ``STREAMDP_OLDEST_PYTHON``; without it they
skip, saying how to build it. There the installed plugin and the relay's core run with every
module of that venv but those four blocked, as in a bundle that has nothing else.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from streamdp.cli import install_plugin as ip

from .oldest_numpy import BUNDLED, ENV, PINS, PYTHON

REPO = Path(__file__).resolve().parent.parent
LOADER = REPO / "tests" / "pupil_standin" / "load_installed.py"


@pytest.fixture(scope="module")
def oldest() -> str:
    python = os.environ.get(ENV)
    if not python:
        pytest.skip(f"{ENV} is not set: build the venv with `python3.11 -m tests.oldest_numpy /tmp/oldest` "
                    f"and set {ENV}=/tmp/oldest/bin/python")
    if not Path(python).is_file():
        pytest.fail(f"{ENV}={python}: no such file")
    return python


def _run(python: str, *args: str, cwd: Path | None = None) -> str:
    out = subprocess.run([python, *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def _not_bundled(python: str) -> list[str]:
    """Every top-level module of that venv's site-packages that the bundle would not carry and
    that the interpreter did not already load at startup (a .pth hook)."""
    listing = _run(python, "-c", (
        "import json, pkgutil, site, sys\n"
        "names = {m.name for m in pkgutil.iter_modules(site.getsitepackages())}\n"
        "print(json.dumps(sorted(n for n in names if n not in sys.modules)))"
    ))
    return [n for n in json.loads(listing) if n not in BUNDLED]


def test_the_venv_holds_the_oldest_versions(oldest):
    versions = json.loads(_run(oldest, "-c", (
        "import json, sys, numpy, scipy, msgpack, zmq\n"
        "print(json.dumps([list(sys.version_info[:2]), numpy.__version__, scipy.__version__,"
        " '.'.join(map(str, msgpack.version)), zmq.__version__]))"
    )))
    assert versions == [list(PYTHON), PINS["numpy"], PINS["scipy"], PINS["msgpack"], PINS["pyzmq"]]


def test_install_plugin_accepts_that_python_and_reports_its_versions(oldest, tmp_path, capsys):
    from streamdp.cli import main

    assert main(["install-plugin", str(tmp_path), "--python", oldest]) == 0
    assert "for Python 3.11, numpy 1.23" in capsys.readouterr().err
    target = ip.probe_python(oldest)
    assert (target.python, target.numpy) == ((3, 11), (1, 23))


def test_the_installed_plugin_releases_with_the_oldest_numpy_and_nothing_else(oldest, tmp_path):
    ip.install(tmp_path, ip.probe_python(oldest))
    blocked = _not_bundled(oldest)
    assert {"pip"} <= set(blocked)  # the block list is real: the venv's own tools are in it
    loaded = _run(oldest, "-W", "error", str(LOADER), str(tmp_path), *blocked, cwd=tmp_path)
    report = json.loads(loaded.splitlines()[-1])
    here = json.loads(_run(sys.executable, str(LOADER), str(tmp_path), cwd=tmp_path).splitlines()[-1])
    assert report["streamdp"] == str(tmp_path / "streamdp" / "__init__.py") and report["blocked_loaded"] == []
    assert report["topics"] == ["streamdp.features.dcfpa"] and len(report["timestamps"]) >= 20
    # the public grid does not depend on numpy's version
    assert report["timestamps"] == here["timestamps"]


#: the relay's core on that Python: a live session (``argv[1]``: its settings, JSON) publishing
#: through ZeroMQ to a subscriber, every module in ``argv[2:]`` blocked
CORE = """
import json, sys
sys.meta_path.insert(0, __import__("load_installed").Blocked(sys.argv[2:]))
import msgpack, numpy as np, zmq
from streamdp.config import SessionConfig
from streamdp.gaze import GazeColumns
from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.session import Session

sink = ReleasePublisher("tcp://127.0.0.1:0")
sub = connect_subscriber(sink.endpoint)
assert sink.wait_for_subscribers(1, timeout=10.0)
session = Session(SessionConfig(window=4.0, step=0.5, **json.loads(sys.argv[1])), sinks=[sink])
rng = np.random.default_rng(1)
t = 1000.0 + np.arange(12_000) / 120.0
xy = rng.uniform(0.3, 0.7, (t.size // 30 + 1, 2))[np.arange(t.size) // 30]
n = t.size
for part in np.array_split(np.arange(n), 100):
    session.receive(GazeColumns.from_arrays(
        t=t[part], x=xy[part, 0], y=xy[part, 1], confidence=np.full(part.size, 0.95),
        diameter_mm=np.full(part.size, 3.5), diameter_px=np.full(part.size, np.nan),
        eye_id=np.full(part.size, 2), valid=np.ones(part.size, bool)))
session.advance_to(float(t[-1]) + 60.0)
poller = zmq.Poller()
poller.register(sub, zmq.POLLIN)
got = []
while poller.poll(2000):
    topic, payload = sub.recv_multipart()
    got.append(msgpack.unpackb(payload, raw=False))
sub.close(linger=0)
sink.close()
solvers = sorted({m.split(".")[1] for m in sys.modules if m.startswith("scipy.") and m.split(".")[1] in
                  ("linalg", "optimize", "sparse", "spatial", "stats", "signal")})
print(json.dumps([len(got), list(np.asarray(got[0]["values"]).shape), session.counters.released, solvers]))
"""


@pytest.mark.parametrize(
    ("settings", "solvers"),
    [
        ({"chunk_length": 8}, []),
        # scipy.fft of scipy < 1.17 imports scipy.linalg itself (and 1.9.2's linalg scipy.sparse;
        # 1.9.2 to 1.16.3 do, 1.17.0 does not): a DCT session's footprint without solvers
        # (tests/test_relay_imports.py) needs scipy 1.17; the default DFT session needs no scipy
        ({"chunk_length": 32, "transform": "dct", "k": 3}, ["linalg", "sparse"]),
    ],
    ids=["default-dft", "dct"],
)
def test_the_relay_core_publishes_with_the_oldest_numpy_and_nothing_else(oldest, settings, solvers):
    blocked = _not_bundled(oldest)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(LOADER.parent)])}
    out = subprocess.run(
        [oldest, "-W", "error", "-c", CORE, json.dumps(settings), *blocked],
        capture_output=True, text=True, timeout=300, env=env, cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    received, shape, released, loaded = json.loads(out.stdout.splitlines()[-1])
    assert received == released >= 3 and shape == [settings["chunk_length"], 52]
    assert loaded == solvers
