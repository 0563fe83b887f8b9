"""The study of ``streamdp evaluate --channel gaze --manifest study.csv``: the gaze channel on the
user's own recordings instead of synthetic people.

The manifest is that of the features evaluation (:mod:`streamdp.offline.manifest`: one recording
per line, with its ``participant`` and ``task``), its recordings opened as the features
evaluation opens them (:func:`~streamdp.offline.recordings.open_recording`, ``--csv-columns``
included). Each recording becomes the ticks a session of the configuration would make of it
(:func:`~streamdp.offline.gaze_study.tick_stream`); the measures are those of the synthetic study
(:mod:`streamdp.offline.evaluate_gaze`) but the dwell and pursuit tasks, whose truth only a
synthetic person has: the angular error of the released ticks from the raw ticks over every
recording, re-identification of the ``participant`` column and classification of the ``task``
column from features of the released ticks, with the raw ticks and the raw gaze as baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..config import SessionConfig
from ..errors import InputError
from ..gaze import Recording
from ..gaze_channel import check_source_rate
from .gaze_study import GazeStudy, tick_stream
from .manifest import ManifestRow, read_manifest_rows
from .recordings import CsvLayout, open_recording

#: seconds of ticks a recording needs beyond two feature windows for re-identification (one
#: window in each half, and some steps more: the synthetic study's 70 s at a 30 s window)
REID_SLACK_S = 10.0


def reid_seconds(config: SessionConfig) -> float:
    """The shortest recording the attack can use: two halves, each longer than a feature window."""
    return 2.0 * config.window + REID_SLACK_S


def _name(row: ManifestRow, manifest: Path) -> str:
    """A recording as the manifest names it (relative to the manifest's folder when it can be)."""
    try:
        return str(row.recording.relative_to(manifest.parent.resolve()))
    except ValueError:
        return str(row.recording)


def _one_camera(recs: Sequence[Recording], config: SessionConfig, manifest: Path) -> str:
    cameras = sorted({config.camera_for(r.camera) for r in recs})
    if len(cameras) > 1:
        raise InputError(
            f"{manifest}: the recordings come from different scene cameras ({', '.join(cameras)}): "
            "give --camera, or one manifest per camera"
        )
    return cameras[0]


def manifest_gaze_study(
    path: str | Path,
    config: SessionConfig | None = None,
    *,
    layout: CsvLayout | None = None,
    reid: bool = True,
) -> GazeStudy:
    """The recordings of the manifest at ``path`` as a :class:`GazeStudy` without synthetic tasks:
    ``recordings``, ``person_of`` (the participant column) and ``task_of`` (the task column; empty
    when every recording has the same task, for there is nothing to classify), and the tick
    stream of each at ``config.gaze_rate``. The configuration's camera is fixed to the
    recordings' (so that the ticks and the attacker's features see the same one).

    Raises
    ------
    InputError
        The manifest or a recording cannot be read (as the features evaluation refuses them); a
        recording samples slower than the tick rate
        (:func:`~streamdp.gaze_channel.check_source_rate`: named with both rates); recordings of
        different cameras; with ``reid``, fewer than two participants or recordings too short
        for the attack (named).
    """
    manifest = Path(path)
    cfg = config or SessionConfig()
    rows = read_manifest_rows(manifest)
    recs = [open_recording(r.recording, layout, cfg) for r in rows]
    names = [_name(r, manifest) for r in rows]
    for name, rec in zip(names, recs, strict=True):
        check_source_rate(rec.gaze, cfg.gaze_rate, f"{manifest}: {name}")
    cfg = replace(cfg, camera=_one_camera(recs, cfg, manifest))
    fov = cfg.event_config(None).fov_deg
    streams = tuple(tick_stream(rec.gaze, cfg, fov) for rec in recs)
    person_of = tuple(r.participant for r in rows)
    if reid:
        if len(set(person_of)) < 2:
            raise InputError(f"{manifest}: re-identification needs at least two participants; give more or --no-reid")
        need = reid_seconds(cfg)
        short = [
            f"{name} ({s.ticks.t[-1] - s.ticks.t[0]:.0f} s)" if len(s.ticks) else f"{name} (no ticks)"
            for name, s in zip(names, streams, strict=True)
            if not len(s.ticks) or s.ticks.t[-1] - s.ticks.t[0] < need
        ]
        if short:
            raise InputError(
                f"{manifest}: re-identification needs recordings of ≥ {need:g} s (two halves of a "
                f"{cfg.window:g} s window and more): {', '.join(short[:4])}{', …' if len(short) > 4 else ''}; "
                "give longer recordings or --no-reid"
            )
    tasks = tuple(r.task for r in rows)
    return GazeStudy(
        people=tuple(dict.fromkeys(person_of)),
        dwell=(),
        pursuit=(),
        recordings=tuple(recs),
        person_of=person_of,
        streams=streams,
        config=cfg,
        fov_deg=fov,
        task_of=tasks if len(set(tasks)) > 1 else (),
    )


__all__ = ["REID_SLACK_S", "manifest_gaze_study", "reid_seconds"]
