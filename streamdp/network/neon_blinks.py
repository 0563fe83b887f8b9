"""Blinks from confidence for a Neon session whose device stopped sending eye events.

A Neon session takes its blinks from the device's eye events (``blinks="given"``), because Neon's
confidence is 1 whenever the glasses are worn. When the eye-event stream fails, the Neon relay
falls back to :class:`ConfidenceBlinks`: the session's own event detector, with the session's
thresholds and public blocks but ``blink_source="confidence"``, run on the gaze the relay decodes;
its blinks are handed to the session as the given ones. So the blink features keep one public
rule (Pupil's confidence step filter, each blink inside one public block) instead of reading as
no blinks at all; on Neon they find only the worn flag's drops.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..gaze import BlinkEvents, GazeColumns
from ..session import Session
from ..stages.events import EventDetector


class ConfidenceBlinks:
    """The blinks a confidence-based detector finds in a session's decoded gaze.

    Parameters
    ----------
    session : Session
        Its configuration gives the thresholds, the scene camera and the public blocks
        (``max_event_duration``).

    Raises
    ------
    TypeError
        ``session`` is not a :class:`~streamdp.session.Session`.

    Examples
    --------
    >>> from streamdp.config import SessionConfig
    >>> blinks = ConfidenceBlinks(Session(SessionConfig(blinks="given"), camera="neon"))
    >>> t = 1000.0 + np.arange(400) / 200.0  # 2 s at 200 Hz, the eye closed for 0.2 s at 1001 s
    >>> conf = np.where((t >= 1001.0) & (t < 1001.2), 0.0, 1.0)
    >>> cols = GazeColumns.from_arrays(t=t, x=np.full(400, 0.5), y=np.full(400, 0.5), confidence=conf,
    ...     diameter_mm=np.full(400, 3.0), diameter_px=np.full(400, np.nan), eye_id=np.full(400, 2),
    ...     valid=conf > 0)
    >>> found = blinks.update(cols)
    >>> len(found.start), bool(1000.9 < found.start[0] < 1001.1)
    (1, True)
    """

    def __init__(self, session: Session) -> None:
        if not isinstance(session, Session):
            raise TypeError(f"session must be a Session, got {type(session).__name__}")
        config = session.config
        events = dataclasses.replace(config.event_config(session.camera), blink_source="confidence")
        self._detector = EventDetector(events, max_event_duration=config.max_event_duration)
        self._newest = -np.inf
        self._source = f"{session.source} (blinks from confidence)"

    def update(self, cols: GazeColumns) -> BlinkEvents:
        """The blinks finished by ``cols`` (arrival order; rows older than the newest seen are
        left out here, as the session counts them late)."""
        order = np.argsort(cols.t, kind="stable")
        order = order[cols.t[order] >= self._newest]
        if not len(order):
            return BlinkEvents(np.empty(0), np.empty(0))
        batch = cols.take(order).to_batch("none", self._source)
        self._newest = float(batch.t[-1])
        return self._detector.update(batch).blinks

    def reset(self) -> None:
        """The source's clock went back (the session restarted): start afresh."""
        self._detector.reset()
        self._newest = -np.inf
