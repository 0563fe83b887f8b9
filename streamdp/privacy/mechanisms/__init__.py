"""Differentially private mechanisms, one class per variant, over one validated, immutable base.

Streaming chunk mechanisms (a chunk of ``n`` steps × ``F`` features in, a perturbed chunk out):
:class:`LPA`, :class:`CFPA`, :class:`DCFPA` (level-keeping, the default), :class:`DCFPABozkir`
(the paper's Algorithm 1) and :class:`Steil`, by name in :data:`MECHANISMS`.
Offline: :class:`FPA` on a whole signal (:data:`OFFLINE_MECHANISMS`). Aggregate heatmaps:
:class:`HeatmapGaussian` and :class:`HeatmapLaplace` (:data:`HEATMAP_MECHANISMS`).

Unit of privacy of every chunk mechanism: **one chunk of one feature** — two inputs are
neighbours when they are any two chunks (mapped into the public bounds first). ``epsilon`` is the
total of one chunk, split over the features by the bounds profile's weights; the features compose
sequentially to it (``epsilon_per_feature`` gives the papers' per-feature ε instead; see
:mod:`~streamdp.privacy.mechanisms.budget`, and :mod:`streamdp.privacy.accountant` for chunks,
w-events, sessions and raw gaze).

All noise is discrete Laplace (or Gaussian) on a power-of-two lattice from
:mod:`streamdp.privacy.noise`, with the rounding charged to the sensitivity. Mechanisms take
keyword-only parameters, each declared once in its class's ``parameter_table``
(:mod:`~streamdp.privacy.mechanisms.parameters`: the signature, the checks and the documented
parameters are made from it), validate each at construction (a wrong type raises ``TypeError``, a
value out of range ``ValueError``, both naming the parameter and the value), refuse a parameter
they do not take, and are immutable afterwards, their arrays included.

One module per family: :mod:`.lpa`, :mod:`.fourier_perturbation` (the Fourier base) with
:mod:`.cfpa_dcfpa` (CFPA, DCFPA, DCFPABozkir and their factories), :mod:`.steil`, :mod:`.fpa` (whole
signal), :mod:`.heatmap`; shared: :mod:`.base`, :mod:`.budget` (ε per chunk), :mod:`.parameters`,
:mod:`.validation`, :mod:`.registry`.
"""

from .base import BaseMechanism, Mechanism, MechanismOutput
from .budget import ChunkMechanism, split_epsilon
from .cfpa_dcfpa import CFPA, DCFPA, DCFPA_DEFAULT_K, DEFAULT_LEVEL_SHARE, DCFPABozkir, cfpa, dcfpa, dcfpa_bozkir
from .fourier_perturbation import DEFAULT_K, FourierPerturbation, default_k
from .fpa import FPA, WholeSignalFPA
from .heatmap import HeatmapGaussian, HeatmapLaplace, HeatmapMechanism
from .lpa import LPA, LaplacePerturbation
from .registry import HEATMAP_MECHANISMS, MECHANISMS, OFFLINE_MECHANISMS, make_mechanism
from .steil import Steil, SteilSubsampling
from .validation import check_chunk_length

__all__ = [
    "CFPA",
    "DCFPA",
    "DCFPA_DEFAULT_K",
    "DEFAULT_K",
    "DEFAULT_LEVEL_SHARE",
    "FPA",
    "HEATMAP_MECHANISMS",
    "LPA",
    "MECHANISMS",
    "OFFLINE_MECHANISMS",
    "BaseMechanism",
    "ChunkMechanism",
    "DCFPABozkir",
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
    "dcfpa_bozkir",
    "default_k",
    "make_mechanism",
    "split_epsilon",
]
