"""What the auditor expects of a mechanism, from its public description alone.

A :class:`NoiseModel` is the auditor's own reference of a chunk mechanism, built from
``mechanism.describe()`` (never from the mechanism's internals): the linear map ``G`` from a
released column (n values) to the *coordinates* that carry the noise, grouped by noise scale
(every value for LPA; one value per subsampling window for Steil; the ``k`` lowest DFT/DCT
coefficients of the values (CFPA) or of the first value and the differences (Bozkir's DCFPA); the
mean and the coefficients of the differences for the level-keeping DCFPA), the map ``R`` back, and
the *release matrix* ``B`` of each group in the values domain, from which the worst neighbouring
chunks are derived. The black-box tests do not need it; the likelihood-ratio statistic and the
scale check do, and say "no model" for a mechanism it does not describe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..transforms import TRANSFORMS, make_transform

_F64 = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class NoiseModel:
    """The reference model of one mechanism.

    ``coords`` (m × n) maps a released column to its noisy coordinates; ``rebuild`` (n × m) maps
    coordinates back to a column; ``groups`` names the rows that share one noise scale;
    ``release`` holds, per group, the rows of the released numbers as a linear map of the chunk's
    clipped values (for the worst-case pairs); ``fixed_k`` is false when a private k varies which
    coefficients are released (the coordinates are then those of the largest k).
    """

    name: str
    n: int
    coords: _F64
    rebuild: _F64
    groups: tuple[tuple[str, slice], ...]
    release: tuple[_F64, ...]
    fixed_k: bool

    def coordinates(self, values: _F64) -> _F64:
        """The noisy coordinates (..., m) of released columns (..., n)."""
        return np.asarray(np.asarray(values, dtype=np.float64) @ self.coords.T)

    def consistent(self, values: _F64, tolerance: float = 1e-6) -> bool:
        """Whether released columns (..., n) are what the model says: rebuilt from their
        coordinates they come back unchanged."""
        v = np.asarray(values, dtype=np.float64)
        back = self.coordinates(v) @ self.rebuild.T
        scale = max(float(np.max(np.abs(v))), 1e-300)
        return bool(np.max(np.abs(back - v)) <= tolerance * scale)


def _first_and_differences(n: int) -> _F64:
    p = np.eye(n)
    p[1:] -= np.eye(n)[:-1]
    return p


def noise_model(description: dict[str, Any]) -> NoiseModel | None:
    """The reference model of a mechanism described by ``description`` (its ``describe()``), or
    None when the auditor has no model of it.

    Examples
    --------
    >>> noise_model({"mechanism": "dcfpa-bozkir", "chunk_length": 8, "transform": "dct", "k": 2}).coords.shape
    (2, 8)
    >>> noise_model({"mechanism": "steil", "chunk_length": 8, "subsampling_window": 4}).rebuild.shape
    (8, 2)
    >>> noise_model({"mechanism": "someone-elses", "chunk_length": 8}) is None
    True
    """
    name = description.get("mechanism")
    n = int(description["chunk_length"])
    eye = np.eye(n)
    if name == "lpa":
        return NoiseModel("lpa", n, eye, eye, (("values", slice(0, n)),), (eye,), True)
    if name == "steil":
        w = int(description["subsampling_window"])
        hold = np.repeat(np.eye(n // w), w, axis=0)
        return NoiseModel("steil", n, eye[::w], hold, (("draws", slice(0, n // w)),), (eye[::w],), True)
    if name not in ("cfpa", "dcfpa", "dcfpa-bozkir"):
        return None
    kind, k = description.get("transform"), description.get("k")
    if not isinstance(kind, str) or kind not in TRANSFORMS or not (k == "private" or isinstance(k, int)):
        return None
    fixed = k != "private"
    t = make_transform(kind, n, int(k) if fixed else TRANSFORMS[kind].max_k(n))
    a, inv = t.matrix, t.inverse(np.eye(t.m))  # (m, n), (n, m)
    m = t.m
    if name == "cfpa":
        return NoiseModel(name, n, a, inv, (("coefficients", slice(0, m)),), (a,), fixed)
    prep = _first_and_differences(n)
    if name == "dcfpa-bozkir":
        b = a @ prep
        return NoiseModel(name, n, b, np.cumsum(inv, axis=0), (("coefficients", slice(0, m)),), (b,), fixed)
    if "level_share" not in description:
        return None
    # level-keeping DCFPA: the mean, and the coefficients of [0, d₂ … dₙ] (least squares on the steps)
    diff = prep[1:]  # (n-1, n)
    coef = np.linalg.pinv(inv[1:]) @ diff
    centred = np.cumsum(inv, axis=0)
    centred -= centred.mean(axis=0)
    coords = np.vstack((np.full((1, n), 1.0 / n), coef))
    rebuild = np.hstack((np.ones((n, 1)), centred))
    shape = prep.copy()
    shape[0] = 0.0
    groups = (("level", slice(0, 1)), ("coefficients", slice(1, 1 + m)))
    return NoiseModel(name, n, coords, rebuild, groups, (np.full((1, n), 1.0 / n), a @ shape), fixed)


__all__ = ["NoiseModel", "noise_model"]
