"""ε as users state it: a total per chunk, split over the features by the bounds profile's weights.

Every streaming chunk mechanism takes exactly one of

- ``epsilon``: the **total** ε of one chunk (all features together). Feature ``i`` gets
  ``ε·wᵢ/Σw`` with the profile's weights ``w`` (equal by default, so ``ε/52``); the features of a
  chunk compose sequentially, so the chunk costs ``ε``.
- ``epsilon_per_feature``: the papers' convention, the same ε for every released feature; the
  chunk then costs ``ε_f`` times the number of released features.

A feature of weight 0 is dropped: it gets no ε and its released values are the public constant
``(lo + hi)/2``. Giving both keywords, or neither, raises ``TypeError``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from .base import Mechanism
from .parameters import BOUNDS, CHUNK_LENGTH, Parameter
from .validation import check_bounds, check_epsilon

_F64 = NDArray[np.float64]


def split_epsilon(epsilon: object, epsilon_per_feature: object, bounds: object) -> tuple[float, NDArray[np.float64]]:
    """The total ε of a chunk and ε per feature (0 for a dropped feature).

    Raises
    ------
    TypeError
        Both or neither of ``epsilon`` and ``epsilon_per_feature``; a value of the wrong type.
    ValueError
        A value not finite and > 0.

    Examples
    --------
    >>> from streamdp.privacy import default_profile
    >>> total, per = split_epsilon(52.0, None, default_profile())
    >>> total, float(per[0])
    (52.0, 1.0)
    >>> split_epsilon(None, 0.5, default_profile())[0]
    26.0
    >>> split_epsilon(1.0, 1.0, default_profile())
    Traceback (most recent call last):
    ...
    TypeError: give epsilon (total per chunk) or epsilon_per_feature, not both
    """
    profile = check_bounds(bounds)
    if epsilon is not None and epsilon_per_feature is not None:
        raise TypeError("give epsilon (total per chunk) or epsilon_per_feature, not both")
    w = profile.feature_weights
    if epsilon_per_feature is not None:
        e = check_epsilon("epsilon_per_feature", epsilon_per_feature)
        per = np.where(w > 0, e, 0.0)
        return float(e * np.count_nonzero(w > 0)), per
    if epsilon is None:
        raise TypeError("epsilon must be a real number (the total per chunk), got None")
    total = check_epsilon("epsilon", epsilon)
    return total, total * w / w.sum()


#: ε as the total of a chunk (:func:`split_epsilon`); the check is the class's, on both keywords
EPSILON_TOTAL = Parameter(
    "epsilon",
    "float | None",
    "The total ε of one chunk, split over the features by the profile's weights.",
    default=None,
    doc_type="float",
)

EPSILON_PER_FEATURE = Parameter(
    "epsilon_per_feature",
    "float | None",
    "Instead of ``epsilon``: the same ε for every released feature (the papers' convention). "
    "Giving both, or neither, raises TypeError.",
    default=None,
    doc_type="float",
)


EPSILON_ASKED = Parameter(
    "epsilon_asked",
    "float | None",
    "The total ε per chunk that was asked for, when a spending ceiling made the mechanism spend "
    "less (``epsilon``); public, so that the ledger says both. It changes no noise. None (default): "
    "what was asked is what is spent.",
    default=None,
    doc_type="float",
)


class ChunkMechanism(Mechanism):
    """A streaming chunk mechanism whose ε is a total per chunk split by the profile's weights
    (or the papers' ε per feature, given explicitly). See the module docstring.

    Attributes
    ----------
    epsilon : float
        ε of one chunk, all features together.
    feature_epsilons : ndarray
        ε of each feature (0 where dropped), read-only; they sum to ``epsilon``.
    """

    parameter_table: ClassVar[tuple[Parameter, ...]] = (
        EPSILON_TOTAL, EPSILON_PER_FEATURE, BOUNDS, CHUNK_LENGTH, EPSILON_ASKED,
    )  # fmt: skip

    epsilon_per_feature: float | None
    epsilon_asked: float | None
    feature_epsilons: _F64

    def _construct(self, checked: dict[str, Any]) -> None:
        given = checked["epsilon_per_feature"]
        total, per = split_epsilon(checked["epsilon"], given, checked["bounds"])
        super()._construct(
            {
                # a per-feature ε times many features can overflow the total
                "epsilon": check_epsilon("epsilon", total),
                "bounds": checked["bounds"],
                "chunk_length": checked["chunk_length"],
            }
        )
        asked = checked["epsilon_asked"]
        if asked is not None:
            asked = check_epsilon("epsilon_asked", asked)
            if asked < total:
                raise ValueError(f"epsilon_asked must be ≥ the ε spent per chunk ({total:g}), got {asked!r}")
        self._set(epsilon_per_feature=None if given is None else float(given), feature_epsilons=per,
                  epsilon_asked=asked)  # fmt: skip

    @property
    def epsilon_chunk(self) -> float:
        """ε of one chunk: the total (the features compose sequentially)."""
        return self.epsilon

    @property
    def _noise_epsilons(self) -> _F64:
        """ε per feature to calibrate noise with: a dropped feature's noise is computed (with ε = 1,
        so that every scale is finite) and then discarded."""
        return np.where(self.bounds.released, self.feature_epsilons, 1.0)

    def _public_constants(self, values: _F64) -> _F64:
        """``values`` with every dropped feature set to its public constant."""
        released = self.bounds.released
        if released.all():
            return values
        return np.where(released, values, self.bounds.midpoint)

    def arguments(self) -> dict[str, Any]:
        args = {p: getattr(self, p) for p in self.parameters if p not in ("epsilon", "epsilon_per_feature")}
        if args.get("epsilon_asked") is None:
            args.pop("epsilon_asked", None)
        if self.epsilon_per_feature is None:
            return {"epsilon": self.epsilon, **args}
        return {"epsilon_per_feature": self.epsilon_per_feature, **args}

    def describe(self) -> dict[str, Any]:
        """The public parameters, for the ledger: the total ε of a chunk and ε per feature (one
        number when every released feature gets the same, else one per feature), the weights'
        name and, unless they split ε equally, the digest of their split (``weights_digest``: that
        of the weights file they came from); when a ceiling lowered the ε spent, the ε asked
        (``epsilon_asked``) beside it."""
        released = self.bounds.released
        per = self.feature_epsilons[released]
        out: dict[str, Any] = {
            "mechanism": self.name,
            "epsilon": self.epsilon,
            **({} if self.epsilon_asked is None else {"epsilon_asked": self.epsilon_asked}),
            "epsilon_per_feature": float(per[0]) if np.all(per == per[0]) else self.feature_epsilons.tolist(),
            "weights": self.bounds.weights_name,
        }
        if not self.bounds.equal_weights:
            out["weights_digest"] = self.bounds.weights_digest()
        out["chunk_length"] = self.chunk_length
        if not released.all():
            out["dropped_features"] = [n for n, r in zip(self.bounds.names, released, strict=True) if not r]
        return out
