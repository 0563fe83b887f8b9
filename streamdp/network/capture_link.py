"""streamdp's Pupil Remote's side towards Capture: Capture's Pupil Remote (REQ), its backbone's
notifications (SUB on ``SUB_PORT``) and its ``PUB_PORT`` for what apps publish.

Owned by the facade's thread (:mod:`streamdp.network.pupil_remote`). Capture may be absent,
restart (a new ``SUB_PORT``) or stop answering; the link then reconnects on its own, checking
``SUB_PORT`` every ``heartbeat`` seconds, and a request it cannot forward is answered
:data:`NO_ANSWER`.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

import zmq

__all__ = ["NO_ANSWER", "CaptureLink"]

log = logging.getLogger(__name__)

#: the answer to an app whose request Capture did not answer in time
NO_ANSWER = "Capture did not answer."


class CaptureLink:
    """The sockets towards the Capture whose Pupil Remote is at ``remote``.

    Parameters
    ----------
    context : zmq.Context
    remote : str
        Capture's Pupil Remote (``tcp://127.0.0.1:50020`` by default; on loopback in a private
        deployment).
    timeout : float
        Seconds Capture has to answer a request.
    heartbeat : float
        Seconds between two checks of Capture's ``SUB_PORT`` (a restart moves it).
    """

    def __init__(self, context: zmq.Context, remote: str, *, timeout: float = 1.0, heartbeat: float = 2.0) -> None:
        self._ctx = context
        self.remote = remote
        self.host = urlsplit(remote).hostname or "127.0.0.1"
        self.timeout_ms = max(1, int(timeout * 1000))
        self.heartbeat = heartbeat
        self._req: zmq.Socket | None = None
        #: Capture's notifications (None until connected)
        self.notifications: zmq.Socket | None = None
        self._pub: zmq.Socket | None = None
        self.sub_port = 0
        self.checked_at = -float("inf")

    def request(self, frames: list[bytes]) -> str:
        """Send ``frames`` to Capture's Pupil Remote; its answer, or :data:`NO_ANSWER`."""
        if self._req is None:
            self._req = self._ctx.socket(zmq.REQ)
            self._req.linger = 0
            self._req.connect(self.remote)
        self._req.send_multipart(frames)
        if not self._req.poll(self.timeout_ms):
            self._req.close(linger=0)
            self._req = None  # a REQ socket that lost its answer cannot be reused
            return NO_ANSWER
        return self._req.recv_multipart()[0].decode("utf-8", "replace")

    def publish(self, frames: list[bytes]) -> bool:
        """Put an app's message on Capture's backbone (its ``PUB_PORT``); False when not connected."""
        if self._pub is None:
            return False
        self._pub.send_multipart(frames)
        return True

    def until_check(self) -> float:
        """Seconds until :meth:`check` looks at Capture's ports again."""
        return max(0.0, self.checked_at + self.heartbeat - time.monotonic())

    def check(self) -> bool:
        """Every ``heartbeat``: (re)connect to Capture's backbone when it is new or moved; returns
        whether the notification socket changed (the poller must be told)."""
        now = time.monotonic()
        if now - self.checked_at < self.heartbeat:
            return False
        self.checked_at = now
        answer = self.request([b"SUB_PORT"])
        if answer == NO_ANSWER or not answer.isdigit():
            return False
        if int(answer) == self.sub_port and self.notifications is not None:
            return False
        pub = self.request([b"PUB_PORT"])
        if not pub.isdigit():
            return False
        self._close_backbone()
        self.sub_port = int(answer)
        sub = self._ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"tcp://{self.host}:{self.sub_port}")
        sub.setsockopt(zmq.SUBSCRIBE, b"notify.")
        self.notifications = sub
        self._pub = self._ctx.socket(zmq.PUB)
        self._pub.linger = 0
        self._pub.connect(f"tcp://{self.host}:{int(pub)}")
        log.info("streamdp's Pupil Remote: Capture's backbone at SUB_PORT %d, PUB_PORT %s", self.sub_port, pub)
        return True

    def _close_backbone(self) -> None:
        for s in (self.notifications, self._pub):
            if s is not None:
                s.close(linger=0)
        self.notifications = self._pub = None

    def close(self) -> None:
        self._close_backbone()
        if self._req is not None:
            self._req.close(linger=0)
            self._req = None
