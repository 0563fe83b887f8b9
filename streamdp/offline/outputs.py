"""One recording's replay output, written as its releases come: a :class:`ReleaseFiles` sink.

Each release is appended to ``<name>.csv.partial`` and ``<name>.msgpack.partial`` the moment the
session makes it, so a replay holds no release after it is written (a 16 h recording makes
thousands). The ledger (one small entry per chunk) and the Parquet table (written in row groups,
when pyarrow is installed) follow at :meth:`ReleaseFiles.finish`, which renames every file into
place; :meth:`ReleaseFiles.discard` removes them. The bytes are those of writing all releases at
once: the CSV rows in ``%.17g``, the relay's msgpack payloads back to back. With the real-time
gaze channel on (``gaze_channel``), the sink also takes its ticks (``accepts_gaze``) and writes
them to ``<name>.gaze.csv`` and ``<name>.gaze.msgpack`` (:mod:`streamdp.offline.gaze_outputs`); the
ledger then states the channel's guarantee and spend under ``gaze_channel``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, BinaryIO

import msgpack
import numpy as np
from numpy.typing import NDArray

from ..config import SessionConfig
from ..privacy.release import PrivateRelease, check_sealed
from ..schema import FEATURE_NAMES
from ..status import SessionStatus, check_status
from .gaze_outputs import GazeFiles, is_tick
from .results import shared_config

HEADER = ("chunk_index", "t", *FEATURE_NAMES)
#: CSV rows gathered before a Parquet row group is written
ROW_GROUP = 1 << 14


def release_rows(release: PrivateRelease) -> NDArray[np.float64]:
    """One row per step: chunk index, step time, the sanitized features."""
    return np.column_stack([np.full(len(release.t), release.ledger["chunk_index"]), release.t, release.values])


class ReleaseFiles:
    """A :class:`~streamdp.sinks.ReleaseSink` writing one recording's replay output into
    ``out_dir``: ``<name>.csv``, ``<name>.msgpack``, ``<name>.ledger.json`` and, with pyarrow,
    ``<name>.parquet`` (see :mod:`streamdp.offline.replay`); with ``gaze``, the gaze channel's
    ``<name>.gaze.csv`` and ``<name>.gaze.msgpack`` too.

    Parameters
    ----------
    out_dir : path
        The (staged) output folder.
    name : str
        The recording's name in the folder.
    ledger_head : dict
        What ``<name>.ledger.json`` says before its ``chunks``: the recording, the noise
        statement, the shared configuration.
    gaze : bool
        Take the gaze channel's ticks too (:attr:`accepts_gaze`).

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, :meth:`publish_status` anything
        but a :class:`~streamdp.status.SessionStatus`.
    """

    def __init__(self, out_dir: str | Path, name: str, ledger_head: dict[str, Any], *, gaze: bool = False) -> None:
        self.out = Path(out_dir)
        #: the gaze channel's files, when the session makes ticks
        self.gaze = GazeFiles(out_dir, name) if gaze else None
        self.name = name
        self.ledger_head = ledger_head
        self.chunks: list[dict[str, Any]] = []
        self._csv: BinaryIO | None = None
        self._msgpack: BinaryIO | None = None
        self._pack = msgpack.Packer(use_bin_type=True).pack
        self._rows: list[NDArray[np.float64]] = []
        self._parquet: Any = None

    @classmethod
    def for_recording(
        cls, out_dir: str | Path, name: str, path: str, config: SessionConfig, noise: str
    ) -> ReleaseFiles:
        head = {"recording": path, "noise": noise, "config": shared_config(config)}
        return cls(out_dir, name, head, gaze=bool(config.gaze_channel))

    @property
    def accepts_gaze(self) -> bool:
        """Whether the session hands this sink the gaze channel's ticks."""
        return self.gaze is not None

    @property
    def ticks(self) -> int:
        """The gaze channel's ticks written so far."""
        return 0 if self.gaze is None else self.gaze.ticks

    def _partial(self, suffix: str) -> Path:
        return self.out / f"{self.name}{suffix}.partial"

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        if is_tick(release):
            if self.gaze is None:
                raise ValueError(f"{self.name}: a gaze tick, but this sink was made without the gaze channel")
            self.gaze.publish(release)
            return
        if self._csv is None:
            self._csv = open(self._partial(".csv"), "wb")
            self._csv.write((",".join(HEADER) + "\n").encode())
            self._msgpack = open(self._partial(".msgpack"), "wb")
        assert self._msgpack is not None
        message = release.to_message()
        rows = release_rows(release)
        np.savetxt(self._csv, rows, delimiter=",", fmt="%.17g")
        self._msgpack.write(self._pack(message))
        self.chunks.append(message["ledger"])
        self._parquet_rows(rows)

    def publish_status(self, status: SessionStatus) -> None:
        check_status(status)

    def close(self) -> None:
        for fh in (self._csv, self._msgpack):
            if fh is not None:
                fh.close()
        if self.gaze is not None:
            self.gaze.close()

    def _parquet_rows(self, rows: NDArray[np.float64] | None) -> None:
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            return
        if rows is not None:
            self._rows.append(rows)
            if sum(len(r) for r in self._rows) < ROW_GROUP:
                return
        if not self._rows:
            return
        block = np.concatenate(self._rows)
        self._rows = []
        table = pa.table({c: block[:, i] for i, c in enumerate(HEADER)})
        if self._parquet is None:
            self._parquet = pq.ParquetWriter(self._partial(".parquet"), table.schema)
        self._parquet.write_table(table)

    @property
    def released(self) -> int:
        return len(self.chunks)

    def finish(self) -> list[str]:
        """Close and rename every file into place; the names written (none without a release)."""
        self.close()
        if not self.chunks:
            self.discard()
            return []
        self._parquet_rows(None)
        ledger = {**self.ledger_head, "chunks": self.chunks}
        if self.gaze is not None and self.gaze.ticks:
            ledger["gaze_channel"] = self.gaze.summary()
        self._partial(".ledger.json").write_text(json.dumps(ledger, indent=1, default=float))
        files = [".csv", ".ledger.json", ".msgpack"]
        if self._parquet is not None:
            self._parquet.close()
            files.append(".parquet")
        for suffix in files:
            self._partial(suffix).replace(self.out / f"{self.name}{suffix}")
        gaze = self.gaze.finish() if self.gaze is not None else []
        return [f"{self.name}{suffix}" for suffix in files] + gaze

    def discard(self) -> None:
        """Close and remove whatever was written."""
        self.close()
        if self._parquet is not None:
            self._parquet.close()
            self._parquet = None
        for suffix in (".csv", ".msgpack", ".ledger.json", ".parquet"):
            self._partial(suffix).unlink(missing_ok=True)
        if self.gaze is not None:
            self.gaze.discard()
        self.chunks = []
