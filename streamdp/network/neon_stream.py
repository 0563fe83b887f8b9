"""Neon's gaze and eye events without loss when the consumer is slow, each stream on its own.

``pupil_labs.realtime_api.simple.Device`` keeps only the newest datum of each sensor, so a loop
that falls behind loses gaze silently. :class:`NeonStream` reads the device's streams with the
realtime API's asynchronous generators (``receive_gaze_data``, ``receive_eye_events_data``) in a
thread of its own and queues every datum in a bounded queue; what does not fit is counted in
:attr:`NeonStream.dropped`, never dropped silently. It offers the two ``receive_*`` methods the
Neon relay reads (the ``simple.Device`` interface) and ``close()``.

The two streams are independent: one that fails leaves the other running. A stream fails when
the realtime API raises while it parses (a gaze packet of a length it does not know, an eye event
of a type it does not know: ``KeyError``); the same packets would come again, so it is not
reopened and the failure is kept, once, as a :class:`StreamFailure` (reason and count). A stream
that ends (the connection closed) is reopened with backoff when ``reconnect_for`` is set, each
attempt counted in :attr:`NeonStream.reconnects`, until it has given nothing for that long.
"""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import threading
import time
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass
from typing import Any

#: a factory of the asynchronous iterable of one stream (called in the reader thread's loop)
StreamFactory = Callable[[], AsyncIterable[Any]]

GAZE, EYE_EVENTS = "gaze", "eye events"

#: the realtime API's parsers log each failure with its traceback before they raise; the stream
#: reports the failure itself, in one line, so those records are left out
_PARSER_LOGGERS = ("pupil_labs.realtime_api.streaming.gaze", "pupil_labs.realtime_api.streaming.eye_events")


class _WithoutTraceback(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.exc_info is None


_QUIET_PARSERS = _WithoutTraceback()


@dataclass(frozen=True)
class StreamFailure:
    """Why one of the device's streams stopped for good.

    Attributes
    ----------
    stream : str
        ``"gaze"`` or ``"eye events"``.
    reason : str
        One line: what the realtime API could not read, or that the stream did not come back.
    received : int
        Datums of that stream queued before it failed.
    """

    stream: str
    reason: str
    received: int

    def __str__(self) -> str:
        return f"the {self.stream} stream failed after {self.received} {_datums(self.stream)}: {self.reason}"


def _datums(stream: str) -> str:
    return "gaze datums" if stream == GAZE else "eye events"


def _api_version() -> str:
    try:
        from importlib.metadata import version

        return f"pupil-labs-realtime-api {version('pupil-labs-realtime-api')}"
    except Exception:  # not installed as a distribution (tests' stand-ins)
        return "the realtime API"


def failure_reason(stream: str, exc: BaseException) -> str:
    """One line about an exception the realtime API raised while reading ``stream``.

    Its parsers raise ``KeyError(n)`` for a packet they do not know: ``n`` is the gaze packet's
    length in bytes, or the eye event's type.

    Examples
    --------
    >>> failure_reason("gaze", KeyError(7)).startswith("a gaze packet of 7 bytes, a format")
    True
    >>> failure_reason("eye events", ValueError("bad"))
    'the realtime API could not read an eye event: ValueError: bad'
    """
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], int):
        n = exc.args[0]
        what = f"a gaze packet of {n} bytes" if stream == GAZE else f"an eye event of type {n}"
        update = "a newer Companion app? pip install -U pupil-labs-realtime-api"
        return f"{what}, a format {_api_version()} does not know ({update})"
    item = "a gaze datum" if stream == GAZE else "an eye event"
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"the realtime API could not read {item}: {type(exc).__name__}" + (f": {text}" if text else "")


class NeonStream:
    """Gaze and eye events read in a thread into bounded queues, each stream on its own.

    Parameters
    ----------
    gaze : callable
        Returns the asynchronous iterable of gaze datums (e.g.
        ``lambda: receive_gaze_data(url)``); called again for each reconnection.
    eye_events : callable or None
        The same for eye events (None: the device has no eye-event stream).
    capacity : int
        Datums each queue holds; at 200 Hz, 60 000 are five minutes of gaze.
    on_close : callable or None
        Called once by :meth:`close` (e.g. to close the device's HTTP session).
    reconnect_for : float or None
        None: a stream that ends is finished (a finite source). Seconds: a stream that ends is
        opened again after a backoff (0.25 s, doubling to 4 s), each attempt counted in
        :attr:`reconnects`, until it has given nothing for this long; then it has failed.

    Raises
    ------
    TypeError
        ``capacity`` is not an int; ``reconnect_for`` is not None nor a number.
    ValueError
        ``capacity`` is < 1; ``reconnect_for`` is not finite and > 0.

    Examples
    --------
    >>> async def three():
    ...     for i in range(3):
    ...         yield i
    >>> stream = NeonStream(gaze=three, eye_events=None, capacity=2)
    >>> stream.wait_until_drained(5.0)
    True
    >>> [stream.receive_gaze_datum(timeout_seconds=1.0) for _ in range(3)], stream.dropped
    ([0, 1, None], 1)
    >>> stream.close()
    """

    FIRST_BACKOFF = 0.25
    MAX_BACKOFF = 4.0

    def __init__(
        self,
        *,
        gaze: StreamFactory,
        eye_events: StreamFactory | None,
        capacity: int = 60_000,
        on_close: Callable[[], Any] | None = None,
        reconnect_for: float | None = None,
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise TypeError(f"capacity must be an int, got {capacity!r}")
        if capacity < 1:
            raise ValueError(f"capacity must be ≥ 1, got {capacity!r}")
        if reconnect_for is not None:
            if isinstance(reconnect_for, bool) or not isinstance(reconnect_for, (int, float)):
                raise TypeError(f"reconnect_for must be None or a number of seconds, got {reconnect_for!r}")
            if not (math.isfinite(reconnect_for) and reconnect_for > 0):
                raise ValueError(f"reconnect_for must be finite and > 0 seconds, got {reconnect_for!r}")
        self.capacity = capacity
        self.reconnect_for = None if reconnect_for is None else float(reconnect_for)
        self.dropped = 0
        #: times a stream that ended was opened again
        self.reconnects = 0
        #: datums queued, by stream (``"gaze"``, ``"eye events"``)
        self.received = {GAZE: 0, EYE_EVENTS: 0}
        self._failures: dict[str, StreamFailure] = {}
        self._gaze: queue.Queue[Any] = queue.Queue(capacity)
        self._events: queue.Queue[Any] = queue.Queue(capacity)
        self._on_close = on_close
        self._closed = False
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        # a connection the realtime API could not make ends its stream; its error is kept as the
        # reason to give if the stream does not come back, instead of asyncio's log record
        self._loop.set_exception_handler(self._connection_error)
        self._last_connection_error: str | None = None
        self._task: asyncio.Task[None] | None = None
        self._done = threading.Event()
        for name in _PARSER_LOGGERS:
            logging.getLogger(name).addFilter(_QUIET_PARSERS)
        streams = [(GAZE, gaze, self._gaze)]
        if eye_events is not None:
            streams.append((EYE_EVENTS, eye_events, self._events))
        self._thread = threading.Thread(target=self._read, args=(streams,), name="neon-stream", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------- reader thread

    def _connection_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        self._last_connection_error = f"{type(exc).__name__}: {exc}" if exc is not None else str(context.get("message"))

    def _put(self, name: str, target: queue.Queue[Any], datum: Any) -> None:
        try:
            target.put_nowait(datum)
        except queue.Full:
            with self._lock:
                self.dropped += 1
            return
        self.received[name] += 1

    def _fail(self, name: str, reason: str) -> None:
        with self._lock:
            self._failures[name] = StreamFailure(name, reason, self.received[name])

    async def _pump(self, name: str, factory: StreamFactory, target: queue.Queue[Any]) -> None:
        backoff = self.FIRST_BACKOFF
        last_datum = time.monotonic()
        while True:
            try:
                async for datum in factory():
                    self._put(name, target, datum)
                    last_datum, backoff = time.monotonic(), self.FIRST_BACKOFF
            except Exception as exc:  # the API could not parse what came: it would again
                self._fail(name, failure_reason(name, exc))
                return
            if self.reconnect_for is None:
                return  # a finite source: it ended
            silent = time.monotonic() - last_datum
            if silent >= self.reconnect_for:
                why = f"; last connection error: {self._last_connection_error}" if self._last_connection_error else ""
                self._fail(name, f"it ended and gave nothing for {self.reconnect_for:g} s of reconnecting{why}")
                return
            # the last attempt is made when reconnect_for has passed
            await asyncio.sleep(min(backoff, self.reconnect_for - silent))
            backoff = min(2 * backoff, self.MAX_BACKOFF)
            with self._lock:
                self.reconnects += 1

    def _read(self, streams: list[tuple[str, StreamFactory, queue.Queue[Any]]]) -> None:
        async def main() -> None:
            # each stream in its own task: one that fails or ends leaves the others running
            await asyncio.gather(*(self._pump(n, f, q) for n, f, q in streams))

        try:
            self._task = self._loop.create_task(main())
            self._loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        finally:
            self._loop.close()
            self._done.set()

    # ------------------------------------------------------------- consumer side

    @property
    def finished(self) -> bool:
        """Whether every stream ended or failed (see :attr:`gaze_failure`)."""
        return self._done.is_set()

    @property
    def gaze_failure(self) -> StreamFailure | None:
        """Why the gaze stream stopped for good (None while it runs or after a normal end)."""
        with self._lock:
            return self._failures.get(GAZE)

    @property
    def eye_events_failure(self) -> StreamFailure | None:
        """Why the eye-event stream stopped for good (None while it runs or after a normal end)."""
        with self._lock:
            return self._failures.get(EYE_EVENTS)

    def wait_until_drained(self, timeout: float) -> bool:
        """Wait until the streams ended (tests and finite sources)."""
        return self._done.wait(timeout)

    def receive_gaze_datum(self, timeout_seconds: float | None = None) -> Any:
        """The oldest gaze datum not yet taken, or None after ``timeout_seconds``."""
        return _get(self._gaze, timeout_seconds)

    def receive_eye_events(self, timeout_seconds: float | None = None) -> Any:
        """The oldest eye event not yet taken, or None after ``timeout_seconds``."""
        return _get(self._events, timeout_seconds)

    def close(self) -> None:
        """Stop reading and close the device (idempotent)."""
        if self._closed:
            return
        self._closed = True
        task = self._task
        if task is not None and not self._done.is_set():
            try:
                self._loop.call_soon_threadsafe(task.cancel)
            except RuntimeError:  # the loop closed meanwhile: the streams had ended
                pass
        self._thread.join(5.0)
        if self._on_close is not None:
            self._on_close()


def _get(source: queue.Queue[Any], timeout: float | None) -> Any:
    try:
        if timeout is not None and timeout <= 0:
            return source.get_nowait()
        return source.get(timeout=timeout)
    except queue.Empty:
        return None


def open_device_streams(device: Any, *, capacity: int = 60_000, reconnect_for: float = 30.0) -> NeonStream:
    """A :class:`NeonStream` on a realtime-API ``simple.Device``'s direct gaze and eye-event
    sensors (eye events from Companion 2.9 on), through the device's public ``gaze_sensor()`` and
    ``eye_events_sensor()``; a stream that ends is reopened for ``reconnect_for`` s; closing the
    stream closes the device.

    Raises
    ------
    InputError
        The device offers no direct gaze sensor.
    """
    from pupil_labs.realtime_api.streaming.eye_events import receive_eye_events_data
    from pupil_labs.realtime_api.streaming.gaze import receive_gaze_data

    from ..errors import InputError

    gaze = device.gaze_sensor()
    if gaze is None or gaze.url is None:
        raise InputError(f"{getattr(device, 'phone_name', 'the device')}: no direct gaze sensor (is Neon connected?)")
    gaze_url = gaze.url
    events = device.eye_events_sensor()
    events_url = events.url if events is not None and events.connected else None
    return NeonStream(
        gaze=lambda: receive_gaze_data(gaze_url, log_level=logging.WARNING),
        eye_events=(
            (lambda: receive_eye_events_data(events_url, log_level=logging.WARNING)) if events_url else None
        ),
        capacity=capacity,
        on_close=device.close,
        reconnect_for=reconnect_for,
    )
