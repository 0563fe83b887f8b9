"""One configuration, the only factory of a pipeline.

:class:`SessionConfig` holds, as plain values, everything that decides what a session outputs:
the mechanism and its parameters, the unit of privacy and its budget, the bounds profile, the
window and step, the event thresholds, the scene camera (field of view), the signal units, the
pupil diameter unit and the live reorder window. The relay, the Capture plugin, the Neon relay,
``replay``, ``demo``, ``evaluate`` and ``features`` all build their pipeline from it, and every CLI
command takes its options from its fields (:mod:`streamdp.cli.options`), so an option added here
reaches every command. It is frozen and picklable (worker processes, dask).

One module per concern: :mod:`.fields` (the fields, their defaults, help and checks),
:mod:`.toml_files` (plain values and TOML files in and out), :mod:`.session_config`
(:class:`SessionConfig`: the parts and pipelines built from the fields).
"""

from .fields import DEFAULT_CAMERA, DEFAULT_EPSILON, DEFAULT_EPSILON_CEILING, DEFAULT_WEIGHTS, EVENT_FIELDS
from .session_config import SessionConfig
from .toml_files import read_toml

__all__ = [
    "DEFAULT_CAMERA",
    "DEFAULT_EPSILON",
    "DEFAULT_EPSILON_CEILING",
    "DEFAULT_WEIGHTS",
    "EVENT_FIELDS",
    "SessionConfig",
    "read_toml",
]
