"""Releases onto Capture's IPC backbone (``streamdp relay --to-backbone``)."""

from __future__ import annotations

import msgpack
import zmq

from ..privacy.release import PrivateRelease, check_sealed
from ..status import SessionStatus


class BackboneSink:
    """Releases onto Capture's IPC backbone (its ``PUB_PORT``), where apps on the backbone see
    them. Capture's recorder does not record what another process publishes: to record releases
    with a recording, run the Capture plugin instead."""

    def __init__(self) -> None:
        self._socket: zmq.Socket | None = None
        self._pack = msgpack.Packer(use_bin_type=True).pack

    def connect(self, context: zmq.Context, host: str, pub_port: int) -> None:
        self.close()
        sock = context.socket(zmq.PUB)
        sock.linger = 0
        sock.sndhwm = 1000
        sock.connect(f"tcp://{host}:{pub_port}")
        self._socket = sock

    def publish(self, release: PrivateRelease) -> None:
        check_sealed(release)
        if self._socket is not None:
            self._socket.send_multipart([release.topic.encode(), self._pack(release.to_message())])

    def publish_status(self, status: SessionStatus) -> None:
        if not isinstance(status, SessionStatus):
            raise TypeError(f"status must be a SessionStatus, got {type(status).__name__}")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close(linger=0)
            self._socket = None
