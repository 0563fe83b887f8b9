"""The white-box checks of the gaze audit, on decoded tick messages (:class:`~.gaze_wire.WireRuns`).

- :func:`on_lattice`: every released coordinate is a multiple of the described lattice (Mironov 2012).
- :func:`accounting_ok`: the ε each tick reports respects the per-tick maximum and the window total,
  and the ε spent so far is their running sum.
- :func:`scale_check`: the measured Laplace scale of each publication is at least the one its
  reported ε calls for.
- :func:`leaking_fields`: every field but the noised ones is the same for every input and run.
- :func:`epsilon_keys_check`: the per-tick ε keys add nothing to the positions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...kernels.geometry import degrees_to_norm
from ..gaze_base import GazeMechanism
from .channel import differing_fields
from .gaze_wire import NOISED, WireRuns
from .stats import laplace_scale_interval

_F64 = NDArray[np.float64]
#: relative slack for float sums of per-tick ε (they are counted exactly by the mechanisms)
TOLERANCE = 1e-9
#: the pseudo-field named when the number of ticks differs between inputs or runs
TICK_COUNT = "(the number of ticks)"
#: the released normalized position must be the degrees mapped with the public field of view (to
#: this relative precision: the mapping's vectorized tan may differ in the last bits)
_NORM_RTOL = 1e-12


def on_lattice(values: _F64, lattice: float) -> bool:
    """Every value is a finite multiple of ``lattice``."""
    steps = values / lattice
    return bool(np.all(np.isfinite(steps)) and np.all(steps == np.rint(steps)))


def accounting_ok(runs: WireRuns, mech: GazeMechanism) -> bool:
    """The reported ε per tick lies in ``[0, ε_tick,max]``, any ``w`` consecutive ticks add up to at
    most ``ε_w``, and the ε spent so far is the running sum of the ticks' ε."""
    eps = runs.epsilon
    tick_max = float(mech.describe()["epsilon_tick_max_per_degree"])
    if not np.all(np.isfinite(eps)) or np.any(eps > tick_max * (1 + TOLERANCE)) or np.any(eps < 0):
        return False
    w = min(mech.w, eps.shape[1])
    sums = np.cumsum(np.pad(eps, ((0, 0), (1, 0))), axis=1)
    if not np.all(sums[:, w:] - sums[:, :-w] <= mech.epsilon * (1 + TOLERANCE)):
        return False
    return bool(np.allclose(runs.spent, sums[:, 1:], rtol=TOLERANCE, atol=0.0))


def norm_follows(runs: WireRuns, fov_deg: tuple[float, float]) -> bool:
    """The released ``x_norm``, ``y_norm`` are the released degrees mapped with the public field
    of view: a function of the noised position, nothing else."""
    nx, ny = degrees_to_norm(runs.values[..., 0], runs.values[..., 1], fov_deg)
    return bool(np.allclose(runs.norm, np.stack([nx, ny], axis=-1), rtol=_NORM_RTOL, atol=0.0))


def scale_check(
    cases: Sequence[tuple[WireRuns, _F64]], mech: GazeMechanism, alpha: float
) -> tuple[float, float, float]:
    """``(ε allowed, ε claimed, ratio)``: the ε per degree the measured noise of the largest
    publication allows, the ε it reports, and their ratio for every publication at once.

    A tick whose position is new is a publication spending its reported ε less the test's
    (``epsilon_test_per_degree``; none on a stream's first tick); its noise per axis, from the
    clipped input ``x`` (L, 2) of each case, times that ε is Laplace of scale ≥ 1 when the claim
    holds. The ratio is 1 over that scale's upper confidence bound (``1 − alpha``): above 1, the
    measured noise is too small for the ε reported.
    """
    fx, fy = mech.field
    test = float(mech.describe().get("epsilon_test_per_degree", 0.0))
    z: list[_F64] = []
    claim = 0.0
    for runs, x in cases:
        cx = np.clip(np.asarray(x, dtype=np.float64), (-fx, -fy), (fx, fy))
        n = runs.ticks
        spend = runs.epsilon - np.where(np.arange(n) > 0, test, 0.0)
        mask = runs.published() & (spend > 0)
        if not mask.any():
            continue
        z.append((np.abs(runs.values - cx[:n]) * spend[..., None])[mask])
        claim = max(claim, float(spend[mask].max()))
    if not z:
        return 0.0, 0.0, 0.0
    hi = laplace_scale_interval(np.concatenate(z), alpha)[2]
    ratio = 1.0 / hi if hi > 0 else np.inf
    return claim * ratio, claim, ratio


def leaking_fields(groups: Sequence[Sequence[WireRuns]]) -> list[str]:
    """The fields outside the noised ones that differ between any two runs of the streams in one
    group (streams with the same number of ticks, whatever their gaze): each is a raw function of
    the gaze or of the noise. :data:`TICK_COUNT` when the number of ticks differs."""
    leaks: set[str] = set()
    for group in groups:
        if len({n for runs in group for n in runs.lengths}) > 1:
            leaks.add(TICK_COUNT)
        reps: list[list[dict[str, Any]]] = [f for runs in group for f in runs.public.values()]
        if len(reps) > 1:
            leaks |= set(differing_fields(reps, NOISED))
    return sorted(leaks)


def epsilon_keys_check(same_seed: Sequence[WireRuns], every: Sequence[WireRuns]) -> tuple[bool, str]:
    """Whether the ε keys are public, and how.

    They must be a function of the released positions alone: every run of ``every`` whose ticks
    are new at the same places reports the same ε sequence (geo-bd: a tick spends its
    publication's share exactly when its position is new, and that share follows from the earlier
    publications; geo-uniform: one constant). The answer says whether they are moreover identical
    for every input under the same noise seed (``same_seed``: streams of one length, each run
    from the same seed).
    """
    table: dict[tuple[int, bytes], tuple[bytes, bytes]] = {}
    for runs in every:
        pub = runs.published()
        for j in range(pub.shape[0]):
            key = (runs.ticks, pub[j].tobytes())
            value = (runs.epsilon[j].tobytes(), runs.spent[j].tobytes())
            if table.setdefault(key, value) != value:
                return False, "DEPEND on the gaze beyond the published positions (ε = ∞)"
    first = same_seed[0] if same_seed else None
    if first is not None and all(
        r.epsilon.shape == first.epsilon.shape
        and np.array_equal(r.epsilon, first.epsilon, equal_nan=True)
        and np.array_equal(r.spent, first.spent, equal_nan=True)
        for r in same_seed
    ):
        return True, "identical for every input under one noise seed"
    return True, (
        "differ between inputs under one noise seed, but are a function of the published positions "
        "(a tick spends its publication's share exactly when its position is new)"
    )


__all__ = [
    "TICK_COUNT",
    "TOLERANCE",
    "accounting_ok",
    "epsilon_keys_check",
    "leaking_fields",
    "norm_follows",
    "on_lattice",
    "scale_check",
]
