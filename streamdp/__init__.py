"""streamdp: on-device differential privacy for streaming eye-tracking features.

Sources, stages, mechanisms and sinks are importable from here.
"""

from .errors import BudgetExhausted, InputError, StreamdpError, TimestampOrderError
from .events import EventBatch, Fixations, Saccades
from .gaze import BlinkEvents, GazeBatch, Recording
from .pipeline import FeaturePipeline
from .schema import FEATURE_NAMES, N_FEATURES, SCHEMA_VERSION
from .stages import EventConfig, EventDetector, FeatureRows, WindowConfig, WindowFeatures

__version__ = "0.1.0"

__all__ = [
    "FEATURE_NAMES",
    "N_FEATURES",
    "SCHEMA_VERSION",
    "BlinkEvents",
    "BudgetExhausted",
    "EventBatch",
    "EventConfig",
    "EventDetector",
    "FeaturePipeline",
    "FeatureRows",
    "Fixations",
    "GazeBatch",
    "InputError",
    "Recording",
    "Saccades",
    "StreamdpError",
    "TimestampOrderError",
    "WindowConfig",
    "WindowFeatures",
]
