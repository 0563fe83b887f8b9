"""An app's client for the real-time gaze channel: sanitized gaze positions as NumPy arrays.

``streamdp relay --gaze-channel`` (or the plugin) publishes one message per tick of a public grid
(60 Hz by default) on ``streamdp.gaze.<mechanism>``: the tick's time, the sanitized position in
degrees from the scene camera's axis and in normalized scene units, and its ledger. Two
generators read them:

- :func:`gaze_ticks`: one :class:`GazeTick` per tick, as it arrives;
- :func:`gaze_tick_batches`: one :class:`GazeTickBatch` of arrays per call, every tick that has
  arrived since the previous one (a render loop takes the newest position, ``batch.deg[-1]``).

Both check the schema (the message's names must be the channel's four, in any order) and end
after ``timeout`` seconds without a tick; reconnecting to a relay that restarts is ZeroMQ's own.
The positions are noised: each is the gaze plus noise of about ``w/ε`` degrees a tick (1° at the
defaults), so an app smooths or selects over several ticks (dwell, scrolling, foveation).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import zmq
from numpy.typing import NDArray

from ..errors import InputError
from .subscriber import connect_subscriber

__all__ = ["GAZE_TOPIC", "TICK_NAMES", "GazeTick", "GazeTickBatch", "gaze_tick_batches", "gaze_ticks"]

#: the topic prefix of the gaze channel
GAZE_TOPIC = "streamdp.gaze."
#: the names a tick's values carry: degrees from the scene camera's axis, then normalized scene units
TICK_NAMES = ("x_deg", "y_deg", "x_norm", "y_norm")


@dataclass(frozen=True)
class GazeTick:
    """One sanitized gaze position.

    Attributes
    ----------
    t : float
        The tick's time on the source's clock (Pupil time), a multiple of ``1/rate``.
    deg : ndarray, shape (2,)
        x and y in degrees from the scene camera's axis (x right, y up).
    norm : ndarray, shape (2,)
        The same position in normalized scene units (0–1, origin bottom left, Pupil's convention).
    epsilon_tick_per_degree : float
        ε per degree of gaze displacement this tick spent.
    tick_index : int
        The tick's number in the relay's stream (0 first).
    ledger : mapping
        The message's whole ledger (mechanism, ``w``, ``epsilon_w_per_degree``, ``rate_hz``; the
        guarantee in words on the first tick of every second).
    """

    t: float
    deg: NDArray[np.float64]
    norm: NDArray[np.float64]
    epsilon_tick_per_degree: float
    tick_index: int
    ledger: Mapping[str, Any]


@dataclass(frozen=True)
class GazeTickBatch:
    """The ticks received since the previous batch, as arrays (``m`` ticks, in order).

    Attributes
    ----------
    t : ndarray, shape (m,)
    deg : ndarray, shape (m, 2)
    norm : ndarray, shape (m, 2)
    epsilon_tick_per_degree : ndarray, shape (m,)
    tick_index : ndarray of int64, shape (m,)
    """

    t: NDArray[np.float64]
    deg: NDArray[np.float64]
    norm: NDArray[np.float64]
    epsilon_tick_per_degree: NDArray[np.float64]
    tick_index: NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.t)


def tick_from_message(message: Mapping[str, Any]) -> GazeTick:
    """The :class:`GazeTick` of one decoded message.

    Raises
    ------
    InputError
        The message is not a tick of the gaze channel (names, shapes or ledger), in one line.

    Examples
    --------
    >>> tick = tick_from_message({"names": ["x_deg", "y_deg", "x_norm", "y_norm"], "t": [1000.5],
    ...     "values": [[1.0, -2.0, 0.51, 0.46]], "ledger": {"tick_index": 30, "epsilon_tick_per_degree": 1.0}})
    >>> tick.t, tick.deg.tolist(), tick.norm.tolist(), tick.tick_index
    (1000.5, [1.0, -2.0], [0.51, 0.46], 30)
    >>> tick_from_message({"names": ["fixation_rate"], "t": [1.0], "values": [[3.0]], "ledger": {}})
    Traceback (most recent call last):
    ...
    streamdp.errors.InputError: not a gaze tick: its names are ['fixation_rate'], the channel's are x_deg, y_deg, x_norm, y_norm
    """  # noqa: E501
    try:
        names = [str(n) for n in message["names"]]
        if sorted(names) != sorted(TICK_NAMES):
            raise InputError(f"not a gaze tick: its names are {names}, the channel's are {', '.join(TICK_NAMES)}")
        values = np.asarray(message["values"], dtype=np.float64)
        t = np.asarray(message["t"], dtype=np.float64)
        if values.shape != (1, len(TICK_NAMES)) or t.shape != (1,):
            raise InputError(
                f"not a gaze tick: values of shape {values.shape} at {t.shape} times, a tick has (1, 4) at 1"
            )
        row = dict(zip(names, values[0], strict=True))
        ledger = message["ledger"]
        return GazeTick(
            t=float(t[0]),
            deg=np.array([row["x_deg"], row["y_deg"]]),
            norm=np.array([row["x_norm"], row["y_norm"]]),
            epsilon_tick_per_degree=float(ledger["epsilon_tick_per_degree"]),
            tick_index=int(ledger["tick_index"]),
            ledger=ledger,
        )
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a gaze tick: {type(exc).__name__}: {exc}") from None


def _socket(endpoint: str, curve: tuple[str | Path, str | Path] | None, context: zmq.Context | None) -> zmq.Socket:
    server_key, client_cert = (Path(curve[0]), Path(curve[1])) if curve is not None else (None, None)
    return connect_subscriber(
        endpoint, (GAZE_TOPIC,), server_public_key=server_key, client_certificate=client_cert, context=context
    )


def _received(sock: zmq.Socket, wait_ms: int | None) -> GazeTick | None:
    """The next tick, waiting at most ``wait_ms`` (None: without limit); None when none came."""
    if not sock.poll(wait_ms):
        return None
    payload = sock.recv_multipart()[1]
    return tick_from_message(msgpack.unpackb(payload, raw=False, strict_map_key=False))


def _wait(timeout: float | None) -> int | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a number of seconds > 0 (or None: wait forever), got {timeout!r}")
    return max(1, int(timeout * 1000))


def gaze_ticks(
    endpoint: str,
    *,
    timeout: float | None = 5.0,
    curve: tuple[str | Path, str | Path] | None = None,
    context: zmq.Context | None = None,
) -> Iterator[GazeTick]:
    """The relay's gaze ticks, one :class:`GazeTick` at a time, as they arrive.

    The socket is connected when this is called (a relay that starts later is reached when it
    appears), so subscribe before the ticks you want are published; it is closed when the
    generator ends or is closed.

    Parameters
    ----------
    endpoint : str
        The relay's sanitized address, e.g. ``tcp://127.0.0.1:5570``.
    timeout : float or None
        End after this many seconds without a tick (None: never).
    curve : (path, path), optional
        The relay's public certificate and this client's secret certificate (``zmq.auth``
        format), when the relay requires CURVE.
    context : zmq.Context, optional
        Default: the process's shared context.

    Yields
    ------
    GazeTick

    Raises
    ------
    InputError
        ``endpoint`` is not an address to connect to, a certificate cannot be read (at the call);
        a message on the topic is not a tick (when it comes).
    ValueError
        ``timeout`` is not a number > 0 or None.

    Examples
    --------
    A session publishing a recording's ticks on loopback (a seed: reproducible, for examples only):

    >>> import itertools
    >>> from streamdp.config import SessionConfig
    >>> from streamdp.network.sink import ReleasePublisher
    >>> from streamdp.session import Session
    >>> from streamdp.synthetic import generate
    >>> publisher = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    >>> ticks = gaze_ticks(publisher.endpoint, timeout=5.0)
    >>> publisher.wait_for_subscribers(1)
    True
    >>> rec = generate(duration=2.0, seed=1).recording
    >>> _ = Session.for_recording(SessionConfig(seed=0, gaze_channel=True), rec, sinks=[publisher]).run(rec)
    >>> first = list(itertools.islice(ticks, 3))
    >>> [tick.tick_index for tick in first], [round(tick.t * 60) for tick in first], first[0].deg.shape
    ([0, 1, 2], [60000, 60001, 60002], (2,))
    >>> ticks.close(); publisher.close()
    """
    wait = _wait(timeout)
    sock = _socket(endpoint, curve, context)

    def generate() -> Iterator[GazeTick]:
        try:
            while (tick := _received(sock, wait)) is not None:
                yield tick
        finally:
            sock.close(linger=0)

    return generate()


def _batch(ticks: list[GazeTick]) -> GazeTickBatch:
    return GazeTickBatch(
        t=np.array([k.t for k in ticks], dtype=np.float64),
        deg=np.array([k.deg for k in ticks], dtype=np.float64).reshape(-1, 2),
        norm=np.array([k.norm for k in ticks], dtype=np.float64).reshape(-1, 2),
        epsilon_tick_per_degree=np.array([k.epsilon_tick_per_degree for k in ticks], dtype=np.float64),
        tick_index=np.array([k.tick_index for k in ticks], dtype=np.int64),
    )


def gaze_tick_batches(
    endpoint: str,
    *,
    timeout: float | None = 5.0,
    curve: tuple[str | Path, str | Path] | None = None,
    context: zmq.Context | None = None,
    max_ticks: int = 10_000,
) -> Iterator[GazeTickBatch]:
    """The relay's gaze ticks as arrays: each batch holds every tick received since the previous
    one (at least one: it waits for the first, then takes what is queued without waiting, at most
    ``max_ticks``).

    Parameters are those of :func:`gaze_ticks`, and ``max_ticks``, the most ticks in one batch.

    Yields
    ------
    GazeTickBatch
        ``t`` (m,), ``deg`` (m, 2), ``norm`` (m, 2), ``epsilon_tick_per_degree`` (m,),
        ``tick_index`` (m,).

    Raises
    ------
    InputError, ValueError
        As :func:`gaze_ticks`; ``max_ticks`` below 1.

    Examples
    --------
    >>> from streamdp.config import SessionConfig
    >>> from streamdp.network.sink import ReleasePublisher
    >>> from streamdp.session import Session
    >>> from streamdp.synthetic import generate
    >>> publisher = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    >>> batches = gaze_tick_batches(publisher.endpoint, timeout=0.5)
    >>> publisher.wait_for_subscribers(1)
    True
    >>> rec = generate(duration=2.0, seed=1).recording
    >>> _ = Session.for_recording(SessionConfig(seed=0, gaze_channel=True), rec, sinks=[publisher]).run(rec)
    >>> got = list(batches)  # until 0.5 s passes without a tick
    >>> sum(len(b) for b in got), got[0].deg.shape[1], int(got[0].tick_index[0])
    (121, 2, 0)
    >>> publisher.close()
    """
    if isinstance(max_ticks, bool) or not isinstance(max_ticks, int) or max_ticks < 1:
        raise ValueError(f"max_ticks must be an int ≥ 1, got {max_ticks!r}")
    wait = _wait(timeout)
    sock = _socket(endpoint, curve, context)

    def generate() -> Iterator[GazeTickBatch]:
        try:
            while (tick := _received(sock, wait)) is not None:
                ticks = [tick]
                while len(ticks) < max_ticks and (tick := _received(sock, 0)) is not None:
                    ticks.append(tick)
                yield _batch(ticks)
        finally:
            sock.close(linger=0)

    return generate()
