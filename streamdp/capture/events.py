"""The Capture plugin's chunks as Capture ``events``, and its settings as a session configuration."""

from __future__ import annotations

from typing import Any

from ..config import SessionConfig
from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus, check_status
from .endpoint import EndpointSettings

__all__ = ["ENDPOINT_SETTINGS", "CaptureEventsSink", "session_config"]

#: the plugin settings that configure its endpoint, not its session
ENDPOINT_SETTINGS = EndpointSettings.names()


class CaptureEventsSink:
    """A release sink whose releases become Capture ``events`` datums.

    :meth:`publish` keeps each sealed release as its message with a ``timestamp`` added: Capture's
    recorder writes every datum of ``events`` with ``PLData_Writer``, which needs one (without it
    the world process crashes while recording). The timestamp is the chunk's last step time,
    already public in ``t``. :meth:`take` hands the pending datums to the plugin once per frame.

    Raises
    ------
    TypeError
        :meth:`publish` is given anything but a sealed release, or :meth:`publish_status`
        anything but a :class:`~streamdp.status.SessionStatus`.
    RuntimeError
        Something is published after :meth:`close`.
    """

    def __init__(self) -> None:
        self._pending: list[dict[str, Any]] = []
        #: the latest status; local to this process (counters are raw functions of the gaze)
        self.last_status: SessionStatus | None = None
        self.closed = False

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        self._check_open()
        datum = release.to_message()
        datum["timestamp"] = datum["t"][-1]
        self._pending.append(datum)

    def publish_status(self, status: SessionStatus) -> None:
        check_status(status)
        self._check_open()
        self.last_status = status

    def take(self) -> list[dict[str, Any]]:
        """The datums published since the last call, in release order."""
        out, self._pending = self._pending, []
        return out

    def close(self) -> None:
        self.closed = True
        self._pending = []

    def _check_open(self) -> None:
        if self.closed:
            raise RuntimeError("this CaptureEventsSink is closed: nothing more is published")


def session_config(settings: dict[str, Any]) -> SessionConfig:
    """The plugin's settings as a :class:`SessionConfig` (``blinks_from_capture`` is its
    ``blinks="given"``; every other setting is the field of the same name).

    Raises
    ------
    TypeError, ValueError
        A setting that is unknown, of the wrong type or out of range, named with its value.
    """
    fields = {k: v for k, v in settings.items() if k != "blinks_from_capture" and k not in ENDPOINT_SETTINGS}
    fields["blinks"] = "given" if settings.get("blinks_from_capture") else "confidence"
    return SessionConfig(**fields).check()
