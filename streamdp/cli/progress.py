"""Long work said before it starts, and how far it has got while it runs, on stderr.

:func:`preview` refuses work whose estimated memory (:mod:`streamdp.cli.cost`) exceeds what this
machine has available, and announces work estimated at over a minute in one line.
:class:`Progress` shows a tqdm bar on a terminal where tqdm (an optional extra) is installed, and
otherwise a line every few seconds: a log or a pipe gets whole lines, not a bar redrawn in place.
It stays silent for the first ``delay`` seconds, so that work that ends sooner says nothing, and
with ``-q``. A command announces long work first (:func:`preview`), and gives
a short delay to work it announced, a longer one to work it expected to be short: an estimate
that is wrong still ends in progress within half a minute. The lines come further apart as the work
goes on (each wait twice the last, at most :data:`EVERY_AT_MOST`), and what is left is revised from
the measured rate of the work done (counted work), or said to be unknown once the estimate is passed.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

from ..errors import StreamdpError
from .console import say
from .cost import Cost, human_bytes, human_seconds

__all__ = [
    "AFTER",
    "LONG",
    "SOON",
    "Progress",
    "TooMuchWork",
    "available_memory",
    "preview",
    "progress_after",
    "terminal_bar",
]

#: work estimated to take longer (s) is announced, and its progress shown soon
LONG = 60.0

#: seconds of silence before the progress of announced work, and between its lines
SOON = 5.0
#: seconds of silence before the progress of work that was expected to be short
AFTER = 20.0
#: the longest wait (s) between two progress lines
EVERY_AT_MOST = 60.0


class TooMuchWork(StreamdpError):
    """The work the options ask for needs more memory than this machine has available."""


def available_memory() -> float | None:
    """Bytes this process may still allocate: the system's available memory, or less where a
    control group limits it (None where neither can be read).

    Examples
    --------
    >>> available_memory() is None or available_memory() > 0
    True
    """
    found: list[float] = []
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                found.append(float(line.split()[1]) * 1024)
    except (OSError, ValueError, IndexError):
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if limit != "max":
            used = float(Path("/sys/fs/cgroup/memory.current").read_text())
            found.append(max(float(limit) - used, 0.0))
    except (OSError, ValueError):
        pass
    if not found and hasattr(os, "sysconf"):
        try:
            found.append(float(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")))
        except (OSError, ValueError):
            pass
    return min(found) if found else None


def preview(cost: Cost, command: str, *, available: float | None = None) -> bool:
    """Refuse work that needs more memory than ``available`` (default: :func:`available_memory`),
    else say in one line what work over a minute will cost (unless ``-q``); whether it is that
    long (its progress is then worth showing).

    Raises
    ------
    TooMuchWork
        The estimate's memory exceeds what is available (named, with the estimate and what would
        make it smaller).

    Examples
    --------
    >>> preview(Cost(5.0, 1e6, "a little", "less"), "demo")
    False
    >>> preview(Cost(5.0, 4e12, "1e+10 steps", "a larger --step"), "features", available=2e10)
    Traceback (most recent call last):
    ...
    streamdp.cli.progress.TooMuchWork: needs about 5 s and 4 TB of memory for 1e+10 steps (an estimate, within a factor of 3), more than the 20 GB this machine has available: give a larger --step
    """  # noqa: E501
    free = available_memory() if available is None else available
    if free is not None and cost.bytes > free:
        raise TooMuchWork(
            f"needs {cost.describe()}, more than the {human_bytes(free)} this machine has available: "
            f"give {cost.smaller}"
        )
    if cost.seconds <= LONG:
        return False
    say(f"streamdp {command}: this will take {cost.describe()}; progress follows (Ctrl-C stops it)")
    return True


def progress_after(long: bool) -> float:
    """The delay before the first progress of work that was announced as ``long``, or not.

    Examples
    --------
    >>> progress_after(True), progress_after(False)
    (5.0, 20.0)
    """
    return SOON if long else AFTER


class Progress:
    """The progress of one piece of work, on ``stream`` (default: stderr) while it runs.

    Counted work (``total`` units of ``unit``, each done reported by :meth:`advance`) says how
    many are done and how long the rest should take; work that cannot be counted from outside
    (one library call) says how long it has run against its ``estimate`` in seconds.

    Parameters
    ----------
    command : str
        Named at the start of each line.
    estimate : float
        The estimated duration in s (:class:`~streamdp.cli.cost.Cost`).
    total : int, optional
        Units of counted work; None: the work is timed only.
    unit : str
        What a unit is, singular (``"chunk"``).
    show : bool
        False (``-q``): nothing is shown.
    delay, every : float
        Seconds of silence before the first report, and between the first two lines (each later
        wait is twice the one before, at most :data:`EVERY_AT_MOST`).
    stream : text file, optional
        Where to write (default: ``sys.stderr`` when the work starts).

    Raises
    ------
    ValueError
        ``estimate``, ``delay`` or ``every`` not finite and ≥ 0 (``every`` > 0), ``total`` < 0.

    Examples
    --------
    >>> Progress("features", estimate=180.0).line(72.0)
    'streamdp features: running for 72 s of about 3 min estimated'
    >>> Progress("features", estimate=23.0).line(222.0)
    'streamdp features: running for 3.7 min, longer than the 23 s estimated (what is left cannot be counted)'
    >>> bar = Progress("evaluate", estimate=23.0, total=40, unit="job")
    >>> bar.line(10.0)
    'streamdp evaluate: 0 of 40 jobs (0%) after 10 s, none done yet (about 23 s estimated in all)'
    >>> bar.advance(12)
    >>> bar.line(30.0)
    'streamdp evaluate: 12 of 40 jobs (30%) after 30 s, about 70 s left'
    """

    def __init__(
        self,
        command: str,
        *,
        estimate: float,
        total: int | None = None,
        unit: str = "",
        show: bool = True,
        delay: float = AFTER,
        every: float = SOON,
        stream: TextIO | None = None,
    ) -> None:
        for name, value in (("estimate", estimate), ("delay", delay), ("every", every)):
            if not (value >= 0 and value < float("inf")):
                raise ValueError(f"{name} must be finite and ≥ 0, got {value!r}")
        if every <= 0:
            raise ValueError(f"every must be > 0, got {every!r}")
        if total is not None and total < 0:
            raise ValueError(f"total must be ≥ 0, got {total!r}")
        self.command, self.estimate, self.total, self.unit = command, estimate, total, unit
        self.show, self.delay, self.every, self._stream = show, delay, every, stream
        self.done = 0
        self._start = time.monotonic()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._bar: Any = None

    def advance(self, n: int = 1) -> None:
        """``n`` more units of counted work are done."""
        self.done += n
        if self._bar is not None and self.total is not None:
            self._bar.update(n)

    def line(self, elapsed: float) -> str:
        """The report after ``elapsed`` s, as one line."""
        head = f"streamdp {self.command}: "
        if self.total is None and elapsed > self.estimate:
            return head + (
                f"running for {human_seconds(elapsed)}, longer than the {human_seconds(self.estimate)} estimated "
                "(what is left cannot be counted)"
            )
        if self.total is None:
            return head + f"running for {human_seconds(elapsed)} of about {human_seconds(self.estimate)} estimated"
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        plural = "" if self.total == 1 else "s"
        text = f"{self.done} of {self.total} {self.unit}{plural}{share} after {human_seconds(elapsed)}"
        if 0 < self.done < self.total:  # the measured rate: the estimate converges as the work goes on
            text += f", about {human_seconds(elapsed / self.done * (self.total - self.done))} left"
        elif self.done == 0 and self.total:
            text += f", none done yet (about {human_seconds(self.estimate)} estimated in all)"
        return head + text

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        if not self.show:
            return self
        stream = self._stream if self._stream is not None else sys.stderr
        self._stream = stream
        self._bar = _tqdm_bar(self, stream)
        self._thread = threading.Thread(target=self._report, name=f"streamdp {self.command} progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.close()

    def _report(self) -> None:
        """The reporting thread: a line every ``every`` s after ``delay`` (or, on a bar, the
        time run every second)."""
        wait, lines = self.delay, 0
        while not self._stop.wait(wait):
            elapsed = time.monotonic() - self._start
            if self._bar is not None:
                if self.total is None:
                    self._bar.n = min(round(elapsed), self._bar.total)
                    self._bar.refresh()
                wait = 1.0
                continue
            print(self.line(elapsed), file=self._stream, flush=True)
            lines += 1
            wait = self.every if lines == 1 else min(2 * wait, max(EVERY_AT_MOST, self.every))


def terminal_bar(stream: TextIO | None = None) -> bool:
    """Whether progress on ``stream`` (default: stderr) is a tqdm bar: a terminal, and tqdm
    installed (a library's own bar then shows it, and no line need be added).

    Examples
    --------
    >>> import io
    >>> terminal_bar(io.StringIO())
    False
    """
    isatty = getattr(sys.stderr if stream is None else stream, "isatty", None)
    if isatty is None or not isatty():
        return False
    try:
        import tqdm  # noqa: F401
    except ImportError:
        return False
    return True


def _tqdm_bar(progress: Progress, stream: TextIO) -> Any:
    """A tqdm bar for ``progress`` on a terminal where tqdm is installed; else None."""
    if not terminal_bar(stream):
        return None
    from tqdm import tqdm

    timed = progress.total is None
    return tqdm(
        total=max(round(progress.estimate), 1) if timed else progress.total,
        unit="s" if timed else progress.unit,
        desc=f"streamdp {progress.command}" + (" (estimated s)" if timed else ""),
        file=stream,
        delay=progress.delay,
        leave=False,
    )
