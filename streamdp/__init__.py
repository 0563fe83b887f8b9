"""streamdp: on-device differential privacy for streaming eye-tracking features.

Sources, stages, mechanisms and sinks are importable from here:

- configuration and session: :class:`SessionConfig`, :class:`Session`, :class:`SessionStatus`;
- pipelines: :class:`FeaturePipeline` (gaze → unsanitized feature rows, kept local) and
  :class:`PrivatePipeline` (gaze → sanitized releases, :class:`PrivateRelease`);
- gaze: :func:`read_recording`, :class:`Recording`, :class:`GazeBatch`, :class:`GazeColumns`;
- privacy: the mechanisms (:func:`dcfpa`, :func:`cfpa`, :class:`LPA`, …, :func:`make_mechanism`,
  :data:`MECHANISMS`), :class:`PrivacyUnit`, :class:`BoundsProfile`, :func:`default_profile`,
  :func:`secure_generator`;
- sinks: :class:`ReleaseSink`, :class:`CollectingSink` (and, loaded on first use,
  :class:`ReleasePublisher`, the ZeroMQ sink);
- pandas (the ``pandas`` extra): :func:`gaze_to_pandas`, :func:`releases_to_pandas`, …

Examples
--------
>>> import streamdp
>>> from streamdp.synthetic import generate
>>> config = streamdp.SessionConfig(chunk_length=32, seed=7)
>>> sink = streamdp.CollectingSink()
>>> releases = streamdp.Session(config, sinks=[sink]).run(generate(duration=60.0, seed=1).recording)
>>> len(sink.releases), releases[0].ledger["generator"]
(1, 'reproducible, not private')
"""

from typing import TYPE_CHECKING, Any

from .config import SessionConfig
from .errors import BudgetExhausted, InputError, StreamdpError, TimestampOrderError
from .events import EventBatch, Fixations, Saccades
from .frames import gaze_from_pandas, gaze_to_pandas, releases_to_pandas, rows_from_pandas, rows_to_pandas
from .gaze import BlinkEvents, GazeBatch, GazeColumns, Recording
from .pipeline import ChunkPrivatizer, FeaturePipeline, PrivatePipeline
from .privacy import (
    CFPA,
    DCFPA,
    FPA,
    LPA,
    MECHANISMS,
    BoundsProfile,
    DCFPABozkir,
    HeatmapGaussian,
    HeatmapLaplace,
    Mechanism,
    Steil,
    cfpa,
    dcfpa,
    default_profile,
    make_mechanism,
    secure_generator,
)
from .privacy.accountant import PrivacyUnit
from .privacy.release import PrivateRelease
from .readers import read_recording
from .schema import FEATURE_NAMES, N_FEATURES, SCHEMA_VERSION
from .session import Session
from .sinks import CollectingSink, ReleaseSink
from .stages import EventConfig, EventDetector, FeatureRows, WindowConfig, WindowFeatures
from .status import SessionStatus, StatusEvent

if TYPE_CHECKING:
    from .network.client import Subscriber
    from .network.sink import ReleasePublisher

__version__ = "0.1.0"

#: loaded on first use: the network layer (ZeroMQ sockets) is not needed to compute or sanitize
_LAZY = {"ReleasePublisher": "streamdp.network.sink", "Subscriber": "streamdp.network.client"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'streamdp' has no attribute {name!r}")


def __dir__() -> list[str]:
    # Capture's plugin loader calls getattr on every name dir() lists: a lazy name whose module
    # this copy lacks (the installed plugin folder carries no subscriber) is not listed
    from importlib.util import find_spec

    return sorted([*globals(), *(name for name, module in _LAZY.items() if find_spec(module) is not None)])


__all__ = [
    "CFPA",
    "DCFPA",
    "FEATURE_NAMES",
    "FPA",
    "LPA",
    "MECHANISMS",
    "N_FEATURES",
    "SCHEMA_VERSION",
    "BlinkEvents",
    "BoundsProfile",
    "BudgetExhausted",
    "ChunkPrivatizer",
    "CollectingSink",
    "DCFPABozkir",
    "EventBatch",
    "EventConfig",
    "EventDetector",
    "FeaturePipeline",
    "FeatureRows",
    "Fixations",
    "GazeBatch",
    "GazeColumns",
    "HeatmapGaussian",
    "HeatmapLaplace",
    "InputError",
    "Mechanism",
    "PrivacyUnit",
    "PrivatePipeline",
    "PrivateRelease",
    "Recording",
    "ReleasePublisher",
    "ReleaseSink",
    "Saccades",
    "Session",
    "SessionConfig",
    "SessionStatus",
    "StatusEvent",
    "Steil",
    "StreamdpError",
    "Subscriber",
    "TimestampOrderError",
    "WindowConfig",
    "WindowFeatures",
    "cfpa",
    "dcfpa",
    "default_profile",
    "gaze_from_pandas",
    "gaze_to_pandas",
    "make_mechanism",
    "read_recording",
    "releases_to_pandas",
    "rows_from_pandas",
    "rows_to_pandas",
    "secure_generator",
]
