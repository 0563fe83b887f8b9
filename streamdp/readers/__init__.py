"""Readers: every real format to :class:`~streamdp.gaze.Recording` (I/O only, no processing).

Every reader applies the same checks (:mod:`streamdp.readers._checks`): timestamps at an eye
tracker's sampling rate (ms or ns where s are expected are refused with the factor to apply), never
going backwards (refused naming the row; only Capture's ``.pldata`` gaze, interleaved by design, is
sorted within a tolerance), at least one valid gaze sample, and side streams (pupil, blinks) that
overlap the gaze. A damaged stream is refused naming its file; an optional stream that is absent is
skipped with a logged warning and shows in the :class:`~streamdp.gaze.Recording` (diameters NaN in
unit ``"none"``, ``blinks`` None). :func:`read_recording` also holds the gaze to the public
plausibility bounds (:mod:`streamdp.plausibility`): what breaks them is counted as invalid and
said in one line (or handed to the caller, who says it), and gaze of which nothing plausible is
left is refused naming the file.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import InputError
from ..gaze import Recording
from ..plausibility import Implausible, within_bounds
from ._checks import require_valid_gaze
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
    "plausible_recording",
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

log = logging.getLogger(__name__)


def _csv_header(path: Path) -> str:
    with open(path, errors="replace") as fh:
        return fh.readline()


def plausible_recording(
    rec: Recording, where: str | Path, report: Callable[[Implausible], object] | None = None
) -> Recording:
    """``rec`` with its gaze held to the public plausibility bounds
    (:func:`~streamdp.plausibility.within_bounds`); what was left out goes to ``report``, or, without
    one, is logged as one warning naming ``where``.

    Raises
    ------
    InputError
        No valid gaze is left (named with ``where`` and what was left out).
    """
    gaze, left_out = within_bounds(rec.gaze)
    if report is not None:
        report(left_out)
    if not (left_out.samples or left_out.diameters):
        return rec
    if left_out.samples:
        try:
            require_valid_gaze(gaze, str(where))
        except InputError:
            raise InputError(f"{where}: no plausible gaze left: {left_out.describe()}") from None
    if report is None:
        log.warning("%s: %s", where, left_out.describe())
    return replace(rec, gaze=gaze)


def read_recording(path: str | Path, *, report: Callable[[Implausible], object] | None = None) -> Recording:
    """Open any recording streamdp knows, deciding the format from what the path holds, its gaze
    held to the public plausibility bounds (:func:`plausible_recording`: what they leave out goes to
    ``report``, else to one logged warning).

    Raises
    ------
    InputError
        The path does not exist or holds no format streamdp reads (the message lists them), or
        what it holds is damaged or implausible (see each reader), or nothing plausible is left.
    """
    return plausible_recording(_read_recording(Path(path)), path, report)


def _read_recording(p: Path) -> Recording:
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
            f"{p}: not a recording streamdp reads: it holds none of info.player.json, gaze.pldata or offline_data/ "
            "(a Pupil Capture recording), gaze_positions.csv (a Player export), gaze.csv (a Pupil Cloud export), "
            "info.json with gaze*.raw (a Neon recording)"
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
