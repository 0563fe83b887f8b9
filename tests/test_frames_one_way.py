"""The DataFrame conversions depend on the types, never the types on the conversions (issue #23:
the gaze ↔ frames circle): gaze imports frame_columns, which imports no streamdp type, and frames
imports gaze."""

from __future__ import annotations

import pytest

from .test_imports import PACKAGE, imported_modules


def _streamdp_imports(module: str) -> set[str]:
    path = PACKAGE / f"{module}.py"
    return {m for m in imported_modules(path.read_text(), "streamdp") if m.startswith("streamdp.")}


@pytest.mark.parametrize(
    ("module", "never"),
    [
        ("gaze", "streamdp.frames"),
        ("frame_columns", "streamdp.frames"),
        ("frame_columns", "streamdp.gaze"),
    ],
    ids=lambda v: v,
)
def test_a_type_never_imports_its_conversions(module, never):
    found = _streamdp_imports(module)
    assert not any(name == never or name.startswith(never + ".") for name in found), sorted(found)


def test_frame_columns_builds_on_nothing_but_the_errors():
    assert _streamdp_imports("frame_columns") <= {"streamdp.errors", "streamdp.errors.InputError"}


def test_frames_builds_on_gaze():
    assert "streamdp.gaze" in _streamdp_imports("frames")
