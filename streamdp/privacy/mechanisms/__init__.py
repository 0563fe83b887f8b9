"""Differentially private mechanisms, one class per variant, over one validated, immutable base.

Streaming chunk mechanisms (a chunk of ``n`` steps × ``F`` features in, a perturbed chunk out):
:class:`LPA`, :class:`CFPA`, :class:`DCFPA` and :class:`Steil`, by name in :data:`MECHANISMS`.
Offline: :class:`FPA` on a whole signal (:data:`OFFLINE_MECHANISMS`). Aggregate heatmaps:
:class:`HeatmapGaussian` and :class:`HeatmapLaplace` (:data:`HEATMAP_MECHANISMS`).

Unit of privacy of every chunk mechanism: **one chunk of one feature** — two inputs are
neighbours when they are any two chunks inside the public bounds (after clipping). ε is per
feature per chunk; the F features of a chunk compose sequentially to ``F·ε`` (see
:mod:`streamdp.privacy.accountant` for chunks, w-events, sessions and raw gaze).

All noise is discrete Laplace (or Gaussian) on a power-of-two lattice from
:mod:`streamdp.privacy.noise`, with the rounding charged to the sensitivity. Mechanisms take
keyword-only parameters, validate each at construction (a wrong type raises ``TypeError``, a value
out of range ``ValueError``, both naming the parameter and the value), refuse a parameter they do
not take, and are immutable afterwards, their arrays included.
"""

from .base import BaseMechanism, Mechanism, MechanismOutput
from .factories import cfpa, dcfpa
from .fourier import CFPA, DCFPA, DEFAULT_K, FourierPerturbation, default_k
from .fpa import FPA, WholeSignalFPA
from .heatmap import HeatmapGaussian, HeatmapLaplace, HeatmapMechanism
from .lpa import LPA, LaplacePerturbation
from .registry import HEATMAP_MECHANISMS, MECHANISMS, OFFLINE_MECHANISMS, make_mechanism
from .steil import Steil, SteilSubsampling
from .validation import check_chunk_length

__all__ = [
    "CFPA",
    "DCFPA",
    "DEFAULT_K",
    "FPA",
    "HEATMAP_MECHANISMS",
    "LPA",
    "MECHANISMS",
    "OFFLINE_MECHANISMS",
    "BaseMechanism",
    "FourierPerturbation",
    "HeatmapGaussian",
    "HeatmapLaplace",
    "HeatmapMechanism",
    "LaplacePerturbation",
    "Mechanism",
    "MechanismOutput",
    "Steil",
    "SteilSubsampling",
    "WholeSignalFPA",
    "cfpa",
    "check_chunk_length",
    "dcfpa",
    "default_k",
    "make_mechanism",
]
