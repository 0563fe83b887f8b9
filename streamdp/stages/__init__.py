"""Streaming stages.

Every stage has the same small contract (as in river): ``update(item)`` takes the next batch and
returns what it finished, ``flush()`` finishes what the end of the stream allows and returns it,
``reset()`` forgets all state. Output never depends on how the input was split into batches.
"""

from .events import BlinkDetector, EventConfig, EventDetector, FixationDetector
from .features import FeatureRows, WindowConfig, WindowFeatures

__all__ = [
    "BlinkDetector",
    "EventConfig",
    "EventDetector",
    "FeatureRows",
    "FixationDetector",
    "WindowConfig",
    "WindowFeatures",
]
