"""The manifest of ``streamdp evaluate``: one labelled recording per CSV line.

Columns ``recording`` (a path relative to the manifest), ``participant`` and ``task`` are
required; every other column (``gender``, ``session``, …) is a label that ``--tasks`` can name
as a classification target.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InputError

REQUIRED = ("recording", "participant", "task")


@dataclass(frozen=True)
class ManifestRow:
    recording: Path
    participant: str
    task: str
    #: every other column of the line
    labels: dict[str, str] = field(default_factory=dict)


def read_manifest_rows(path: str | Path) -> list[ManifestRow]:
    """Every line of a manifest, with all its columns.

    Raises
    ------
    InputError
        Missing columns, an empty manifest, an empty participant, task or label, or a recording
        that does not exist (named with its line).
    """
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise InputError(f"{p}: cannot read manifest: {exc.strerror}") from None
    rows = list(csv.DictReader(text.splitlines()))
    if not rows:
        raise InputError(f"{p}: the manifest lists no recording")
    missing = set(REQUIRED) - set(rows[0])
    if missing:
        raise InputError(f"{p}: missing column(s) {', '.join(sorted(missing))}")
    out = []
    for i, row in enumerate(rows, start=2):
        rec = (p.parent / row["recording"]).resolve()
        if not rec.exists():
            raise InputError(f"{p}: line {i}: recording {row['recording']!r} does not exist")
        empty = [k for k, v in row.items() if k != "recording" and not (v or "").strip()]
        if empty:
            raise InputError(f"{p}: line {i}: {', '.join(empty)} must not be empty")
        labels = {k: v for k, v in row.items() if k not in REQUIRED and k is not None}
        out.append(ManifestRow(rec, row["participant"], row["task"], labels))
    return out


def read_manifest(path: str | Path) -> list[tuple[Path, str, str]]:
    """(recording, participant, task) per line of a manifest (:func:`read_manifest_rows`).

    Raises
    ------
    InputError
        As :func:`read_manifest_rows`.
    """
    return [(r.recording, r.participant, r.task) for r in read_manifest_rows(path)]
