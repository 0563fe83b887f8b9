"""A session's status as a typed record: counters, the budget, and one event from a fixed set.

The counters and the clip rate are raw functions of the gaze (how many samples were invalid or
late, whether a gap restarted the windows, how much was clipped): a status stays on the device.
It goes to logs, Capture's menu and the owner's loopback-only status socket
(:class:`~streamdp.network.sink.StatusPublisher`), never onto the sanitized socket. It has no
free-text field: whatever a sink sends is one of these typed fields, checked when the record is
made and again when a reader decodes it.

Examples
--------
>>> s = SessionStatus(mechanism="dcfpa", released=3, epsilon_spent=156.0)
>>> s.to_message()["event"], SessionStatus.from_message(s.to_message()) == s
('running', True)
>>> SessionStatus(mechanism="dcfpa", released=True)
Traceback (most recent call last):
...
TypeError: SessionStatus.released must be an int, got True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

from .errors import InputError
from .privacy.mechanisms import MECHANISMS

#: the names a status may carry in ``mechanism``: the mechanism registry's
MECHANISM_NAMES: frozenset[str] = frozenset(MECHANISMS)


class StatusEvent(Enum):
    """Why a status was sent."""

    RUNNING = "running"
    BUDGET_EXHAUSTED = "budget_exhausted"
    CAPTURE_RESTARTED = "capture_restarted"
    CLOCK_JUMPED = "clock_jumped"
    RECONNECTING = "reconnecting"
    STOPPED = "stopped"


_COUNTERS = (
    "received", "malformed", "invalid", "late", "shed", "released", "dropped_steps", "reconnects", "restarts",
    "refused",
)  # fmt: skip


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStatus:
    """What a session reports about itself: counters (ints ≥ 0), the ε spent (float ≥ 0), whether
    the budget is exhausted, the fraction of the last chunk's inputs clipped to the public bounds
    (in [0, 1]), the mechanism's registered name, the number of subscribers and the
    :class:`StatusEvent` that prompted it. Local to the device (see the module docstring).

    Raises
    ------
    TypeError
        A field has the wrong type (an int field given a bool or a float, an event given as a string).
    ValueError
        A counter or ``epsilon_spent`` is negative or not finite, ``clipped_fraction`` is outside
        [0, 1], or ``mechanism`` is not registered.
    """

    mechanism: str
    received: int = 0
    malformed: int = 0
    invalid: int = 0
    late: int = 0
    shed: int = 0
    released: int = 0
    dropped_steps: int = 0
    reconnects: int = 0
    restarts: int = 0
    #: requests and notifications from apps that streamdp's Pupil Remote refused
    refused: int = 0
    epsilon_spent: float = 0.0
    budget_exhausted: bool = False
    clipped_fraction: float = 0.0
    subscribers: int = 0
    event: StatusEvent = StatusEvent.RUNNING

    def __post_init__(self) -> None:
        for name in (*_COUNTERS, "subscribers"):
            value = getattr(self, name)
            if type(value) is not int:
                raise TypeError(f"SessionStatus.{name} must be an int, got {value!r}")
            if value < 0:
                raise ValueError(f"SessionStatus.{name} must be ≥ 0, got {value!r}")
        eps = self.epsilon_spent
        if isinstance(eps, bool) or not isinstance(eps, (int, float)):
            raise TypeError(f"SessionStatus.epsilon_spent must be a float, got {eps!r}")
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"SessionStatus.epsilon_spent must be finite and ≥ 0, got {eps!r}")
        object.__setattr__(self, "epsilon_spent", float(eps))
        clip = self.clipped_fraction
        if isinstance(clip, bool) or not isinstance(clip, (int, float)):
            raise TypeError(f"SessionStatus.clipped_fraction must be a float, got {clip!r}")
        if not 0.0 <= clip <= 1.0:
            raise ValueError(f"SessionStatus.clipped_fraction must be in [0, 1], got {clip!r}")
        object.__setattr__(self, "clipped_fraction", float(clip))
        if type(self.budget_exhausted) is not bool:
            raise TypeError(f"SessionStatus.budget_exhausted must be a bool, got {self.budget_exhausted!r}")
        if type(self.mechanism) is not str:
            raise TypeError(f"SessionStatus.mechanism must be a str, got {self.mechanism!r}")
        if self.mechanism not in MECHANISM_NAMES:
            raise ValueError(
                f"SessionStatus.mechanism must be one of {', '.join(sorted(MECHANISM_NAMES))}, got {self.mechanism!r}"
            )
        if type(self.event) is not StatusEvent:
            raise TypeError(f"SessionStatus.event must be a StatusEvent, got {self.event!r}")

    def to_message(self) -> dict[str, Any]:
        """The msgpack-ready payload: plain Python types, the event as its value string."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["event"] = self.event.value
        return out

    @classmethod
    def from_message(cls, message: object) -> SessionStatus:
        """The status a subscriber received (a decoded :meth:`to_message` payload), checked.

        Raises
        ------
        InputError
            ``message`` is not a mapping with exactly the status fields, each of the right type.
        """
        if not isinstance(message, Mapping):
            raise InputError(f"status message must be a map, got {type(message).__name__}")
        want = {f.name for f in fields(cls)}
        if set(message) != want:
            missing, extra = sorted(want - set(message)), sorted(set(message) - want, key=str)
            raise InputError(f"status message: missing fields {missing}, unknown fields {extra}")
        values = dict(message)
        try:
            values["event"] = StatusEvent(values["event"])
            return cls(**values)
        except (TypeError, ValueError) as exc:
            raise InputError(f"status message: {exc}") from exc


def check_status(status: object) -> SessionStatus:
    """Return ``status`` if it is a :class:`SessionStatus`; what every sink calls first.

    Raises
    ------
    TypeError
        ``status`` is anything else (a dict, a string, …).

    Examples
    --------
    >>> check_status({"released": 1})
    Traceback (most recent call last):
    ...
    TypeError: status may hold only counters: give a SessionStatus, got dict
    """
    if type(status) is not SessionStatus:
        raise TypeError(f"status may hold only counters: give a SessionStatus, got {type(status).__name__}")
    return status
