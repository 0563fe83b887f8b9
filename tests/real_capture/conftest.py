"""The real Capture's fixtures; every test here skips with one line outside its namespace."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import SHARED_CAPTURE, Installation, RealCapture, install

# run by Capture's own Python (OpenCV), and the command line: never imported by the tests
collect_ignore = ["camera.py", "__main__.py"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    reason = None
    if not (SHARED_CAPTURE / "v3.6").is_dir():
        reason = f"the real Capture's source is not at {SHARED_CAPTURE}/v3.6"
    elif not os.environ.get("STREAMDP_CAPTURE_NETNS"):
        reason = "runs inside its own network namespace: python -m tests.real_capture"
    if reason is None:
        return
    for item in items:
        if Path(str(item.fspath)).is_relative_to(here):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="session")
def installation() -> Installation:
    return install()


@pytest.fixture
def capture(installation: Installation, tmp_path: Path) -> Iterator[RealCapture]:
    """A fresh Capture (no user settings, no runtime plugins), not launched yet: a test installs
    its runtime plugins first (Capture loads them at launch), then calls ``launch`` and ``play``."""
    with RealCapture(installation, log=tmp_path / "capture-console.log") as cap:
        cap.fresh_settings()
        yield cap
