"""One recording's real-time gaze channel, written as its ticks come (``replay --gaze-channel``).

:class:`GazeFiles` appends each tick to ``<name>.gaze.csv.partial`` and
``<name>.gaze.msgpack.partial`` the moment the session makes it; :meth:`GazeFiles.finish` renames
them into place and :meth:`GazeFiles.discard` removes them, as
:class:`~streamdp.offline.outputs.ReleaseFiles` does for the chunks (which owns one of these when
the channel is on). The msgpack file holds the tick messages back to back, byte for byte what
``streamdp relay --gaze-channel`` publishes on ``streamdp.gaze.<mechanism>``; the CSV holds one
row a tick, in ``%.17g``: :data:`GAZE_HEADER`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import numpy as np
from numpy.typing import NDArray

from ..privacy.release import PrivateRelease, check_sealed
from ..stages.gaze_privatizer import GAZE_NAMES

#: the columns of ``<name>.gaze.csv``
GAZE_HEADER = ("tick_index", "t", *GAZE_NAMES, "epsilon_tick_per_degree")
#: the suffixes written, in the order :meth:`GazeFiles.finish` lists them
GAZE_SUFFIXES = (".gaze.csv", ".gaze.msgpack")


def tick_row(release: PrivateRelease) -> NDArray[np.float64]:
    """One CSV row for one tick: its index, its time, the four values, ε per degree it spent."""
    led = release.ledger
    return np.concatenate(
        [[led["tick_index"]], release.t, release.values[0], [led["epsilon_tick_per_degree"]]]
    ).reshape(1, -1)


def is_tick(release: PrivateRelease) -> bool:
    """Whether ``release`` is a tick of the gaze channel (rather than a chunk)."""
    return release.ledger.get("channel") == "gaze"


class GazeFiles:
    """The gaze channel's files of one recording: ``<name>.gaze.csv`` and ``<name>.gaze.msgpack``.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release.
    ValueError
        :meth:`publish` is given a chunk, or a tick whose names are not :data:`GAZE_NAMES`.

    Examples
    --------
    >>> import tempfile
    >>> from streamdp.config import SessionConfig
    >>> from streamdp.synthetic import generate
    >>> channel = SessionConfig(seed=0, gaze_channel=True).gaze_channel_for()
    >>> ticks = channel.update(generate(duration=2.0, seed=1).recording.gaze) + channel.flush()
    >>> with tempfile.TemporaryDirectory() as out:
    ...     files = GazeFiles(out, "rec")
    ...     for tick in ticks:
    ...         files.publish(tick)
    ...     written = files.finish()
    ...     rows = np.loadtxt(Path(out) / "rec.gaze.csv", delimiter=",", skiprows=1)
    >>> written, files.ticks, rows.shape
    (['rec.gaze.csv', 'rec.gaze.msgpack'], 121, (121, 7))
    >>> round(files.summary()["epsilon_spent_per_degree"], 9), files.summary()["w"]  # ε 1/3 a tick
    (40.333333333, 60)
    """

    def __init__(self, out_dir: str | Path, name: str) -> None:
        self.out = Path(out_dir)
        self.name = name
        self.ticks = 0
        self._csv: BinaryIO | None = None
        self._msgpack: BinaryIO | None = None
        self._pack = msgpack.Packer(use_bin_type=True).pack
        #: the first tick's public ledger (it states the guarantee) and the last tick's
        self._first: dict[str, Any] | None = None
        self._last: dict[str, Any] | None = None
        self._span: list[float] = []

    def _partial(self, suffix: str) -> Path:
        return self.out / f"{self.name}{suffix}.partial"

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        if not is_tick(release):
            raise ValueError(f"{self.name}: a chunk is not a gaze tick (its topic is {release.topic})")
        if tuple(release.names) != GAZE_NAMES:
            raise ValueError(f"{self.name}: a gaze tick must carry {GAZE_NAMES}, got {tuple(release.names)}")
        if self._csv is None:
            self._csv = open(self._partial(".gaze.csv"), "wb")
            self._csv.write((",".join(GAZE_HEADER) + "\n").encode())
            self._msgpack = open(self._partial(".gaze.msgpack"), "wb")
        assert self._msgpack is not None
        message = release.to_message()
        np.savetxt(self._csv, tick_row(release), delimiter=",", fmt="%.17g")
        self._msgpack.write(self._pack(message))
        if self._first is None:
            self._first = message["ledger"]
            self._span = [float(release.t[0])] * 2
        self._last = message["ledger"]
        self._span[1] = float(release.t[0])
        self.ticks += 1

    def summary(self) -> dict[str, Any]:
        """What ``<name>.ledger.json`` says about the channel: its guarantee and what it spent.

        Raises
        ------
        ValueError
            No tick was written.
        """
        if self._first is None or self._last is None:
            raise ValueError(f"{self.name}: no gaze tick was written")
        first, last = self._first, self._last
        return {
            "topic": f"streamdp.gaze.{first['mechanism']}",
            "mechanism": first["mechanism"],
            "epsilon_w_per_degree": first["epsilon_w_per_degree"],
            "w": first["w"],
            "rate_hz": first["rate_hz"],
            "metric": first.get("metric"),
            "field": first.get("field"),
            "fov_deg": first.get("fov_deg"),
            "ticks": self.ticks,
            "t_first": self._span[0],
            "t_last": self._span[1],
            "epsilon_spent_per_degree": last["epsilon_spent_per_degree"],
            "guarantee": first.get("guarantee"),
        }

    def close(self) -> None:
        for fh in (self._csv, self._msgpack):
            if fh is not None:
                fh.close()

    def finish(self) -> list[str]:
        """Close and rename both files into place; the names written (none without a tick)."""
        self.close()
        if not self.ticks:
            self.discard()
            return []
        for suffix in GAZE_SUFFIXES:
            self._partial(suffix).replace(self.out / f"{self.name}{suffix}")
        return [f"{self.name}{suffix}" for suffix in GAZE_SUFFIXES]

    def discard(self) -> None:
        """Close and remove whatever was written."""
        self.close()
        for suffix in GAZE_SUFFIXES:
            self._partial(suffix).unlink(missing_ok=True)
        self.ticks = 0
        self._first = self._last = None
