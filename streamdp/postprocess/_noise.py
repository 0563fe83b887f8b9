"""The noise a release carries, from its public ledger and the public bounds alone.

The ledger names the mechanism and its public parameters (ε of the chunk, the weights, the chunk
length, the transform, ``k``, the sensitivity mode, the level share) and the digest of the bounds
profile; it does not state a noise variance. The same mechanism is rebuilt from them (after
checking the bounds' digest against the ledger's), and the variance follows from its calibration:
each released number (the DCFPA level, the kept coefficients) carries Laplace noise of scale ``λ``
(variance ``2λ²``; the lattice sampler's discrete Laplace has slightly less), independent across
numbers, and the output chunk is the fixed linear map ``R`` (n × m) of the noisy numbers. So a step's
noise variance is ``Σⱼ Rᵢⱼ²·2λⱼ²`` and the chunk mean's ``Σⱼ aⱼ²·2λⱼ²`` with ``a`` the mean of
``R``'s rows. With ``k="private"`` the chosen ``k`` is not in the ledger: the largest variance over
the candidates is taken (conservative: less smoothing, never more).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..privacy.bounds import BoundsProfile, default_profile
from ..privacy.mechanisms import LPA, FourierPerturbation, make_mechanism
from ..privacy.shipped_weights import is_shipped

_F64 = NDArray[np.float64]

#: the mechanisms whose noise the ledger determines (the streaming chunk mechanisms but Steil's,
#: whose subsampling is not a fixed linear map of independent noise)
SUPPORTED_MECHANISMS = ("dcfpa", "cfpa", "dcfpa-bozkir", "lpa")


@dataclass(frozen=True, eq=False)
class NoiseModel:
    """The noise of one configuration's releases, per feature.

    Attributes
    ----------
    mechanism : str
        The ledger's mechanism.
    chunk_length : int
        Steps per chunk.
    level_variance : ndarray, shape (F,)
        Variance of the noise on a chunk's mean (0 for a dropped feature).
    step_variance : ndarray, shape (F,)
        Variance of the noise on one step, averaged over the chunk's steps (0 for a dropped feature).
    released : ndarray of bool, shape (F,)
        False for a feature released as a public constant (weight 0, ledger ``dropped_features``).
    bounds : BoundsProfile
        The public bounds the ledger's digest names.
    ledger_keys : mapping
        The ledger's entries that name the configuration (mechanism, ε, chunk length, bounds
        digest, k, weights): a release whose ledger differs in one is of another configuration.
    """

    mechanism: str
    chunk_length: int
    level_variance: _F64
    step_variance: _F64
    released: NDArray[np.bool_]
    bounds: BoundsProfile
    ledger_keys: Mapping[str, Any]


#: the ledger entries that name a configuration
IDENTITY_KEYS = ("mechanism", "epsilon", "chunk_length", "bounds_digest", "k", "weights")


def _param(ledger: Mapping[str, Any], key: str) -> Any:
    if key not in ledger:
        raise ValueError(f"ledger has no {key!r}: not the ledger entry of a chunk release")
    return ledger[key]


def resolve_bounds(ledger: Mapping[str, Any], bounds: object) -> BoundsProfile:
    """``bounds``, or the shipped profile of the ledger's weights, checked against the ledger's
    ``bounds_digest``.

    Raises
    ------
    TypeError
        ``bounds`` is neither None nor a :class:`~streamdp.privacy.BoundsProfile`.
    ValueError
        The digest differs, or the ledger's weights are not shipped and no ``bounds`` was given.
    """
    if bounds is None:
        weights = _param(ledger, "weights")
        if not is_shipped(weights):  # task@k=K too: the shipped split at an ε
            raise ValueError(
                f"bounds: the ledger's weights {weights!r} are not shipped; pass the BoundsProfile it was released "
                "with (for a weights file: SessionConfig(weights=FILE).bounds_profile())"
            )
        bounds = default_profile(weights)
    if not isinstance(bounds, BoundsProfile):
        raise TypeError(f"bounds must be a BoundsProfile or None, got {type(bounds).__name__}")
    digest = _param(ledger, "bounds_digest")
    if bounds.digest() != digest:
        raise ValueError(f"bounds: digest {bounds.digest()} is not the ledger's bounds_digest {digest!r}")
    return bounds


def noise_model(ledger: Mapping[str, Any], bounds: BoundsProfile | None = None) -> NoiseModel:
    """The noise of the releases ``ledger`` describes (see the module docstring).

    Raises
    ------
    TypeError
        ``ledger`` is not a mapping; ``bounds`` not a BoundsProfile.
    ValueError
        The ledger lacks a parameter, names a mechanism without a stated noise model
        (:data:`SUPPORTED_MECHANISMS`), or its ε per feature disagrees with the rebuilt mechanism;
        ``bounds`` does not match the ledger's digest.

    Examples
    --------
    >>> from streamdp.privacy import dcfpa
    >>> m = dcfpa(epsilon=52.0, bounds=default_profile(), chunk_length=32)
    >>> ledger = {**m.describe(), "bounds_digest": default_profile().digest()}
    >>> model = noise_model(ledger)
    >>> bool(np.allclose(model.level_variance, 2 * m.level_noise_scale**2))
    True
    """
    if not isinstance(ledger, Mapping):
        raise TypeError(f"ledger must be a mapping, got {type(ledger).__name__}")
    name = _param(ledger, "mechanism")
    if name not in SUPPORTED_MECHANISMS:
        supported = ", ".join(SUPPORTED_MECHANISMS)
        raise ValueError(f"ledger: mechanism {name!r} has no stated noise model; one of {supported}")
    profile = resolve_bounds(ledger, bounds)
    params: dict[str, Any] = {
        "epsilon": float(_param(ledger, "epsilon")),
        "bounds": profile,
        "chunk_length": int(_param(ledger, "chunk_length")),
    }
    if name != "lpa":
        k = _param(ledger, "k")
        params.update(transform=_param(ledger, "transform"), k=k, sensitivity=str(_param(ledger, "sensitivity")))
        params["sensitivity"] = params["sensitivity"].removesuffix("-upper")
        if k == "private":
            params["k_epsilon_share"] = float(_param(ledger, "k_epsilon_share"))
        if name == "dcfpa":
            params["level_share"] = float(_param(ledger, "level_share"))
    mech = make_mechanism(name, **params)
    stated = np.asarray(_param(ledger, "epsilon_per_feature"), dtype=np.float64)
    rebuilt = np.asarray(mech.describe()["epsilon_per_feature"], dtype=np.float64)
    if stated.shape != rebuilt.shape or not np.allclose(stated, rebuilt, rtol=1e-9, atol=0.0):
        raise ValueError("ledger: its epsilon_per_feature is not what its epsilon, weights and bounds give")
    if isinstance(mech, FourierPerturbation):
        scale = np.max(mech.noise_scales, axis=0)  # fixed k: one row; private k: the largest
        out_map = np.asarray(mech._output)
        row_var = 2.0 * np.broadcast_to(mech._row_scales(scale), (out_map.shape[1], scale.size)) ** 2
    else:
        assert isinstance(mech, LPA)
        out_map = np.eye(mech.chunk_length)
        row_var = np.broadcast_to(2.0 * np.asarray(mech.noise_scale) ** 2, (mech.chunk_length, profile.released.size))
    released = profile.released
    step = np.where(released, (out_map**2 @ row_var).mean(axis=0), 0.0)
    level = np.where(released, out_map.mean(axis=0) ** 2 @ row_var, 0.0)
    keys = MappingProxyType({key: ledger[key] for key in IDENTITY_KEYS if key in ledger})
    return NoiseModel(name, mech.chunk_length, _frozen(level), _frozen(step), released, profile, keys)


def _frozen(a: _F64) -> _F64:
    out = np.array(a, dtype=np.float64)
    out.setflags(write=False)
    return out
