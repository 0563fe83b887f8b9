"""Readers: every real format to :class:`~streamdp.gaze.Recording` (I/O only, no processing).

Every reader applies the same checks (:mod:`streamdp.readers._checks`): timestamps at an eye
tracker's sampling rate (ms or ns where s are expected are refused with the factor to apply), never
going backwards (refused naming the row; only Capture's ``.pldata`` gaze, interleaved by design, is
sorted within a tolerance), at least one valid gaze sample, and side streams (pupil, blinks) that
overlap the gaze. A damaged stream is refused naming its file; an optional stream that is absent is
skipped with a logged warning and shows in the :class:`~streamdp.gaze.Recording` (diameters NaN in
unit ``"none"``, ``blinks`` None).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from ..gaze import Recording
from .angles import read_angles_csv
from .generic import read_gaze_csv
from .neon import read_neon_cloud_export, read_neon_native
from .player import (
    read_blinks_csv,
    read_fixations_csv,
    read_gaze_positions_csv,
    read_player_export,
    read_pupil_positions_csv,
)
from .pupil import iter_pldata, iter_pldata_gaze_columns, read_pldata_gaze, read_pupil_recording

__all__ = [
    "iter_pldata",
    "iter_pldata_gaze_columns",
    "read_angles_csv",
    "read_blinks_csv",
    "read_fixations_csv",
    "read_gaze_csv",
    "read_gaze_positions_csv",
    "read_neon_cloud_export",
    "read_neon_native",
    "read_player_export",
    "read_pldata_gaze",
    "read_pupil_positions_csv",
    "read_pupil_recording",
    "read_recording",
]


def _csv_header(path: Path) -> str:
    with open(path, errors="replace") as fh:
        return fh.readline()


def read_recording(path: str | Path) -> Recording:
    """Open any recording streamdp knows, deciding the format from what the path holds.

    Raises
    ------
    InputError
        The path does not exist or holds no format streamdp reads (the message lists them), or
        what it holds is damaged or implausible (see each reader).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or folder")
    if p.is_dir():
        if (p / "info.player.json").exists() or (p / "gaze.pldata").exists() or (p / "offline_data").is_dir():
            return read_pupil_recording(p)
        if (p / "gaze_positions.csv").exists():
            return read_player_export(p)
        if (p / "gaze.csv").exists():
            return read_neon_cloud_export(p)
        if (p / "info.json").exists() and any(p.glob("gaze*.raw")):
            return read_neon_native(p)
        raise InputError(
            f"{p}: not a recording streamdp reads (a Pupil Capture recording, a Player export, "
            "a Neon recording or a Pupil Cloud export)"
        )
    if p.suffix == ".pldata":
        gaze = read_pldata_gaze(p)
        if len(gaze) == 0:
            raise InputError(f"{p}: holds no gaze")
        return Recording(gaze=gaze, blinks=None, name=p.stem)
    if p.suffix == ".csv":
        head = _csv_header(p)
        if "gaze_timestamp" in head:
            return read_player_export(p)
        if "pupil_timestamp" in head:
            gaze = read_pupil_positions_csv(p)
            return Recording(gaze=gaze, blinks=None, name=p.stem)
        if "Theta" in head and "Phi" in head:
            return read_angles_csv(p)
        if "timestamp [ns]" in head:
            return read_neon_cloud_export(p.parent)
        raise InputError(f"{p}: CSV header matches no format streamdp reads: {head.strip()[:120]!r}")
    raise InputError(f"{p}: unknown file type {p.suffix!r} (expected a folder, .pldata or .csv)")
