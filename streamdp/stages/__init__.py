"""Streaming stages.

Every stage is a :class:`~streamdp.stages.base.Stage` (as in river): ``update(item)`` takes the
next batch and returns what it finished, ``flush()`` finishes what the end of the stream allows and
leaves the stage ready for a new stream, ``reset()`` makes it behave as freshly built. Output never
depends on how the input was split into batches; ``tests/test_stage_contract.py`` checks every
stage for it.
"""

from .base import Stage
from .chunker import Chunk, Chunker
from .events import EventConfig, EventDetector
from .features import FeatureRows, WindowConfig, WindowFeatures

__all__ = [
    "Chunk",
    "Chunker",
    "EventConfig",
    "EventDetector",
    "FeatureRows",
    "Stage",
    "WindowConfig",
    "WindowFeatures",
]
