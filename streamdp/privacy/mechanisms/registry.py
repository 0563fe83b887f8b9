"""The mechanisms by name: the one list the CLI, the Capture plugin and the configuration read.

Each registry is a read-only mapping from a name to a class; the class's ``parameters`` say which
keyword parameters it takes.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from .base import Mechanism
from .cfpa_dcfpa import CFPA, DCFPA, DCFPABozkir
from .fpa import FPA
from .heatmap import HeatmapGaussian, HeatmapLaplace, HeatmapMechanism
from .lpa import LPA
from .steil import Steil

#: the streaming chunk mechanisms (a chunk in, a perturbed chunk out), by ledger name
MECHANISMS: Mapping[str, type[Mechanism]] = MappingProxyType(
    {cls.name: cls for cls in (LPA, CFPA, DCFPA, DCFPABozkir, Steil)}
)

#: the mechanisms that need the whole signal before releasing anything
OFFLINE_MECHANISMS: Mapping[str, type[FPA]] = MappingProxyType({FPA.name: FPA})

#: the aggregate gaze-heatmap mechanisms of Liu et al., by their noise
HEATMAP_MECHANISMS: Mapping[str, type[HeatmapMechanism]] = MappingProxyType(
    {"gaussian": HeatmapGaussian, "laplace": HeatmapLaplace}
)


def make_mechanism(name: str, **params: Any) -> Mechanism:
    """The streaming chunk mechanism ``name`` of :data:`MECHANISMS`, built with ``params``.

    A parameter the mechanism does not take is refused, never dropped.

    Raises
    ------
    TypeError
        ``name`` is not a str; a parameter the mechanism does not take (named); a parameter of
        the wrong type.
    ValueError
        ``name`` is not in :data:`MECHANISMS` (the choices are listed); a parameter out of range.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> d = make_mechanism("steil", epsilon=52.0, bounds=default_profile(), chunk_length=32).describe()
    >>> d["epsilon"], d["epsilon_per_feature"], d["weights"], d["subsampling_window"]
    (52.0, 1.0, 'equal', 8)
    >>> make_mechanism("lpa", epsilon=1.0, bounds=default_profile(), chunk_length=32, k=3)
    Traceback (most recent call last):
    ...
    TypeError: lpa does not take parameter 'k'
    """
    if not isinstance(name, str):
        raise TypeError(f"mechanism must be a str, got {name!r}")
    cls = MECHANISMS.get(name)
    if cls is None:
        hint = " (an offline mechanism: it needs the whole signal)" if name in OFFLINE_MECHANISMS else ""
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}, got {name!r}{hint}")
    for key in params:
        if key not in cls.parameters:
            raise TypeError(f"{name} does not take parameter {key!r}")
    return cls(**params)
