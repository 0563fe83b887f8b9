"""Where releases go: one protocol for every sink, and a sink that keeps them in memory.

Every sink (the ZeroMQ publisher, Capture events, a file, stdout, memory) implements
:class:`ReleaseSink` and checks each argument first: :meth:`~ReleaseSink.publish` takes only a
sealed :class:`~streamdp.privacy.release.PrivateRelease` (:func:`check_sealed`),
:meth:`~ReleaseSink.publish_status` only a :class:`~streamdp.status.SessionStatus`
(:func:`check_status`); anything else raises TypeError before it reaches the sink's output.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from .privacy.release import PrivateRelease, check_sealed
from .status import SessionStatus, check_status


@runtime_checkable
class ReleaseSink(Protocol):
    """What the session hands its releases and status to."""

    def publish(self, release: PrivateRelease) -> None:
        """Send one release on. Raises TypeError unless it is a genuine, unmodified release."""

    def publish_status(self, status: SessionStatus) -> None:
        """Send one status on. Raises TypeError unless it is a :class:`SessionStatus`."""

    def close(self) -> None:
        """Release the sink's resources; nothing is published afterwards."""


class CollectingSink:
    """A :class:`ReleaseSink` that keeps what it is given in ``releases`` and ``statuses``; with
    ``accepts_gaze``, the gaze channel's ticks too, in ``ticks``.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, or :meth:`publish_status`
        anything but a :class:`SessionStatus`.
    RuntimeError
        Something is published after :meth:`close`.

    Examples
    --------
    >>> sink = CollectingSink()
    >>> sink.publish_status(SessionStatus(mechanism="dcfpa"))
    >>> sink.publish({"values": [[0.5]]})
    Traceback (most recent call last):
    ...
    TypeError: only a PrivateRelease can be published, got dict
    >>> len(sink.releases), sink.statuses[0].event.value
    (0, 'running')
    """

    def __init__(self, *, accepts_gaze: bool = False) -> None:
        #: whether the session hands it the gaze channel's ticks
        self.accepts_gaze = bool(accepts_gaze)
        self.ticks: list[PrivateRelease] = []
        self.releases: list[PrivateRelease] = []
        self.statuses: list[SessionStatus] = []
        self.closed = False

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        self._check_open()
        (self.ticks if release.ledger.get("channel") == "gaze" else self.releases).append(release)

    def publish_status(self, status: SessionStatus) -> None:
        check_status(status)
        self._check_open()
        self.statuses.append(status)

    def close(self) -> None:
        self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this CollectingSink is closed: nothing more is collected")

    def __repr__(self) -> str:
        return f"CollectingSink({len(self.releases)} releases, {len(self.statuses)} statuses)"
