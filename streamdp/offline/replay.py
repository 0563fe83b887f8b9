"""``streamdp replay``: recorded sessions through the same session core as the relay.

Each recording runs through :meth:`Session.for_recording <streamdp.session.Session.for_recording>`
with the one :class:`~streamdp.config.SessionConfig`, collecting its releases in memory.

For every recording it writes, in the output folder:

- ``<name>.csv`` (and ``<name>.parquet`` when pyarrow is installed): one row per step, columns
  ``chunk_index``, ``t`` and the 52 sanitized features;
- ``<name>.ledger.json``: the ledger entry of every chunk;
- ``<name>.msgpack``: every chunk's message, byte for byte what ``streamdp relay`` publishes on
  ``streamdp.features.<mechanism>`` for the same gaze and seed;
- with the real-time gaze channel on (``gaze_channel``): ``<name>.gaze.msgpack``, every tick's
  message as ``streamdp relay --gaze-channel`` publishes it on ``streamdp.gaze.<mechanism>``, and
  ``<name>.gaze.csv``, one row a tick (``tick_index``, ``t``, ``x_deg``, ``y_deg``, ``x_norm``,
  ``y_norm``, ``epsilon_tick_per_degree``); the ledger then states the channel's guarantee and
  spend under ``gaze_channel``. A recording too short for one chunk is skipped whole, its ticks
  included.

Only public or noised values are written: the released values, the public configuration and
each chunk's published ledger; never the clip rate, the seed or the identity.

Seeds: with ``--seed S`` the i-th recording (in the order given) uses seed ``S + i``, so
``streamdp relay --seed S+i`` on the same gaze publishes the same bytes. Recordings never share a
noise stream: the same noise on two people's data would reveal their difference exactly. Seeded
noise is for tests and research: whoever knows the seed removes the noise, so the seed is never
written into the folder (the configuration there has ``seed`` unset) and the ledgers and
``replay.json`` say ``"noise": "reproducible, not private"``. To reproduce a run, give the same
``--seed`` again with ``--config out/replay.json``; keep the seed apart from the data.

Budgets: under the ``session`` and ``w-event`` units every recording charges the durable ledger
of the configuration's ``identity`` (one person, one budget: see
:mod:`streamdp.privacy.ledger_store`), in the order given, one recording after another (so
which recordings are released before the budget runs out does not depend on the workers); those
units without an identity are refused, since each recording would otherwise start a fresh budget.

The folder appears whole or not at all (:func:`~streamdp.offline.results.staged_folder`):
everything is written to a hidden sibling folder that is renamed into place at the end, and
removed if the run fails or is interrupted (Ctrl-C, or SIGTERM raised as an exception: the pool's
workers are stopped first). An existing folder is refused unless ``overwrite`` is set; when every
recording is skipped nothing is written. ``replay.json`` in the folder holds the configuration
under ``"config"``: ``streamdp replay --config out/replay.json`` runs it again.

With ``lsl`` each recording's releases are also played on its own LSL streams, in real time, with
the recording's timestamps plus one stated offset (:mod:`streamdp.offline.lsl_playback`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from ..config import SessionConfig
from ..errors import BudgetExhausted, InputError, StreamdpError
from ..gaze import Recording
from ..plausibility import Implausible
from ..privacy.release import PrivateRelease
from ..session import Session
from .coverage import GazeTally, GridCoverage
from .executors import check_executor, job_results
from .executors import progress as show_progress
from .lsl_playback import LslPlayback, LslReplay
from .outputs import ReleaseFiles
from .recordings import CsvLayout
from .results import LOCAL_CONFIG_FIELDS, shared_config, staged_folder
from .streaming import PldataSource, check_streamable, stream_gaze, streamable

log = logging.getLogger(__name__)

__all__ = ["LOCAL_CONFIG_FIELDS", "ReplayConfig", "ReplayResult", "noise_statement", "replay", "shared_config"]


#: replay's configuration is the session's
ReplayConfig = SessionConfig

SEEDED_NOISE = "reproducible, not private"
PRIVATE_NOISE = "private (OS entropy)"


def noise_statement(seed: int | None) -> str:
    """What a reader of the output must know about its noise (never the seed itself)."""
    return SEEDED_NOISE if seed is not None else PRIVATE_NOISE


def shared_result(result: ReplayResult) -> dict[str, Any]:
    """A result as written or printed: its fields without the seed, and the noise statement."""
    out = {k: v for k, v in asdict(result).items() if k not in _CONSOLE_ONLY}
    out["noise"] = noise_statement(result.seed)
    return out


#: a result's fields for the console only, never written nor printed as JSON: the seed; why steps are
#: in no chunk; a warning about the gaze; what the plausibility bounds left out (a raw count of the
#: gaze, as the clip rate); the LSL streams played, or why not
_CONSOLE_ONLY = ("seed", "note", "warning", "implausible", "lsl", "lsl_problem")


def _durable_budget(config: SessionConfig) -> bool:
    """Whether the recordings charge one person's durable budget (refused without an identity)."""
    if config.unit == "chunk":
        return False
    if getattr(config, "identity", None) is None:
        raise StreamdpError(
            f"replay under the {config.unit} unit needs an identity: whose budget the recordings charge "
            "(e.g. --identity alice@headset1); without one each recording would start a fresh budget"
        )
    return True


@dataclass
class ReplayResult:
    path: str
    name: str
    seed: int | None
    chunks: int = 0
    #: the gaze channel's ticks written (0 with the channel off)
    ticks: int = 0
    steps_dropped: int = 0
    skipped: str = ""
    files: list[str] = field(default_factory=list)
    #: for the console only (:data:`_CONSOLE_ONLY`)
    note: str = ""
    warning: str = ""
    implausible: str = ""
    lsl: tuple[str, ...] = ()
    lsl_problem: str = ""


def recording_seed(seed: int | None, index: int) -> int | None:
    """The seed of the ``index``-th recording: ``seed + index`` (None: OS entropy)."""
    return None if seed is None else seed + index


def release_messages(releases: Iterable[PrivateRelease]) -> bytes:
    """The msgpack payloads the relay publishes, concatenated."""
    return _packed([r.to_message() for r in releases])


def _packed(messages: Iterable[dict[str, Any]]) -> bytes:
    pack = msgpack.Packer(use_bin_type=True).pack
    return b"".join(pack(m) for m in messages)


def _unique_name(path: str, taken: set[str]) -> str:
    p = Path(path)
    base = p.stem if p.is_file() else p.name
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}-{i}"
    taken.add(name)
    return name


def replay_one(
    path: str,
    name: str,
    config: ReplayConfig,
    seed: int | None,
    out_dir: str,
    layout: CsvLayout | None = None,
    lsl: LslReplay | None = None,
) -> ReplayResult:
    """Replay one recording into ``out_dir`` (a worker's whole job: picklable in and out); a
    ``layout`` reads it as a CSV of that layout; ``lsl`` plays its releases on LSL streams too
    (in this process only). A Capture recording (``.pldata``) is read a block at a time in bounded
    memory (:mod:`streamdp.offline.streaming`), anything else whole; the files are the same either
    way."""
    source = streamable(path) if layout is None else None
    if source is not None:
        streamed = _replay_streamed(source, path, name, config, seed, out_dir, lsl)
        if streamed is not None:
            return streamed
    return _replay_whole(path, name, config, seed, out_dir, layout, lsl)


def _open(path: str, layout: CsvLayout | None, config: ReplayConfig, left_out: list[Implausible]) -> Recording:
    """The recording, its gaze held to the public plausibility bounds (what they leave out to ``left_out``)."""
    from ..readers import plausible_recording, read_recording

    if layout is None:
        return read_recording(path, report=left_out.append)
    return plausible_recording(layout.read(path, config), path, left_out.append)


def _playback(lsl: LslReplay | None, name: str, config: ReplayConfig, unit: str = "auto") -> list[LslPlayback]:
    return [] if lsl is None else [lsl.playback(name, config, unit)]


def _played(result: ReplayResult, playback: list[LslPlayback], *, whole: bool = True) -> None:
    """End the playback and say how it went: played ``whole``, its streams stay up for their inlets
    a while; cut short (an error, Ctrl-C), they are withdrawn at once."""
    for p in playback:
        p.close(linger=whole)
        result.lsl, result.lsl_problem = (p.stream_names if p.pushed else ()), p.problem


def _files(path: str, name: str, config: ReplayConfig, seed: int | None, out_dir: str) -> ReleaseFiles:
    return ReleaseFiles.for_recording(out_dir, name, path, config, noise_statement(seed))


def _unusable(result: ReplayResult, tally: GazeTally) -> bool:
    """Whether the gaze has no usable sample (the result then says so); a warning when most is not."""
    result.skipped, result.warning = tally.problem()
    return bool(result.skipped)


def _finish(result: ReplayResult, files: ReleaseFiles, session: Session, tally: GazeTally) -> ReplayResult:
    result.steps_dropped = session.status().dropped_steps
    result.chunks = files.released
    result.ticks = files.ticks if files.released else 0
    result.files = files.finish()
    coverage = GridCoverage.of(session.config, tally.first, tally.last) if tally.total else None
    if not result.files:
        result.skipped = coverage.no_chunk() if coverage is not None else "no gaze samples"
    elif coverage is not None:
        result.note = coverage.note()
    return result


def _replay_streamed(
    source: PldataSource, path: str, name: str, config: ReplayConfig, seed: int | None, out_dir: str,
    lsl: LslReplay | None = None,
) -> ReplayResult | None:  # fmt: skip
    """The replay of a ``.pldata`` recording read a block at a time; None when the recording must
    be read whole (it holds something the whole-file reader refuses, or might)."""
    result = ReplayResult(path, name, seed)
    if config.identity is not None or lsl is not None or (config.blinks == "given" and source.blinks is None):
        # refused now, before a durable budget is charged, releases are played on LSL (read whole
        # afterwards, they would be played twice) or gaze is replayed without its blinks
        first = GazeTally(config.min_confidence)
        if not check_streamable(source, tally=first):
            return None
        if source.blinks is None and config.blinks == "given":
            result.skipped = "--blinks given, but the recording has no blink events"
            return result
        if _unusable(result, first):
            return result
    files = _files(path, name, config, seed, out_dir)
    try:
        session = Session(config, sinks=[files], seed=seed, camera=None, source=source.name, reorder=False)
    except BudgetExhausted as exc:
        if config.identity is None and not check_streamable(source):
            return None
        result.skipped = f"not replayed: {exc}"
        return result
    tally = GazeTally(config.min_confidence)
    session.sinks.extend(playback := _playback(lsl, name, config))
    try:
        streamed = stream_gaze(source, session, tally=tally)
    except BaseException:
        _played(result, playback, whole=False)
        raise
    _played(result, playback)
    if streamed is None:
        files.discard()
        return None
    if _unusable(result, tally):
        files.discard()
        return result
    return _finish(result, files, session, tally)


def _replay_whole(
    path: str, name: str, config: ReplayConfig, seed: int | None, out_dir: str, layout: CsvLayout | None,
    lsl: LslReplay | None = None,
) -> ReplayResult:  # fmt: skip
    result = ReplayResult(path, name, seed)
    left_out: list[Implausible] = []
    try:
        rec = _open(path, layout, config, left_out)
    except (InputError, OSError) as exc:
        result.skipped = f"cannot read: {exc}"
        return result
    result.implausible = "; ".join(x.describe() for x in left_out if x.describe())
    if config.blinks == "given" and rec.blinks is None:
        result.skipped = "--blinks given, but the recording has no blink events"
        return result
    tally = GazeTally(config.min_confidence)
    tally.add(rec.gaze.t, rec.gaze.valid, rec.gaze.confidence)
    if _unusable(result, tally):
        return result
    files = _files(path, name, config, seed, out_dir)
    try:
        session = Session.for_recording(config, rec, sinks=[files], seed=seed)
    except BudgetExhausted as exc:  # a durable budget spent by the recordings before this one
        result.skipped = f"not replayed: {exc}"
        return result
    session.sinks.extend(playback := _playback(lsl, name, config, rec.gaze.diameter_unit))
    try:
        session.run(rec)
    except BaseException:
        _played(result, playback, whole=False)
        raise
    _played(result, playback)
    return _finish(result, files, session, tally)


def replay(
    paths: Sequence[str],
    out_dir: str | Path,
    config: ReplayConfig,
    *,
    overwrite: bool = False,
    jobs: int | None = None,
    executor: str = "processes",
    scheduler: str | None = None,
    progress: bool = True,
    layout: CsvLayout | None = None,
    lsl: LslReplay | None = None,
) -> list[ReplayResult]:
    """Replay ``paths`` into ``out_dir``.

    Parameters
    ----------
    layout : CsvLayout, optional
        Read every path as a CSV of this layout (default: the format the readers recognise).
    jobs : int or None
        Local worker processes (default: the number of cores; 1 runs in this process).
    executor : {"processes", "dask"}
        Local processes, or an existing dask.distributed cluster at ``scheduler`` (an address, or
        a ``distributed.Client``/``LocalCluster`` object).
    lsl : LslReplay, optional
        Also play each recording's releases on LSL streams, at its pace, with its timestamps
        (:mod:`streamdp.offline.lsl_playback`); the recordings then run in this process, one after
        another.

    Returns
    -------
    list of ReplayResult
        One per path, in order. When every recording was skipped nothing is written: ``out_dir``
        is not created (nor replaced).

    Raises
    ------
    StreamdpError
        ``out_dir`` exists and ``overwrite`` is false, cannot be created, or no recording was
        given.
    TypeError, ValueError
        ``jobs`` is not an int ≥ 1 (or None), ``executor`` is not one of the two, ``scheduler``
        without ``executor="dask"``; ``lsl`` not an :class:`LslReplay`, or with ``executor="dask"``
        or ``jobs`` > 1, or with seeded noise and without its flag.
    ImportError
        ``lsl`` without pylsl (the ``lsl`` extra).
    """
    if not paths:
        raise StreamdpError("no recording given")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)):
        raise TypeError(f"jobs must be an int or None, got {jobs!r}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be ≥ 1 worker process, got {jobs}")
    check_executor(executor, scheduler)
    config.check()  # bad options fail here, before any file or worker exists
    if lsl is not None:
        if not isinstance(lsl, LslReplay):
            raise TypeError(f"lsl must be an LslReplay or None, got {lsl!r}")
        if executor != "processes" or (jobs or 1) > 1:
            raise ValueError(
                f"lsl plays each recording from this process (a release is sealed where it is made): "
                f"give jobs=1 and executor='processes', got jobs={jobs!r}, executor={executor!r}"
            )
        lsl.check(config)
    if _durable_budget(config) or lsl is not None:
        jobs, executor = 1, "processes"  # one budget, charged in the order given; LSL from here
    taken: set[str] = set()
    names = [_unique_name(p, taken) for p in paths]
    with staged_folder(Path(out_dir), overwrite=overwrite) as stage:
        tasks = [
            (p, names[i], config, recording_seed(config.seed, i), str(stage.path), layout, lsl)
            for i, p in enumerate(paths)
        ]
        results = _run(tasks, jobs, executor, scheduler, progress)
        summary = {
            "config": shared_config(config),
            "noise": noise_statement(config.seed),
            "recordings": [shared_result(r) for r in results],
        }
        (stage.path / "replay.json").write_text(json.dumps(summary, indent=1))
        stage.publish = any(r.chunks for r in results)
    return results


def _run(
    tasks: list[tuple[Any, ...]], jobs: int | None, executor: str, scheduler: Any, progress: bool
) -> list[ReplayResult]:
    results: list[ReplayResult | None] = [None] * len(tasks)
    workers = jobs or os.cpu_count() or 1
    with closing(job_results(replay_one, tasks, workers=workers, executor=executor, scheduler=scheduler)) as done:
        for i, result in show_progress(done, progress, len(tasks), "replay", "recording"):
            results[i] = result
    return [r for r in results if r is not None]
