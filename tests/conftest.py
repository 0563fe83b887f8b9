"""Shared fixtures. Tests that need ../shared/data skip cleanly where it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# imported by the plugin stand-in with Capture's `plugin` module on sys.path, never on its own
collect_ignore = ["pupil_standin/recorder.py"]

SHARED_DATA = Path(os.environ.get("STREAMDP_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real recordings not available at {SHARED_DATA}")
    return SHARED_DATA


def shared(*parts: str) -> Path:
    """Path inside ../shared/data, skipping the test when it is missing."""
    p = SHARED_DATA.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"real recording not available: {p}")
    return p


@pytest.fixture(autouse=True)
def _console_speaks_again():
    """A command run in this process with ``-q`` leaves the console quiet (a module's state, as for
    a real run): the tests after it must not depend on which ran before."""
    yield
    from streamdp.cli import console

    console.configure_logging(0)
