"""The relay's network sinks: sanitized chunks for subscribers, status for the device owner.

:class:`ReleasePublisher` is a :class:`~streamdp.sinks.ReleaseSink` whose socket carries only
what is public or noised: :meth:`~ReleasePublisher.publish` takes only a sealed
:class:`~streamdp.privacy.release.PrivateRelease` and sends its
:meth:`~streamdp.privacy.release.PrivateRelease.to_message`. It sends no status: the counters
(invalid, late, dropped steps, restarts…) and the clip rate are raw functions of the gaze. Raw
gaze, pupil data, unsanitized features and counters have no way onto it. It binds to 127.0.0.1
by default; any other interface requires ZeroMQ CURVE (encryption and client authentication
against a folder of allowed client public keys), unless ``insecure=True`` is asked for explicitly.

:class:`StatusPublisher` is the device owner's status socket: a separate port, bound to a
loopback address only (anything else is refused), publishing each
:class:`~streamdp.status.SessionStatus` on ``streamdp.status``.

The sockets' rules live beside this module: where each may listen in :mod:`streamdp.network.endpoint_checks`,
binding in :mod:`streamdp.network.binding`, CURVE certificates in :mod:`streamdp.network.curve`.
"""

from __future__ import annotations

import logging
import time

import msgpack
import zmq
from zmq.auth.thread import ThreadAuthenticator

from ..privacy.release import PrivateRelease, check_sealed
from ..stages.privatizer import CRYPTOGRAPHIC, GENERATOR_KEY
from ..status import SessionStatus, check_status
from .binding import bind, bind_error
from .curve import CurveServer, read_certificate
from .endpoint_checks import check_release_endpoint, check_status_endpoint
from .subscriptions import Subscriptions

#: the publishers and the sockets' rules they are built from, importable from here as before
__all__ = [
    "DEFAULT_STATUS_ENDPOINT",
    "STATUS_TOPIC",
    "CurveServer",
    "ReleasePublisher",
    "StatusPublisher",
    "bind",
    "bind_error",
    "check_private_noise",
    "check_release_endpoint",
    "check_status_endpoint",
    "read_certificate",
]

log = logging.getLogger(__name__)

STATUS_TOPIC = "streamdp.status"
#: the owner's status socket when none is named: the sanitized socket's port + 1, loopback
DEFAULT_STATUS_ENDPOINT = "tcp://127.0.0.1:5571"


def check_private_noise(release: PrivateRelease, reproducible_allowed: bool) -> None:
    """Refuse ``release`` on a network sink when its noise is seeded (whoever knows the seed
    removes it), unless ``reproducible_allowed`` (tests and demos on loopback).

    Raises
    ------
    ValueError
        Its ledger says the noise is not from the OS CSPRNG.
    """
    if release.ledger.get(GENERATOR_KEY) != CRYPTOGRAPHIC and not reproducible_allowed:
        raise ValueError(
            f"chunk {release.ledger.get('chunk_index')}: its noise is {release.ledger.get(GENERATOR_KEY)!r} "
            "(seeded: not cryptographic); a network sink publishes only noise from the OS CSPRNG "
            "(streamdp.privacy.secure_generator() without a seed)"
        )


class StatusPublisher:
    """The device owner's status socket: a PUB socket on a loopback address only, publishing
    each :class:`~streamdp.status.SessionStatus` on ``streamdp.status`` (a
    :class:`~streamdp.sinks.ReleaseSink`; releases go to the sanitized socket, so
    :meth:`publish` checks one and sends nothing).

    Raises
    ------
    ValueError
        ``endpoint`` is not on a loopback address (127.0.0.1, ::1) or IPC: the counters and the
        clip rate are raw functions of the gaze and never leave the device.
    InputError
        ``endpoint`` cannot be bound (in use, not a ZeroMQ address).

    Examples
    --------
    >>> StatusPublisher("tcp://0.0.0.0:5571")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: status endpoint must be on a loopback address (...) or ipc://, got 'tcp://0.0.0.0:5571': ...
    >>> status = StatusPublisher("tcp://127.0.0.1:0")
    >>> status.endpoint.startswith("tcp://127.0.0.1:")
    True
    >>> status.publish_status(SessionStatus(mechanism="dcfpa", invalid=3))
    >>> status.close()
    """

    def __init__(self, endpoint: str = DEFAULT_STATUS_ENDPOINT, *, context: zmq.Context | None = None) -> None:
        check_status_endpoint(endpoint)
        self._socket = (context or zmq.Context.instance()).socket(zmq.PUB)
        self._socket.linger = 0
        self._socket.sndhwm = 100
        try:
            self.endpoint = bind(self._socket, endpoint)
        except BaseException:
            self._socket.close(linger=0)
            raise
        self._pack = msgpack.Packer(use_bin_type=True).pack
        self.closed = False

    def publish(self, release: PrivateRelease) -> None:
        """Check ``release`` and send nothing: releases belong on the sanitized socket.

        Raises
        ------
        TypeError
            ``release`` is not a genuine, unmodified release.
        """
        check_sealed(release)

    def publish_status(self, status: SessionStatus) -> None:
        """Publish one status on ``streamdp.status``.

        Raises
        ------
        TypeError
            ``status`` is not a :class:`~streamdp.status.SessionStatus`.
        RuntimeError
            The publisher is closed.
        """
        check_status(status)
        if self.closed:
            raise RuntimeError("this StatusPublisher is closed: nothing more is published")
        self._socket.send_multipart([STATUS_TOPIC.encode(), self._pack(status.to_message())])

    def close(self) -> None:
        """Close the socket, dropping what is unsent."""
        self.closed = True
        self._socket.close(linger=0)


class ReleasePublisher:
    """A PUB socket that publishes sanitized chunks on ``streamdp.features.<mechanism>`` (a
    :class:`~streamdp.sinks.ReleaseSink`); status is never sent on it (see
    :class:`StatusPublisher`).

    Slow subscribers never cost unbounded memory: ZeroMQ drops messages for a subscriber whose
    queue holds ``sndhwm`` of them, and a vanished subscriber costs nothing. A release of a topic
    nobody subscribes to is checked as any other, then neither packed nor sent (what ZeroMQ would
    drop): a relay whose apps all listen elsewhere (streamdp's Pupil Remote) pays nothing here.

    Only noise drawn from the OS CSPRNG goes out: a release whose ledger says its noise is
    "reproducible, not private" (a seeded source: whoever knows the seed removes the noise) is
    refused unless ``publish_reproducible_noise_not_private`` is set, for tests and demos on
    loopback.

    Raises
    ------
    InputError
        ``endpoint`` is not loopback and neither CURVE nor ``insecure`` was given; it cannot be
        bound (in use, not an address of this machine, not a ZeroMQ address); a CURVE
        certificate or the clients folder cannot be read.

    Examples
    --------
    >>> sink = ReleasePublisher("tcp://127.0.0.1:0")
    >>> sink.publish_status({"released": 1})
    Traceback (most recent call last):
    ...
    TypeError: status may hold only counters: give a SessionStatus, got dict
    >>> sink.wait_for_subscribers(1, timeout=0.01)
    False
    >>> sink.close()
    """

    #: the gaze channel's ticks go out here too, on ``streamdp.gaze.<mechanism>``
    accepts_gaze = True

    def __init__(
        self,
        endpoint: str = "tcp://127.0.0.1:5570",
        *,
        curve: CurveServer | None = None,
        insecure: bool = False,
        sndhwm: int = 1000,
        context: zmq.Context | None = None,
        publish_reproducible_noise_not_private: bool = False,
    ) -> None:
        if not isinstance(publish_reproducible_noise_not_private, bool):
            raise TypeError(
                "publish_reproducible_noise_not_private must be a bool, "
                f"got {publish_reproducible_noise_not_private!r}"
            )
        self.publish_reproducible_noise_not_private = publish_reproducible_noise_not_private
        # read before anything is started: a bad certificate leaves nothing running
        keys = check_release_endpoint(endpoint, curve=curve, insecure=insecure)
        ctx = context or zmq.Context.instance()
        self._auth: ThreadAuthenticator | None = None
        self._socket = ctx.socket(zmq.XPUB)
        self._socket.linger = 0
        self._subscriptions = Subscriptions(self._socket)  # before a subscriber can connect
        self._socket.sndhwm = sndhwm
        try:
            if curve is not None and keys is not None:
                self._auth = ThreadAuthenticator(ctx)
                self._auth.start()
                self._auth.configure_curve(domain="*", location=str(curve.clients_dir))
                self._socket.curve_publickey, self._socket.curve_secretkey = keys
                self._socket.curve_server = True
            self.endpoint = bind(self._socket, endpoint)
        except BaseException:
            self.close()
            raise
        self._pack = msgpack.Packer(use_bin_type=True).pack

    @property
    def subscriptions(self) -> int:
        """Live subscriptions as last read (:meth:`poll_subscriptions`)."""
        return self._subscriptions.count

    def poll_subscriptions(self) -> int:
        """Read pending (un)subscription frames; returns the number of live subscriptions: one
        per subscriber and topic prefix it subscribed to (a subscriber that leaves takes its
        subscriptions with it; a CURVE client that was refused never subscribed)."""
        return self._subscriptions.read()

    def wait_for_subscribers(self, count: int = 1, timeout: float = 5.0) -> bool:
        """Wait until ``count`` subscriptions are live or ``timeout`` seconds pass, reading
        subscription frames as they arrive; returns whether ``count`` was reached.

        Raises
        ------
        TypeError, ValueError
            ``count`` is not an int ≥ 1, or ``timeout`` is not a number ≥ 0.
        """
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count must be an int, got {count!r}")
        if count < 1:
            raise ValueError(f"count must be ≥ 1, got {count!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            raise TypeError(f"timeout must be a number of seconds, got {timeout!r}")
        if not timeout >= 0:
            raise ValueError(f"timeout must be ≥ 0 seconds, got {timeout!r}")
        deadline = time.monotonic() + timeout
        while self.poll_subscriptions() < count:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._socket.poll(max(1, int(left * 1000)), zmq.POLLIN)
        return True

    def publish(self, release: PrivateRelease) -> None:
        """Publish one sealed release on its topic.

        Raises
        ------
        TypeError
            ``release`` is not a genuine, unmodified :class:`~streamdp.privacy.release.PrivateRelease`.
        ValueError
            Its noise is reproducible, not private (a seeded source), and
            ``publish_reproducible_noise_not_private`` was not set.
        """
        check_sealed(release)
        check_private_noise(release, self.publish_reproducible_noise_not_private)
        if not self._subscriptions.listened(release.topic):
            return  # what ZeroMQ would drop is neither built nor packed (most of a tick's cost)
        # two sends, not send_multipart: 1 us a message instead of 3 (the gaze channel sends 60 a second)
        self._socket.send(release.topic.encode(), zmq.SNDMORE)
        self._socket.send(self._pack(release.to_message()))

    def publish_status(self, status: SessionStatus) -> None:
        """Check ``status`` and send nothing: its counters are raw functions of the gaze, for
        the owner's :class:`StatusPublisher` only.

        Raises
        ------
        TypeError
            ``status`` is not a :class:`~streamdp.status.SessionStatus`.
        """
        check_status(status)

    def close(self) -> None:
        """Close the socket (dropping what is unsent) and stop CURVE's authenticator."""
        self._socket.close(linger=0)
        if self._auth is not None:
            self._auth.stop()
            self._auth = None
