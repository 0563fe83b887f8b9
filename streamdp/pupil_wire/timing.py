"""Capture's timing, shared by the decoding and the encoding side."""

from __future__ import annotations

#: Capture's world camera rate: gaze leaves the world process in one burst per frame
WORLD_FPS = 30.0
#: how far behind binocular gaze already sent Capture's RealtimeMatcher lets monocular gaze lag
MATCHER_LATENESS = 0.09
#: the blink detector's filter length (s); a blink datum's timestamp is the middle of it
BLINK_HISTORY = 0.2
