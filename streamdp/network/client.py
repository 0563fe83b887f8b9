"""An app's client for the sanitized socket: typed releases, the schema checked, reconnecting, with
timeouts, blocking or ``asyncio``.

:class:`Subscriber` (and :class:`AsyncSubscriber`, on ``zmq.asyncio``) connects a SUB socket to the
relay (:func:`~streamdp.network.subscriber.connect_subscriber`, with CURVE when the relay requires
it) and yields one :class:`ReceivedRelease` per message: step times and values as read-only NumPy
arrays, the feature names, the topic and the public ledger. Each message's ``schema_version`` is
checked: one this streamdp does not know is refused with :class:`SchemaMismatch` rather than
read wrongly. The wire format is documented field by field in ``docs/wire-format.md``.

Reconnecting is ZeroMQ's own: when the relay restarts (on the same address) the socket connects
again and resubscribes (ZeroMQ resends the subscriptions when the socket is next used, as it is
while an app waits in :meth:`Subscriber.receive`); what was published while it was away is lost. A subscriber may
also start before the relay. For the gaze channel's ticks as positions,
:mod:`streamdp.network.gaze_client` has :func:`~streamdp.network.gaze_client.gaze_ticks`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import EllipsisType, MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any

import msgpack
import numpy as np
import zmq
import zmq.asyncio
from numpy.typing import NDArray

from ..errors import InputError
from ..frame_columns import pandas_module
from ..schema import SCHEMA_VERSION
from .gaze_client import _wait
from .subscriber import connect_subscriber

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FEATURES_TOPIC", "KNOWN_SCHEMA_VERSIONS", "AsyncSubscriber", "ReceivedRelease", "SchemaMismatch",
           "Subscriber", "release_from_message"]  # fmt: skip

#: the topic prefix of the sanitized feature chunks (``streamdp.gaze.`` is the gaze channel's)
FEATURES_TOPIC = "streamdp.features."
#: the schema versions this client reads
KNOWN_SCHEMA_VERSIONS = frozenset({SCHEMA_VERSION})

Curve = tuple[str | Path, str | Path]


class SchemaMismatch(InputError):
    """A message's ``schema_version`` is not one this streamdp knows: the relay is newer (or
    older) than this client; upgrade the one that is behind."""


@dataclass(frozen=True)
class ReceivedRelease:
    """One sanitized release as a subscriber receives it.

    Attributes
    ----------
    topic : str
        ``streamdp.features.<mechanism>`` (a chunk) or ``streamdp.gaze.<mechanism>`` (a tick).
    t : ndarray, shape (n,)
        Step times on the source's clock (Pupil time), read-only.
    values : ndarray, shape (n, F)
        The sanitized values, a column per name, read-only.
    names : tuple of str
        The F feature (or gaze channel) names.
    ledger : mapping
        The public ledger entry (read-only): mechanism, ε per chunk and spent, the guarantee…
    schema_version : int
        The message's schema version (one of :data:`KNOWN_SCHEMA_VERSIONS`).
    """

    topic: str
    t: NDArray[np.float64]
    values: NDArray[np.float64]
    names: tuple[str, ...]
    ledger: Mapping[str, Any]
    schema_version: int

    @property
    def channel(self) -> str:
        """``features`` or ``gaze``: the topic's second part."""
        return self.topic.split(".")[1]

    @property
    def mechanism(self) -> str:
        """The mechanism that sanitized it (the topic's last part)."""
        return self.topic.split(".", 2)[2]

    def to_pandas(self) -> pd.DataFrame:
        """A DataFrame: ``chunk_index`` (chunks only), ``t`` and a column per name, a row per step.

        Raises
        ------
        ImportError
            pandas is not installed (the ``pandas`` extra).
        """
        pd = pandas_module()
        df = pd.DataFrame(self.values, columns=list(self.names))
        df.insert(0, "t", self.t)
        if "chunk_index" in self.ledger:
            df.insert(0, "chunk_index", np.full(len(self.t), int(self.ledger["chunk_index"]), dtype=np.int64))
        return df


def _frozen(a: NDArray[np.float64]) -> NDArray[np.float64]:
    a.setflags(write=False)
    return a


def release_from_message(message: Any, topic: str | None = None) -> ReceivedRelease:
    """The :class:`ReceivedRelease` of one decoded message (its ``topic`` field unless given).

    Raises
    ------
    SchemaMismatch
        Its ``schema_version`` is not one of :data:`KNOWN_SCHEMA_VERSIONS`.
    InputError
        It is not a release (a field missing, of the wrong type, or shapes that disagree).

    Examples
    --------
    >>> rel = release_from_message({"topic": "streamdp.features.dcfpa", "schema_version": 1,
    ...     "names": ["a", "b"], "t": [1.0, 1.5], "values": [[0.1, 0.2], [0.3, 0.4]], "ledger": {"chunk_index": 0}})
    >>> rel.values.shape, rel.mechanism, rel.channel, rel.values.flags.writeable
    ((2, 2), 'dcfpa', 'features', False)
    >>> release_from_message({"schema_version": 99})
    Traceback (most recent call last):
    ...
    streamdp.network.client.SchemaMismatch: the message has schema_version 99; this streamdp reads 1: upgrade the side that is behind (pip install -U streamdp)
    """  # noqa: E501
    if not isinstance(message, Mapping):
        raise InputError(f"not a release: a {type(message).__name__}, a release is a map")
    version = message.get("schema_version")
    if type(version) is not int or version not in KNOWN_SCHEMA_VERSIONS:
        known = ", ".join(str(v) for v in sorted(KNOWN_SCHEMA_VERSIONS))
        raise SchemaMismatch(
            f"the message has schema_version {version!r}; this streamdp reads {known}: "
            "upgrade the side that is behind (pip install -U streamdp)"
        )
    try:
        topic = str(message["topic"]) if topic is None else topic
        if not topic.startswith("streamdp.") or topic.count(".") < 2:
            raise InputError(f"not a release: topic {topic!r} is not streamdp.<channel>.<mechanism>")
        names = tuple(message["names"])
        if not all(type(n) is str for n in names):
            raise InputError("not a release: its names are not all strings")
        t = np.array(message["t"], dtype=np.float64)
        values = np.array(message["values"], dtype=np.float64).reshape(len(t), len(names))
        ledger = message["ledger"]
        if t.ndim != 1 or not isinstance(ledger, Mapping):
            raise InputError("not a release: t must be a list of times and ledger a map")
    except InputError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"not a release: {type(exc).__name__}: {exc}") from None
    return ReceivedRelease(topic, _frozen(t), _frozen(values), names, MappingProxyType(dict(ledger)), version)


def _decode(frames: Sequence[bytes]) -> ReceivedRelease:
    if len(frames) < 2:
        raise InputError(f"not a release: {len(frames)} frame(s), a release has the topic and a payload")
    try:
        message = msgpack.unpackb(frames[1], raw=False, strict_map_key=False)
    except (ValueError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as exc:
        raise InputError(f"not a release: the payload is not msgpack ({type(exc).__name__})") from None
    return release_from_message(message, frames[0].decode("utf-8", errors="replace"))


class _Base:
    """What both subscribers share: arguments checked, the socket made by ``connect_subscriber``."""

    _sock: Any

    def __init__(
        self,
        endpoint: str,
        *,
        topics: Sequence[str] = (FEATURES_TOPIC,),
        curve: Curve | None = None,
        timeout: float | None = 5.0,
        context: zmq.Context | None = None,
        rcvhwm: int | None = None,
    ) -> None:
        if isinstance(topics, str) or not all(isinstance(t, str) for t in topics) or not topics:
            raise TypeError(f"topics must be a non-empty sequence of topic prefixes (str), got {topics!r}")
        if curve is not None and (not isinstance(curve, (tuple, list)) or len(curve) != 2):
            raise TypeError(f"curve must be (the relay's public certificate, this client's secret one), got {curve!r}")
        self._wait = _wait(timeout)
        self.timeout = timeout
        self.endpoint = endpoint
        self.topics = tuple(topics)
        server, client = (Path(curve[0]), Path(curve[1])) if curve is not None else (None, None)
        self._sock = connect_subscriber(
            endpoint,
            self.topics,
            server_public_key=server,
            client_certificate=client,
            context=self._context(context),
            rcvhwm=rcvhwm,
        )
        self.closed = False

    def _context(self, context: zmq.Context | None) -> zmq.Context:
        return context or zmq.Context.instance()

    def _wait_ms(self, timeout: float | EllipsisType | None) -> int | None:
        return self._wait if isinstance(timeout, EllipsisType) else _wait(timeout)

    def close(self) -> None:
        """Close the socket, dropping what is queued; closing twice is harmless."""
        self.closed = True
        self._sock.close(linger=0)


class Subscriber(_Base):
    """Sanitized releases from a streamdp relay, one :class:`ReceivedRelease` at a time.

    Iterating yields releases as they arrive and ends after ``timeout`` seconds without one (never,
    with ``timeout=None``); :meth:`receive` takes one, raising :class:`TimeoutError` instead. The
    socket connects at construction, so releases published from then on are received; a relay that
    restarts is reconnected to by ZeroMQ (what it published meanwhile is lost).

    Parameters
    ----------
    endpoint : str
        The relay's sanitized address, e.g. ``tcp://127.0.0.1:5570``.
    topics : sequence of str
        Topic prefixes: ``streamdp.features.`` (every mechanism's chunks, the default),
        ``streamdp.features.dcfpa`` (one mechanism's), ``streamdp.gaze.`` (the gaze channel's ticks).
    curve : (path, path), optional
        The relay's public certificate and this client's secret certificate (``zmq.auth`` format),
        when the relay requires CURVE.
    timeout : float or None
        Seconds without a release after which iteration ends (None: never).
    context : zmq.Context, optional
        Default: the process's shared context.
    rcvhwm : int, optional
        Releases queued before ZeroMQ drops (default ZeroMQ's, 1000).

    Raises
    ------
    InputError
        ``endpoint`` is not an address to connect to, or a certificate cannot be read.
    TypeError, ValueError
        ``topics``, ``curve`` or ``timeout`` is malformed.

    Examples
    --------
    >>> from streamdp.config import SessionConfig
    >>> from streamdp.network.sink import ReleasePublisher
    >>> from streamdp.session import Session
    >>> from streamdp.synthetic import generate
    >>> publisher = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    >>> recording = generate(duration=60.0, seed=1).recording
    >>> with Subscriber(publisher.endpoint, timeout=0.5) as sub:
    ...     assert publisher.wait_for_subscribers(1)
    ...     _ = Session(SessionConfig(chunk_length=16, seed=0), sinks=[publisher]).run(recording)
    ...     got = list(sub)  # until 0.5 s pass without a release
    >>> publisher.close()
    >>> len(got), got[0].values.shape, got[0].ledger["mechanism"]
    (3, (16, 52), 'dcfpa')
    """

    def receive(self, timeout: float | EllipsisType | None = ...) -> ReceivedRelease:
        """The next release, waiting at most ``timeout`` seconds (default: the subscriber's; None:
        without limit).

        Raises
        ------
        TimeoutError
            None arrived in time.
        SchemaMismatch
            It has a schema version this streamdp does not know.
        InputError
            What arrived is not a release.
        RuntimeError
            The subscriber is closed.
        """
        if self.closed:
            raise RuntimeError("this Subscriber is closed")
        wait = self._wait_ms(timeout)
        if not self._sock.poll(wait):
            raise TimeoutError(f"no release from {self.endpoint} in {wait / 1000 if wait else 0:g} s")
        return _decode(self._sock.recv_multipart())

    def __iter__(self) -> Iterator[ReceivedRelease]:
        while True:
            try:
                yield self.receive()
            except TimeoutError:
                return

    def __enter__(self) -> Subscriber:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class AsyncSubscriber(_Base):
    """:class:`Subscriber` for ``asyncio`` (``zmq.asyncio``): ``await sub.receive()``, ``async for``.

    Parameters and errors are :class:`Subscriber`'s; ``context`` is a plain ``zmq.Context`` (shadowed
    for asyncio; default the process's shared one).

    Examples
    --------
    >>> import asyncio
    >>> async def first(endpoint):
    ...     async with AsyncSubscriber(endpoint, timeout=0.1) as sub:
    ...         return [rel async for rel in sub]
    >>> from streamdp.network.sink import ReleasePublisher
    >>> publisher = ReleasePublisher("tcp://127.0.0.1:0")
    >>> asyncio.run(first(publisher.endpoint))  # nothing is published: it ends after 0.1 s
    []
    >>> publisher.close()
    """

    def _context(self, context: zmq.Context | None) -> zmq.Context:
        # a shadow shares the context's I/O threads: no second context to terminate
        return zmq.asyncio.Context.shadow(context or zmq.Context.instance())

    async def receive(self, timeout: float | EllipsisType | None = ...) -> ReceivedRelease:
        """The next release, awaiting it at most ``timeout`` seconds (as :meth:`Subscriber.receive`).

        Raises
        ------
        TimeoutError, SchemaMismatch, InputError, RuntimeError
            As :meth:`Subscriber.receive`.
        """
        if self.closed:
            raise RuntimeError("this AsyncSubscriber is closed")
        wait = self._wait_ms(timeout)
        if not await self._sock.poll(wait):
            raise TimeoutError(f"no release from {self.endpoint} in {wait / 1000 if wait else 0:g} s")
        return _decode(await self._sock.recv_multipart())

    async def __aiter__(self) -> AsyncIterator[ReceivedRelease]:
        while True:
            try:
                yield await self.receive()
            except TimeoutError:
                return

    async def __aenter__(self) -> AsyncSubscriber:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
