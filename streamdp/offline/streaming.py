"""Replaying a Pupil Capture recording from disk in bounded memory.

``replay`` reads a Capture recording folder (``gaze.pldata``) or a bare ``.pldata`` file a block
at a time, puts the gaze in time order with :class:`~streamdp.readers.pldata_order.OrderedPldataGaze`
(which holds back the reorder tolerance of ``.pldata`` gaze, 1 s) and feeds the session batch by
batch; the releases go straight to their files (:class:`~streamdp.offline.outputs.ReleaseFiles`).
Peak memory is a block of the file, a second of gaze and the session's windows, whatever the
recording's length. The releases are byte for byte those of the whole recording read into memory
and run at once (the session's output does not depend on how its input is split), with the same
seed.

Whatever the whole-file reader refuses, or might, is not decided here: :func:`stream_gaze`
returns None and the caller replays the recording read whole, which refuses it in its own words.
Such a recording is found only once it has been read, so when its releases would charge a durable
budget (an ``identity``) the gaze is read once without a session first: a refused recording then
charges nothing, as when it is read whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from ..errors import InputError
from ..gaze import BlinkEvents, GazeColumns
from ..readers._checks import check_overlap
from ..readers.pldata_order import NotStreamable, OrderedPldataGaze
from ..readers.pupil import _pldata_blinks, read_info_offset
from ..session import Session
from .coverage import GazeTally

#: ordered gaze fed to the session at a time (~2.7 min at 200 Hz, ~2 MB): the session's cost per
#: call is then negligible, its memory still bounded
FEED_ROWS = 1 << 15


@dataclass(frozen=True)
class PldataSource:
    """A recording whose gaze can be read a block at a time."""

    gaze: Path
    name: str
    #: ``blinks.pldata`` of a recording folder, when it has one
    blinks: Path | None


def streamable(path: str | Path) -> PldataSource | None:
    """The gaze file of ``path`` when :func:`~streamdp.readers.read_recording` would read it as a
    Capture recording folder with ``gaze.pldata``, or as a bare ``.pldata`` file; None otherwise
    (other formats, gaze mapped offline by Player).

    Examples
    --------
    >>> streamable("no/such/folder") is None
    True
    """
    p = Path(path)
    if p.is_dir():
        gaze = p / "gaze.pldata"
        if not gaze.is_file():
            return None
        blinks = p / "blinks.pldata"
        return PldataSource(gaze, p.name, blinks if blinks.exists() else None)
    if p.is_file() and p.suffix == ".pldata":
        return PldataSource(p, p.stem, None)
    return None


def _blinks(source: PldataSource) -> BlinkEvents | None:
    if source.blinks is None:
        return None
    try:
        return _pldata_blinks(source.blinks)
    except InputError as exc:
        raise NotStreamable(str(exc)) from None


def _check_side_files(source: PldataSource, blinks: BlinkEvents | None, gaze: OrderedPldataGaze) -> None:
    try:
        if source.gaze.name == "gaze.pldata":
            read_info_offset(source.gaze.parent)
        if blinks is not None and source.blinks is not None:
            check_overlap(str(source.blinks), "blinks", blinks.start, blinks.end, _ends(gaze))
    except InputError as exc:
        raise NotStreamable(str(exc)) from None


def _ends(gaze: OrderedPldataGaze) -> NDArray[np.float64]:
    return np.array([gaze.first, gaze.last])


def check_streamable(source: PldataSource, *, block_bytes: int | None = None, tally: GazeTally | None = None) -> bool:
    """Read the gaze once, without a session: whether nothing in it would be refused (``tally``
    counts its samples)."""
    gaze = _ordered(source, block_bytes)
    try:
        blinks = _blinks(source)
        for cols in gaze:
            _count(tally, cols)
        _check_side_files(source, blinks, gaze)
    except NotStreamable:
        return False
    return True


def _ordered(source: PldataSource, block_bytes: int | None) -> OrderedPldataGaze:
    if block_bytes is None:
        return OrderedPldataGaze(source.gaze)
    return OrderedPldataGaze(source.gaze, block_bytes=block_bytes)


def _count(tally: GazeTally | None, cols: GazeColumns) -> None:
    if tally is not None:
        tally.add(cols.t, cols.valid, cols.confidence)


def stream_gaze(
    source: PldataSource, session: Session, *, block_bytes: int | None = None, tally: GazeTally | None = None
) -> float | None:
    """Feed the gaze of ``source`` to ``session`` in time order, a batch at a time (the blinks,
    when the session takes given blinks, with the first), then end the stream; the gaze's
    duration in s, or None when the recording holds something the whole-file reader refuses or
    might (the session's output must then be discarded). ``tally`` counts the samples fed.
    """
    gaze = _ordered(source, block_bytes)
    try:
        blinks = _blinks(source)
        given = blinks if session.config.blinks == "given" else None
        parts: list[GazeColumns] = []
        rows = 0
        for cols in gaze:
            _count(tally, cols)
            parts.append(cols)
            rows += len(cols)
            if rows >= FEED_ROWS:
                session.update(GazeColumns.concat(parts), given)
                given, parts, rows = None, [], 0
        if parts or given is not None:
            session.update(GazeColumns.concat(parts), given)
        _check_side_files(source, blinks, gaze)
    except NotStreamable:
        return None
    session.flush()
    return gaze.last - gaze.first
