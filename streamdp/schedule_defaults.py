"""The public schedule's timing defaults: the event blocks, the saccade link and the deadline slack.

Every figure of the raw-gaze guarantee is a function of these and of the configuration
(:mod:`streamdp.privacy.reach`), and the stages keep to them (:mod:`streamdp.stages.schedule`,
:class:`~streamdp.stages.events.EventDetector`). They live in a module of their own, at the bottom
of the package, so that the schedule, the detector and the reach read one definition without
importing one another.
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_CHUNK_REORDER_WINDOW",
    "DEFAULT_DEADLINE_SLACK",
    "DEFAULT_MAX_EVENT_DURATION",
    "DEFAULT_MAX_SACCADE_INTERVAL",
    "DEFAULT_TICK_REORDER_WINDOW",
    "TICK_SLACK",
]

#: public maximum duration of an event in s: the block length ``M`` (WindowConfig's default)
DEFAULT_MAX_EVENT_DURATION = 8.0
#: longest s from one fixation's end to the next one's start that is a saccade (EventConfig's)
DEFAULT_MAX_SACCADE_INTERVAL = 0.2
#: s after a chunk's last step (plus the reorder window) before it is released (WindowConfig's)
DEFAULT_DEADLINE_SLACK = 0.05
#: s a live chunk waits for late gaze before it is computed: on the real Capture v3.6 under load
#: (2 cores, both eyes at ~110 Hz) a lagging eye process's gaze arrives up to 1.3 s behind the
#: newest gaze, and the newest gaze itself trails Capture's clock; chunks, 16–32 s apart, can
#: afford the wait that the gaze channel's ticks (reorder_window) cannot
DEFAULT_CHUNK_REORDER_WINDOW = 2.0
#: s a live gaze tick waits for gaze after its interval ends: one frame of Pupil Core's 30 Hz world
#: camera (33.3 ms) and a little more. Capture maps and publishes gaze once per world frame, so the
#: binocular gaze of a tick's interval arrives at most a frame after it; a lagging eye's monocular
#: gaze (up to 1.3 s late) is not waited for: the chunks wait for it, the ticks go out without it
DEFAULT_TICK_REORDER_WINDOW = 0.034
#: s after a tick's reorder window at which it is released: strictly after the gaze it waited for
TICK_SLACK = 0.001
