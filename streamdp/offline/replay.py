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
"""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import signal
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from ..config import SessionConfig
from ..errors import BudgetExhausted, InputError, StreamdpError
from ..privacy.release import PrivateRelease
from ..session import Session
from .coverage import GazeTally, GridCoverage
from .outputs import ReleaseFiles
from .recordings import CsvLayout, open_recording
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
    out = {k: v for k, v in asdict(result).items() if k not in ("seed", "note", "warning")}
    out["noise"] = noise_statement(result.seed)
    return out


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
    #: for the console only, never written: why steps are in no chunk, and a warning about the gaze
    note: str = ""
    warning: str = ""


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
    path: str, name: str, config: ReplayConfig, seed: int | None, out_dir: str, layout: CsvLayout | None = None
) -> ReplayResult:
    """Replay one recording into ``out_dir`` (a worker's whole job: picklable in and out); a
    ``layout`` reads it as a CSV of that layout. A Capture recording (``.pldata``) is read a
    block at a time in bounded memory (:mod:`streamdp.offline.streaming`), anything else whole;
    the files are the same either way."""
    source = streamable(path) if layout is None else None
    if source is not None:
        streamed = _replay_streamed(source, path, name, config, seed, out_dir)
        if streamed is not None:
            return streamed
    return _replay_whole(path, name, config, seed, out_dir, layout)


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
    source: PldataSource, path: str, name: str, config: ReplayConfig, seed: int | None, out_dir: str
) -> ReplayResult | None:
    """The replay of a ``.pldata`` recording read a block at a time; None when the recording must
    be read whole (it holds something the whole-file reader refuses, or might)."""
    result = ReplayResult(path, name, seed)
    if config.identity is not None or (config.blinks == "given" and source.blinks is None):
        # refused now, before a durable budget is charged or gaze is replayed without its blinks
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
    if stream_gaze(source, session, tally=tally) is None:
        files.discard()
        return None
    if _unusable(result, tally):
        files.discard()
        return result
    return _finish(result, files, session, tally)


def _replay_whole(
    path: str, name: str, config: ReplayConfig, seed: int | None, out_dir: str, layout: CsvLayout | None
) -> ReplayResult:
    result = ReplayResult(path, name, seed)
    try:
        rec = open_recording(path, layout, config)
    except (InputError, OSError) as exc:
        result.skipped = f"cannot read: {exc}"
        return result
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
    session.run(rec)
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
        ``jobs`` is not an int ≥ 1 (or None), ``executor`` is not one of the two.
    """
    if not paths:
        raise StreamdpError("no recording given")
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int)):
        raise TypeError(f"jobs must be an int or None, got {jobs!r}")
    if jobs is not None and jobs < 1:
        raise ValueError(f"jobs must be ≥ 1 worker process, got {jobs}")
    if executor not in ("processes", "dask"):
        raise ValueError(f"executor must be 'processes' or 'dask', got {executor!r}")
    config.check()  # bad options fail here, before any file or worker exists
    if _durable_budget(config):
        jobs, executor = 1, "processes"  # one budget, charged in the order given
    taken: set[str] = set()
    names = [_unique_name(p, taken) for p in paths]
    with staged_folder(Path(out_dir), overwrite=overwrite) as stage:
        tasks = [
            (p, names[i], config, recording_seed(config.seed, i), str(stage.path), layout) for i, p in enumerate(paths)
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
    bar = _progress(len(tasks), progress)
    results: list[ReplayResult | None] = [None] * len(tasks)
    try:
        if executor == "dask":
            results = _run_dask(tasks, scheduler, bar)
        elif (jobs or os.cpu_count() or 1) <= 1 or len(tasks) == 1:
            for i, task in enumerate(tasks):
                results[i] = replay_one(*task)
                bar.update()
        else:
            _run_pool(tasks, jobs or os.cpu_count() or 1, results, bar)
    finally:
        bar.close()
    return [r for r in results if r is not None]


def _worker_signals() -> None:
    """In a pool worker: Ctrl-C (sent to the whole process group) is the parent's to handle, and
    SIGTERM ends the worker at once rather than running the parent's handler, inherited by fork."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_pool(tasks: list[tuple[Any, ...]], jobs: int, results: list[ReplayResult | None], bar: Any) -> None:
    """Run ``tasks`` on a pool of ``jobs`` processes. Interrupted (KeyboardInterrupt, or SIGTERM
    raised as an exception by the caller's handler), it cancels what has not started, stops the
    workers and waits for them: no worker outlives the call, none is left writing."""
    before = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_worker_signals)
    try:
        futures = {pool.submit(replay_one, *task): i for i, task in enumerate(tasks)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            bar.update()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        workers = [p for p in multiprocessing.active_children() if p not in before]
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.join(5)
        raise
    pool.shutdown()


class _NoProgress:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool) -> Any:
    """A tqdm bar when tqdm (an optional extra) is installed and progress is wanted."""
    if not show:
        return _NoProgress()
    try:
        from tqdm import tqdm
    except ImportError:
        return _NoProgress()
    return tqdm(total=total, desc="replay", unit="recording", disable=None)


def _run_dask(tasks: list[tuple[Any, ...]], scheduler: Any, bar: Any) -> list[ReplayResult | None]:
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise StreamdpError("--executor dask needs the optional extra: pip install 'streamdp[dask]'") from None
    own = isinstance(scheduler, str) or scheduler is None
    client = Client(scheduler) if own else (scheduler if isinstance(scheduler, Client) else Client(scheduler))
    try:
        futures = [client.submit(replay_one, *task, pure=False) for task in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[ReplayResult | None] = [None] * len(tasks)
        for fut in dask_completed(futures):
            results[index[fut.key]] = fut.result()
            bar.update()
        return results
    finally:
        if own or not isinstance(scheduler, Client):
            client.close()
