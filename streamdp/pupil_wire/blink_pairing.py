"""Capture's blink datums paired into whole blinks (Player's rule)."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import InputError
from .datum_fields import _number


class BlinkPairing:
    """Whole blinks from Capture's ``onset``/``offset`` datums (topic ``blinks``), by Player's rule.

    Capture's detector re-publishes an ``onset`` every world frame while its filter fires, then
    an ``offset`` every frame while the filter fires the other way (timestamp: the middle of the
    filter's history). One blink runs from the first onset after an offset (or the stream's start)
    to the last offset of the run that follows; repeated onsets are ignored and an offset without
    an onset is dropped. The last offset is only known when the next onset comes, so a finished
    blink is held until then: :meth:`add` returns it at that onset, :meth:`flush` at the end of the
    stream. Player's whole blinks (``start_timestamp``/``end_timestamp``) pass straight through.

    Raises
    ------
    InputError
        From :meth:`add`: a datum that is not a dict or whose times are not finite numbers.

    Examples
    --------
    >>> p = BlinkPairing()
    >>> [p.add({"type": k, "timestamp": t}, "d") for k, t in [("onset", 1.0), ("onset", 1.03), ("offset", 1.2)]]
    [None, None, None]
    >>> p.add({"type": "offset", "timestamp": 1.23}, "d"), p.flush(), p.flush()
    (None, (1.0, 1.23), None)
    """

    def __init__(self) -> None:
        self.onset: float | None = None
        self.offset: float | None = None

    def add(self, datum: object, where: str) -> tuple[float, float] | None:
        if not isinstance(datum, Mapping):
            raise InputError(f"{where}: a {type(datum).__name__}, not a blink datum")
        if "start_timestamp" in datum and "end_timestamp" in datum:
            return (
                _number(datum["start_timestamp"], where, "start_timestamp"),
                _number(datum["end_timestamp"], where, "end_timestamp"),
            )
        t = _number(datum.get("timestamp"), where, "timestamp")
        kind = datum.get("type")
        if kind == "onset":
            finished = self.flush() if self.offset is not None else None
            if self.onset is None:
                self.onset = t
            return finished
        if kind == "offset" and self.onset is not None:
            self.offset = t
        return None

    def flush(self) -> tuple[float, float] | None:
        """The blink held for a later offset, now final (end of stream), or None; an onset that
        no offset followed is dropped."""
        onset, offset = self.onset, self.offset
        self.onset = self.offset = None
        if onset is None or offset is None:
            return None
        return onset, offset
