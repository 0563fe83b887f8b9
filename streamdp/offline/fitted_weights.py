"""A fitted allocation of ε (:class:`FittedWeights`) and the noise it is weighed against
(:func:`unit_noise`): what :mod:`streamdp.offline.fit_weights` returns and writes to a weights file.
Per-feature aggregates and counts only: never a feature row.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import __version__
from ..config import SessionConfig
from ..privacy.allocation import allocation_loss, split_weights
from ..privacy.bounds import WEIGHTS_PROFILES
from ..privacy.mechanisms import Steil, make_mechanism
from ..privacy.weights_file import weights_document
from ..schema import FEATURE_NAMES, N_FEATURES

if TYPE_CHECKING:
    from .epsilon_fit import EpsilonFit

__all__ = ["OBJECTIVE", "FittedWeights", "unit_noise"]

_F64 = NDArray[np.float64]

#: the objective and its solution, as the weights file states them (docs/privacy.md)
OBJECTIVE = (
    "minimise the usefulness-weighted relative noise sum_i u_i*a_i/eps_i^2 subject to sum_i eps_i = eps, "
    "eps_i = eps*w_i/sum(w); u_i = max(0, s_i - p_i) with s_i and p_i Fisher's between/within-class variance "
    "ratio of feature i (clipped to the public bounds) for the task and the protected column; a_i the noise "
    "variance of the mechanism at eps_i = 1 over (hi - lo)^2. Solution: w_i = (u_i*a_i)^(1/3) / sum_j "
    "(u_j*a_j)^(1/3), the same for every eps"
)


def _frozen(a: ArrayLike) -> _F64:
    out = np.array(a, dtype=np.float64)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class FittedWeights:
    """A fitted allocation and how it was fitted: per-feature aggregates and counts, no rows.

    Attributes
    ----------
    weights : ndarray, shape (F,)
        Each feature's share of a chunk's ε (sums to 1; 0: released as its public constant).
    task, protect : str, str or None
        The label column separated, and the one protected.
    task_separability, protect_separability : ndarray, shape (F,)
        Fisher's ratio of each feature for the two columns (``protect_separability`` 0 without one).
    useful : ndarray, shape (F,)
        ``max(0, task − protect)``.
    unit_noise : ndarray, shape (F,)
        The mechanism's noise variance at ``εᵢ = 1`` over ``(hi − lo)²``.
    recordings, feature_rows, task_classes : int
        What the fit saw.
    protect_classes, participants : int or None
        Classes of the protected column; distinct participants, when the labels name them.
    noise_model, features : mapping
        The mechanism's public parameters and the feature settings the rows were made with.
    epsilon_fit : EpsilonFit or None
        For an allocation fitted for an ε: the ε and how many features the inner cross-validation
        chose to fund (:mod:`streamdp.offline.epsilon_fit`); None: every useful feature, any ε.
    """

    weights: _F64
    task: str
    protect: str | None
    task_separability: _F64
    protect_separability: _F64
    useful: _F64
    unit_noise: _F64
    recordings: int
    feature_rows: int
    task_classes: int
    protect_classes: int | None
    participants: int | None
    noise_model: Mapping[str, Any]
    features: Mapping[str, Any]
    epsilon_fit: EpsilonFit | None = None

    @property
    def released(self) -> NDArray[np.bool_]:
        """The features that get a share of ε."""
        return np.asarray(self.weights > 0)

    def mapping(self) -> dict[str, float]:
        """Feature → weight, every feature of the schema (the form a bounds profile takes)."""
        return {name: float(w) for name, w in zip(FEATURE_NAMES, self.weights, strict=True)}

    def loss(self, weights: ArrayLike | None = None) -> float:
        """The objective at total ε 1 for ``weights`` (default: the fitted ones)."""
        return allocation_loss(self.weights if weights is None else weights, self.useful, self.unit_noise)

    def facts(self) -> dict[str, Any]:
        """How the weights were fitted, as the weights file states it (public facts only)."""
        return {
            "task": self.task,
            "protect": self.protect,
            "recordings": self.recordings,
            "participants": self.participants,
            "task_classes": self.task_classes,
            "protect_classes": self.protect_classes,
            "feature_rows": self.feature_rows,
            "released_features": int(self.released.sum()),
            **self._epsilon_facts(),
            "objective": OBJECTIVE,
            "loss_vs_equal_split": self.loss() / self.loss(np.ones(N_FEATURES)),
            "noise_model": dict(self.noise_model),
            "features": dict(self.features),
            "streamdp_version": __version__,
        }

    def _epsilon_facts(self) -> dict[str, Any]:
        fit = self.epsilon_fit
        if fit is None:
            return {"epsilon": None, "epsilon_note": "the split minimises the objective at every total epsilon alike"}
        return {
            "epsilon": fit.epsilon,
            "epsilon_note": f"fitted for a total epsilon of {fit.epsilon:g} a chunk: {fit.k} features funded, "
            "chosen by the inner cross-validation; at another epsilon, refit",
            "epsilon_fit": fit.facts(),
        }

    def with_noise(self, config: SessionConfig) -> FittedWeights:
        """The same fit (the same recordings, separabilities and usefulness) weighed against the
        noise of ``config``'s mechanism: what :func:`~streamdp.offline.fit_weights.fit_weights`
        returns for ``config``, without reading the rows again (an evaluation fits each fold once
        and splits ε for each mechanism of its grid). A fit for an ε keeps the features it funds.

        Raises
        ------
        TypeError
            ``config`` is not a SessionConfig; a parameter its mechanism does not take.
        ValueError
            ``config``'s bounds are not those the fit clipped the rows to.

        Examples
        --------
        >>> from streamdp.offline.fit_weights import fit_weights
        >>> rng = np.random.default_rng(0)
        >>> rows = [rng.uniform(0.0, 1.0, (30, 52)) + i % 2 for i in range(4)]
        >>> fitted = fit_weights(rows, [{"task": "ab"[i % 2]} for i in range(4)], task="task")
        >>> lpa = fitted.with_noise(SessionConfig(mechanism="lpa", chunk_length=16))
        >>> lpa.noise_model["mechanism"], bool(np.all(lpa.useful == fitted.useful)), round(float(lpa.weights.sum()), 12)
        ('lpa', True, 1.0)
        """
        if not isinstance(config, SessionConfig):
            raise TypeError(f"config must be a SessionConfig, got {type(config).__name__}")
        a, model = unit_noise(config)
        if model["bounds_digest"] != self.noise_model.get("bounds_digest"):
            raise ValueError(f"config has other bounds ({model['bounds_digest']}) than the fit's")
        useful = self.useful if self.epsilon_fit is None else self.useful * self.released  # the funded features only
        return replace(self, weights=_frozen(split_weights(useful, a)), unit_noise=_frozen(a), noise_model=model)

    def document(self, *, name: str, manifest_digest: str | None = None) -> dict[str, Any]:
        """The weights file (:func:`~streamdp.privacy.weights_file.weights_document`) named
        ``name``; ``manifest_digest``: the SHA-256 of the manifest the recordings came from.

        Raises
        ------
        TypeError, ValueError
            ``name`` is not a non-empty str, or is a shipped allocation's (``"task"``: ledgers
            would confuse the two).
        """
        if name in WEIGHTS_PROFILES:
            raise ValueError(
                f"name {name!r} is a shipped allocation's, which ledgers would confuse with it: give another "
                "(streamdp fit-weights --name)"
            )
        facts = self.facts()
        if manifest_digest is not None:
            facts["manifest_sha256"] = manifest_digest
        return weights_document(self.mapping(), name=name, fitted=facts)


def unit_noise(config: SessionConfig | None = None) -> tuple[_F64, dict[str, Any]]:
    """The relative unit noise ``aᵢ`` of ``config``'s mechanism (its chunk length, transform, k,
    sensitivity, level share and bounds; any ε and weights): the variance of a released step's
    noise at ``εᵢ = 1``, averaged over the chunk, over ``(hi − lo)²``; and the mechanism's public
    parameters. The variance is :func:`streamdp.postprocess.noise_model`'s (``k="private"``: the
    largest over the candidates); Steil's mechanism holds one noisy draw over each window, so its
    variance is ``2λ²``.

    Raises
    ------
    TypeError
        ``config`` is not a SessionConfig; a parameter its mechanism does not take.
    ValueError
        A parameter out of range.

    Examples
    --------
    >>> a, model = unit_noise(SessionConfig(mechanism="lpa", chunk_length=16))
    >>> round(float(a[0]), 1), model["mechanism"]  # 2·(n·(hi − lo)/1)² / (hi − lo)²: 2·16², plus the lattice charge
    (512.0, 'lpa')
    """
    from ..postprocess import SUPPORTED_MECHANISMS, noise_model

    cfg = SessionConfig() if config is None else config
    if not isinstance(cfg, SessionConfig):
        raise TypeError(f"config must be a SessionConfig, got {type(cfg).__name__}")
    bounds = cfg.bounds_profile()
    equal = bounds.with_weights(np.ones(len(bounds.names)), "equal")
    params = {k: v for k, v in cfg.mechanism_params().items() if k not in ("epsilon", "epsilon_per_feature")}
    mech = make_mechanism(cfg.mechanism, bounds=equal, epsilon_per_feature=1.0, **params)
    if mech.name in SUPPORTED_MECHANISMS:
        variance = noise_model({**mech.describe(), "bounds_digest": equal.digest()}, equal).step_variance
    else:
        assert isinstance(mech, Steil)  # the one chunk mechanism without a stated noise model
        variance = 2.0 * np.asarray(mech.noise_scale, dtype=np.float64) ** 2
    drop = ("epsilon", "epsilon_per_feature", "weights", "dropped_features")
    model = {k: v for k, v in mech.describe().items() if k not in drop}
    model["bounds_digest"] = equal.digest()
    return np.asarray(variance / equal.width**2), model
