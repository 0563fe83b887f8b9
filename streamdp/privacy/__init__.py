"""Privacy core: public bounds, mechanisms, attack-resistant noise, accounting and auditing."""

from .bounds import BoundsProfile, default_profile
from .mechanisms import (
    DEFAULT_K,
    MECHANISMS,
    FourierPerturbation,
    LaplacePerturbation,
    Mechanism,
    SteilSubsampling,
    WholeSignalFPA,
    cfpa,
    dcfpa,
    make_mechanism,
)
from .noise import secure_generator

__all__ = [
    "DEFAULT_K",
    "MECHANISMS",
    "BoundsProfile",
    "FourierPerturbation",
    "LaplacePerturbation",
    "Mechanism",
    "SteilSubsampling",
    "WholeSignalFPA",
    "cfpa",
    "dcfpa",
    "default_profile",
    "make_mechanism",
    "secure_generator",
]
