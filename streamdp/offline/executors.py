"""Where the offline commands' jobs run: in this process, on local worker processes, or on a
dask.distributed cluster.

``replay`` and ``evaluate`` both take ``executor`` (``"processes"`` or ``"dask"``) and
``scheduler`` (with ``"dask"``: a scheduler's address, a ``distributed.Client``, a cluster object
such as ``LocalCluster``, or None for a local cluster started for the call).
:func:`check_executor` refuses a bad pair before any work; :func:`job_results` runs
``fn(*shared, *task)`` for every task where it was asked to and hands each result back with its
task's index, so that the caller puts them in task order whatever order they finish in: the
results do not depend on where the jobs ran. ``shared`` (what every job reads, such as the
recordings' features) goes to each worker once, not once per job.

Interrupted (Ctrl-C, or SIGTERM raised as an exception by the command's handler), local workers
are stopped and waited for: none outlives the call, none is left writing. dask is an optional
extra (``pip install 'streamdp[dask]'``), imported only when a job runs on it.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from ..errors import StreamdpError

__all__ = [
    "EXECUTORS", "check_executor", "dask_results", "default_workers", "job_results", "logged", "pool_results",
    "progress", "said",
]

#: where the jobs may run
EXECUTORS = ("processes", "dask")

_T = TypeVar("_T")
#: a finished job: its task's index and its result
Done = Generator[tuple[int, Any], None, None]
#: what every job of a pool worker reads, set once per worker process
_SHARED: dict[str, tuple[Any, ...]] = {"shared": ()}


def check_executor(executor: object, scheduler: object) -> None:
    """Refuse an unknown ``executor``, or a ``scheduler`` without ``executor="dask"``.

    Raises
    ------
    TypeError
        ``executor`` is not a str; ``scheduler`` is not an address, a client or cluster, or None.
    ValueError
        ``executor`` is not one of :data:`EXECUTORS`; ``scheduler`` is an empty address, or given
        with the local processes.

    Examples
    --------
    >>> check_executor("dask", "tcp://10.0.0.5:8786")
    >>> check_executor("processes", "tcp://10.0.0.5:8786")
    Traceback (most recent call last):
    ...
    ValueError: scheduler is a dask.distributed scheduler: it needs executor='dask', got executor='processes'
    """
    if not isinstance(executor, str):
        raise TypeError(f"executor must be a str, one of {', '.join(EXECUTORS)}; got {executor!r}")
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be 'processes' or 'dask', got {executor!r}")
    if scheduler is None:
        return
    if isinstance(scheduler, (bool, int, float, bytes)):
        raise TypeError(f"scheduler must be an address, a distributed Client or a cluster, got {scheduler!r}")
    if scheduler == "":
        raise ValueError("scheduler must not be empty (None: a local cluster)")
    if executor != "dask":
        raise ValueError(
            f"scheduler is a dask.distributed scheduler: it needs executor='dask', got executor={executor!r}"
        )


def _with_shared(fn: Callable[..., Any], shared: Sequence[Any], *task: Any) -> Any:
    return fn(*shared, *task)


def dask_results(
    fn: Callable[..., Any], tasks: Sequence[Sequence[Any]], scheduler: Any = None, *, shared: Sequence[Any] = ()
) -> Done:
    """``fn(*shared, *task)`` for every task on a dask.distributed cluster, yielding ``(index,
    result)`` as each job finishes. ``shared`` is sent to every worker once, not once per job.

    A client made here (from an address, a cluster, or None) is closed when the iteration ends or
    is abandoned (close the generator, or use it in a ``with contextlib.closing(...)``); a
    ``distributed.Client`` given is left open.

    Raises
    ------
    StreamdpError
        dask.distributed is not installed (the ``dask`` extra).
    Exception
        Whatever a job raised, when its result is taken.

    Examples
    --------
    >>> with LocalCluster(processes=False, n_workers=1, dashboard_address=None) as cluster:  # doctest: +SKIP
    ...     sorted(dask_results(pow, [(2, 3), (3, 2)], cluster))
    [(0, 8), (1, 9)]
    """
    try:
        from distributed import Client
        from distributed import as_completed as dask_completed
    except ImportError:
        raise StreamdpError("--executor dask needs the optional extra: pip install 'streamdp[dask]'") from None
    given = isinstance(scheduler, Client)
    client = scheduler if given else Client(scheduler)
    try:
        scattered = client.scatter([tuple(shared)], broadcast=True, hash=False)[0] if shared else ()
        futures = [client.submit(_with_shared, fn, scattered, *task, pure=False) for task in tasks]
        index = {f.key: i for i, f in enumerate(futures)}
        for future in dask_completed(futures):
            yield index[future.key], future.result()
    finally:
        if not given:
            client.close()


def default_workers() -> int:
    """The processors this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def progress(items: Iterable[_T], show: bool, total: int, desc: str = "evaluate", unit: str = "job") -> Iterable[_T]:
    """A tqdm bar over ``items`` when tqdm (an optional extra) is installed and progress is wanted."""
    if not show:
        return items
    try:
        from tqdm import tqdm
    except ImportError:
        return items
    return tqdm(items, desc=desc, unit=unit, total=total, disable=None)


def job_results(
    fn: Callable[..., Any],
    tasks: Sequence[Sequence[Any]],
    *,
    workers: int = 1,
    executor: str = "processes",
    scheduler: Any = None,
    shared: Sequence[Any] = (),
    start_method: str | None = None,
) -> Done:
    """``fn(*shared, *task)`` for every task, yielding ``(index, result)`` as each finishes: on the
    dask cluster of ``scheduler`` (:func:`dask_results`), on ``workers`` local processes
    (:func:`pool_results`), or here, one after another, when one worker or one task is all there is.
    Close it when abandoned (``contextlib.closing``): workers are stopped, a client made is closed.

    Raises
    ------
    StreamdpError
        ``executor="dask"`` without the ``dask`` extra.
    Exception
        Whatever a job raised, when its result is taken.

    Examples
    --------
    >>> sorted(job_results(pow, [(2, 3), (3, 2)]))
    [(0, 8), (1, 9)]
    """
    if executor == "dask":
        yield from dask_results(fn, tasks, scheduler, shared=shared)
    elif workers <= 1 or len(tasks) <= 1:
        for i, task in enumerate(tasks):
            yield i, fn(*shared, *task)
    else:
        yield from pool_results(fn, tasks, workers, shared=shared, start_method=start_method)


#: the signals held back while the workers start (:func:`_starting`)
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _worker_init(shared: tuple[Any, ...]) -> None:
    """In a pool worker: keep what every job reads; Ctrl-C (sent to the whole process group) is the
    parent's to handle, and SIGTERM ends the worker at once rather than running the parent's
    handler, inherited by fork. The stop signals were blocked when the worker was started
    (:func:`_starting`): they are unblocked only now, so that one sent while the worker was still
    starting ends it quietly here, never with a traceback from the middle of its start."""
    _SHARED["shared"] = shared
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)


@contextlib.contextmanager
def _starting() -> Iterator[None]:
    """SIGINT and SIGTERM held back (blocked, then delivered on leaving) while the workers start:
    a signal handled in the middle of starting one (writing what it needs on its pipe) would leave
    a half-started worker that prints a traceback when it reads a truncated pipe. The workers
    started inherit the mask and unblock it themselves (:func:`_worker_init`)."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _pool_job(fn: Callable[..., Any], *task: Any) -> Any:
    return fn(*_SHARED["shared"], *task)


def pool_results(
    fn: Callable[..., Any],
    tasks: Sequence[Sequence[Any]],
    workers: int,
    *,
    shared: Sequence[Any] = (),
    start_method: str | None = None,
) -> Done:
    """``fn(*shared, *task)`` for every task on a pool of ``workers`` local processes (started by
    ``start_method``, default the platform's), yielding ``(index, result)`` as each finishes.
    Interrupted or closed before the end, it cancels what has not started, stops the workers and
    waits for them."""
    before = set(multiprocessing.active_children())
    context = multiprocessing.get_context(start_method)
    pool = ProcessPoolExecutor(workers, context, initializer=_worker_init, initargs=(tuple(shared),))
    try:
        with _starting():  # with spawn, submit() starts the workers, one per job up to their number
            futures = {pool.submit(_pool_job, fn, *task): i for i, task in enumerate(tasks)}
        for future in as_completed(futures):
            yield futures[future], future.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        started = [p for p in multiprocessing.active_children() if p not in before]
        for proc in started:
            proc.terminate()
        for proc in started:
            proc.join(5)
        raise
    pool.shutdown()


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        record.msg, record.args, record.exc_info = record.getMessage(), None, None  # plain text: picklable
        self.records.append(record)


def logged(fn: Callable[..., _T], *args: Any) -> tuple[_T, list[logging.LogRecord]]:
    """``fn(*args)`` and what it logged on ``streamdp``'s loggers (at the level those are set to),
    kept instead of said: a job run on a worker process returns them for :func:`said` to say in
    the caller's process, where its logging is configured (a spawned worker has none)."""
    root = logging.getLogger("streamdp")
    collect, propagate = _Collect(), root.propagate
    root.addHandler(collect)
    root.propagate = False
    try:
        return fn(*args), collect.records
    finally:
        root.removeHandler(collect)
        root.propagate = propagate


def said(records: Iterable[logging.LogRecord]) -> None:
    """Say here what :func:`logged` kept, each through the logger that made it."""
    for record in records:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(record.levelno):
            logger.handle(record)
