"""Neon's gaze and eye events without loss when the consumer is slow.

``pupil_labs.realtime_api.simple.Device`` keeps only the newest datum of each sensor, so a loop
that falls behind loses gaze silently. :class:`NeonStream` reads the device's streams with the
realtime API's asynchronous generators (``receive_gaze_data``, ``receive_eye_events_data``) in a
thread of its own and queues every datum in a bounded queue; what does not fit is counted in
:attr:`NeonStream.dropped`, never dropped silently. It offers the two ``receive_*`` methods the
Neon relay reads (the ``simple.Device`` interface) and ``close()``.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import AsyncIterable, Callable
from typing import Any

#: a factory of the asynchronous iterable of one stream (called in the reader thread's loop)
StreamFactory = Callable[[], AsyncIterable[Any]]


class NeonStream:
    """Gaze and eye events read in a thread into bounded queues.

    Parameters
    ----------
    gaze : callable
        Returns the asynchronous iterable of gaze datums (e.g.
        ``lambda: receive_gaze_data(url)``).
    eye_events : callable or None
        The same for eye events (None: the device has no eye-event stream).
    capacity : int
        Datums each queue holds; at 200 Hz, 60 000 are five minutes of gaze.
    on_close : callable or None
        Called once by :meth:`close` (e.g. to close the device's HTTP session).

    Raises
    ------
    TypeError
        ``capacity`` is not an int.
    ValueError
        ``capacity`` is < 1.

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

    def __init__(
        self,
        *,
        gaze: StreamFactory,
        eye_events: StreamFactory | None,
        capacity: int = 60_000,
        on_close: Callable[[], Any] | None = None,
    ) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int):
            raise TypeError(f"capacity must be an int, got {capacity!r}")
        if capacity < 1:
            raise ValueError(f"capacity must be ≥ 1, got {capacity!r}")
        self.capacity = capacity
        self.dropped = 0
        self.error: BaseException | None = None
        self._gaze: queue.Queue[Any] = queue.Queue(capacity)
        self._events: queue.Queue[Any] = queue.Queue(capacity)
        self._on_close = on_close
        self._closed = False
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._task: asyncio.Task[None] | None = None
        self._done = threading.Event()
        streams = [(gaze, self._gaze)] + ([(eye_events, self._events)] if eye_events is not None else [])
        self._thread = threading.Thread(target=self._read, args=(streams,), name="neon-stream", daemon=True)
        self._thread.start()

    def _put(self, target: queue.Queue[Any], datum: Any) -> None:
        try:
            target.put_nowait(datum)
        except queue.Full:
            with self._lock:
                self.dropped += 1

    def _read(self, streams: list[tuple[StreamFactory, queue.Queue[Any]]]) -> None:
        async def pump(factory: StreamFactory, target: queue.Queue[Any]) -> None:
            async for datum in factory():
                self._put(target, datum)

        async def main() -> None:
            await asyncio.gather(*(pump(f, q) for f, q in streams))

        try:
            self._task = self._loop.create_task(main())
            self._loop.run_until_complete(self._task)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # the device went away: the relay sees the stream end
            self.error = exc
        finally:
            self._loop.close()
            self._done.set()

    @property
    def finished(self) -> bool:
        """Whether the device's streams ended (or failed: see :attr:`error`)."""
        return self._done.is_set()

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


def open_device_streams(device: Any, *, capacity: int = 60_000) -> NeonStream:
    """A :class:`NeonStream` on a realtime-API ``simple.Device``'s direct gaze and eye-event
    sensors (eye events from Companion 2.9 on); closing it closes the device."""
    from pupil_labs.realtime_api.streaming.eye_events import receive_eye_events_data
    from pupil_labs.realtime_api.streaming.gaze import receive_gaze_data

    status = device._status  # the status simple.Device read when it connected
    gaze_url = status.direct_gaze_sensor().url
    events = status.direct_eye_events_sensor()
    events_url = events.url if events is not None and events.connected else None
    return NeonStream(
        gaze=lambda: receive_gaze_data(gaze_url, run_loop=True, log_level=logging.WARNING),
        eye_events=(
            (lambda: receive_eye_events_data(events_url, run_loop=True, log_level=logging.WARNING))
            if events_url
            else None
        ),
        capacity=capacity,
        on_close=device.close,
    )
