"""What every command shares at the console: short logs on stderr, one line per error, and
SIGTERM/SIGINT turned into exceptions that unwind cleanly.

Results go to stdout; everything else (logs, progress, errors) to stderr, in the form
``streamdp: warning: …`` and ``streamdp <command>: error: <thing>: <problem>``.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_quiet = False

#: exit statuses of a command ended by SIGINT and SIGTERM (128 + the signal's number)
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, as KeyboardInterrupt is, so that ``except Exception``
    in library code never swallows it and every ``finally`` runs on the way out."""


class _SaidOnce(logging.Filter):
    """Drops a record whose message contains a recent one or is contained in it: a library logs
    a fact (the budget is spent) and the layer above logs it again with its context. A message
    repeated as it is (a retry) is shown each time."""

    def __init__(self, memory: int = 100) -> None:
        super().__init__()
        self._said: deque[str] = deque(maxlen=memory)

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if len(text) >= 20 and any(text != s and (text in s or s in text) for s in self._said):
            return False
        self._said.append(text)
        return True


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (a test's capture, a
    redirection made after the handler was installed)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


class _ShortFormatter(logging.Formatter):
    def __init__(self, detailed: bool) -> None:
        super().__init__()
        self.detailed = detailed

    def format(self, record: logging.LogRecord) -> str:
        where = f"{record.name}: " if self.detailed else ""
        text = f"streamdp: {record.levelname.lower()}: {where}{record.getMessage()}"
        if record.exc_info and self.detailed:
            text += "\n" + self.formatException(record.exc_info)
        return text


def configure_logging(verbosity: int) -> None:
    """Logs to stderr, one short line each: warnings and errors by default, info at ``-v`` (1),
    debug with the logger's name at ``-vv`` (2), errors only at ``-q`` (-1).

    Examples
    --------
    >>> configure_logging(0)
    >>> logging.getLogger().level == logging.WARNING
    True
    """
    global _quiet
    _quiet = verbosity < 0
    level = {-1: logging.ERROR, 0: logging.WARNING, 1: logging.INFO}.get(max(-1, min(verbosity, 2)), logging.DEBUG)
    handler = _StderrHandler()
    handler.setFormatter(_ShortFormatter(detailed=verbosity >= 2))
    handler.addFilter(_SaidOnce())
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "_streamdp", False)]:
        root.removeHandler(old)
    handler._streamdp = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)


def say(text: str) -> None:
    """One line for people on stderr (what runs, what was written, a summary), unless ``-q``."""
    if not _quiet:
        print(text, file=sys.stderr, flush=True)


def error_text(exc: BaseException) -> str:
    """One line about what went wrong: the message of a streamdp error, the path and the reason
    of a file-system error, a library's message otherwise.

    Examples
    --------
    >>> error_text(FileNotFoundError(2, "No such file or directory", "/no/x.csv"))
    '/no/x.csv: no such file or directory'
    >>> error_text(ValueError("two\\nlines"))
    'two; lines'
    """
    if isinstance(exc, OSError) and exc.strerror:
        name = exc.filename if exc.filename is not None else ""
        text = f"{name}: {exc.strerror[0].lower()}{exc.strerror[1:]}" if name else exc.strerror
    else:
        text = str(exc) or type(exc).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def is_environment_fault(exc: BaseException) -> bool:
    """An error about the machine rather than streamdp: a file, a socket (ZeroMQ)."""
    return isinstance(exc, OSError) or type(exc).__module__.startswith("zmq")


@contextmanager
def termination_as_exception() -> Iterator[None]:
    """Within the block SIGTERM raises :class:`Terminated` and SIGINT KeyboardInterrupt in the
    main thread; the previous handlers come back afterwards. Elsewhere than in the main thread
    (a test calling a command in a thread) signals are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def on_stop_signals(stop: Callable[[], Any]) -> list[int]:
    """Make SIGINT and SIGTERM call ``stop`` (a long-running loop that ends itself cleanly);
    :func:`termination_as_exception` restores the previous handlers when the command ends. Returns
    the list the signals received are appended to (their numbers), for the exit status."""
    received: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        return received

    def handler(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, handler)
    return received
