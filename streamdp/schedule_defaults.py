"""The public schedule's timing defaults: the event blocks, the saccade link and the deadline slack.

Every figure of the raw-gaze guarantee is a function of these and of the configuration
(:mod:`streamdp.privacy.reach`), and the stages keep to them (:mod:`streamdp.stages.schedule`,
:class:`~streamdp.stages.events.EventDetector`). They live in a module of their own, at the bottom
of the package, so that the schedule, the detector and the reach read one definition without
importing one another.
"""

from __future__ import annotations

__all__ = ["DEFAULT_DEADLINE_SLACK", "DEFAULT_MAX_EVENT_DURATION", "DEFAULT_MAX_SACCADE_INTERVAL"]

#: public maximum duration of an event in s: the block length ``M`` (WindowConfig's default)
DEFAULT_MAX_EVENT_DURATION = 8.0
#: longest s from one fixation's end to the next one's start that is a saccade (EventConfig's)
DEFAULT_MAX_SACCADE_INTERVAL = 0.2
#: s after a chunk's last step before it is computed (reorder 0.1 + 0.05 ≤ 0.15; WindowConfig's)
DEFAULT_DEADLINE_SLACK = 0.05
