"""The oldest Python, numpy and scipy a bundled Pupil Capture v3.6+ can carry, as a venv.

Capture v3.6 bundles Python 3.11; its ``requirements.txt`` (pupil-labs/pupil, unchanged from
v3.6 to master) asks ``numpy>=1.20.0``, ``msgpack>=1.0.0``, and any ``scipy`` and ``pyzmq``. The
oldest releases with Python 3.11 wheels are numpy 1.23.2 (1.23.1 has none), scipy 1.9.2 (1.9.1
has none) and msgpack 1.0.5 (1.0.4 has none); pyzmq is pinned to 25.0.0, the floor streamdp
itself declares. ``python -m tests.oldest_numpy VENV`` builds that venv (about 15 s from PyPI)
and prints its Python; ``STREAMDP_OLDEST_PYTHON=VENV/bin/python pytest tests/test_oldest_numpy.py``
checks streamdp against it.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

PYTHON = (3, 11)
#: the pins: the oldest each requirement allows with a Python 3.11 wheel
PINS = {"numpy": "1.23.2", "scipy": "1.9.2", "msgpack": "1.0.5", "pyzmq": "25.0.0"}
#: the import names of the pinned distributions: what the bundle has beside the standard library
BUNDLED = ("numpy", "scipy", "msgpack", "zmq")
#: the environment variable naming that venv's Python
ENV = "STREAMDP_OLDEST_PYTHON"


def build(folder: Path) -> Path:
    """A venv at ``folder`` with exactly the pinned wheels (no source builds); returns its Python.

    Raises
    ------
    RuntimeError
        This Python is not 3.11, or pip could not install a pinned wheel.
    """
    if sys.version_info[:2] != PYTHON:
        raise RuntimeError(f"run this with Python {PYTHON[0]}.{PYTHON[1]}, not {sys.version.split()[0]}")
    venv.create(folder, with_pip=True, clear=True)
    python = folder / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    pins = [f"{name}=={version}" for name, version in PINS.items()]
    done = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--only-binary=:all:", *pins],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip could not install {' '.join(pins)}: {done.stderr.strip()[-500:]}")
    return python


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3.11 -m tests.oldest_numpy VENV_FOLDER")
    try:
        print(build(Path(sys.argv[1])))
    except RuntimeError as exc:
        sys.exit(f"tests.oldest_numpy: {exc}")
