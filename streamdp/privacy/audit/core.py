"""The end-to-end audit of one mechanism: black-box ε lower bound, scale check, fields check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..mechanisms import Mechanism
from .channel import K_CHOSEN, Channel, decode, differing_fields
from .model import NoiseModel, noise_model
from .pairs import NeighbourPair, field_probes, neighbour_pairs
from .selection import selection_check
from .stats import ThresholdTest, best_test, evaluate_test, laplace_scale_interval

_F64 = NDArray[np.float64]
ChannelFactory = Callable[[Mechanism, int], Channel]


@dataclass(frozen=True)
class AuditReport:
    """What the audit of one mechanism found.

    ``epsilon_lower_bound`` holds with confidence ``confidence`` for ``feature`` (the marginal of
    one feature's released column, compared with that feature's claimed ε); ``scale_epsilon`` is
    the privacy loss the measured noise scale allows on the worst reachable pair under the
    mechanism's own noise model (None: no model); ``leaking_fields`` are the message fields that
    differ between neighbouring inputs without being noised (each one means ε = ∞).
    """

    mechanism: str
    description: dict[str, Any]
    epsilon_chunk: float
    epsilon_claimed: float
    epsilon_lower_bound: float
    epsilon_estimate: float
    confidence: float
    feature: str
    family: str
    statistic: str
    scale_epsilon: float | None
    scale_claimed: float
    scale_feature: str
    scale_note: str
    leaking_fields: tuple[str, ...]
    runs: int
    notes: tuple[str, ...] = field(default=())
    selection_rho_lower: float | None = None
    selection_rho: float | None = None

    @property
    def bound_passed(self) -> bool:
        return self.epsilon_lower_bound <= self.epsilon_claimed * (1 + 1e-9)

    @property
    def scale_passed(self) -> bool:
        return self.scale_epsilon is None or self.scale_epsilon <= self.scale_claimed * (1 + 1e-9)

    @property
    def selection_passed(self) -> bool:
        """A privately chosen k spends at most its declared share (None: k is public)."""
        return self.selection_rho_lower is None or self.selection_rho_lower <= 1.0

    @property
    def passed(self) -> bool:
        return self.bound_passed and self.scale_passed and self.selection_passed and not self.leaking_fields

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"


def claimed_epsilons(mech: Mechanism) -> _F64:
    """ε per feature as the mechanism states it: ``feature_epsilons``, else the description's
    ``epsilon_per_feature``, else the chunk's ε split equally."""
    per = getattr(mech, "feature_epsilons", None)
    f = mech.n_features
    if per is not None:
        return np.broadcast_to(np.asarray(per, dtype=np.float64), (f,)).copy()
    d = mech.describe().get("epsilon_per_feature")
    if isinstance(d, (int, float)):
        return np.full(f, float(d))
    return np.full(f, float(mech.epsilon_chunk) / f)


#: the name of the statistic that reads the privately chosen k
_K_STAT = "private k"


@dataclass
class _Stat:
    """One statistic per feature, fitted on the selection runs: ``apply`` maps runs to (R, F)."""

    name: str
    apply: Callable[[_F64, list[dict[str, Any]]], _F64]


def _lr_stat(model: NoiseModel, vx: _F64, vy: _F64) -> _Stat:
    cx, cy = model.coordinates(np.swapaxes(vx, 1, 2)), model.coordinates(np.swapaxes(vy, 1, 2))
    a, b = np.median(cx, axis=0), np.median(cy, axis=0)  # (F, m)
    lam = np.mean(np.abs(cx - a), axis=0) + np.mean(np.abs(cy - b), axis=0)
    lam = np.where(lam > 0, lam / 2, np.inf)

    def apply(v: _F64, _: list[dict[str, Any]]) -> _F64:
        c = model.coordinates(np.swapaxes(v, 1, 2))
        return np.asarray(np.sum((np.abs(c - a) - np.abs(c - b)) / lam, axis=2))

    return _Stat("likelihood ratio", apply)


def _lda_stat(vx: _F64, vy: _F64) -> _Stat:
    f = vx.shape[2]
    w = np.empty((vx.shape[1], f))
    for j in range(f):
        px, py = vx[:, :, j], vy[:, :, j]
        cov = (np.cov(px, rowvar=False) + np.cov(py, rowvar=False)) / 2
        ridge = 1e-9 * max(float(np.trace(cov)) / cov.shape[0], 1e-300)
        w[:, j] = np.linalg.solve(cov + ridge * np.eye(cov.shape[0]), py.mean(axis=0) - px.mean(axis=0))

    def apply(v: _F64, _: list[dict[str, Any]]) -> _F64:
        return np.asarray(np.einsum("rnf,nf->rf", v, w))

    return _Stat("linear discriminant", apply)


def _k_stat(f: int) -> _Stat:
    def apply(v: _F64, fields: list[dict[str, Any]]) -> _F64:
        return np.asarray([row.get(K_CHOSEN, [0] * f) for row in fields], dtype=np.float64).reshape(len(fields), f)

    return _Stat(_K_STAT, apply)


def _claims(st: _Stat, eps: _F64, desc: dict[str, Any]) -> _F64:
    """The ε a statistic is held to per feature: a privately chosen k is a function of the
    selection alone, so it is held to the selection's own share of ε, not the feature's whole ε."""
    if st.name == _K_STAT:
        return np.asarray(eps * float(desc.get("k_epsilon_share", 1.0)))
    return eps


def _runs(
    factory: ChannelFactory, mech: Mechanism, seed: int, x: _F64, count: int
) -> tuple[_F64, list[dict[str, Any]]]:
    return decode(factory(mech, seed).publish([x] * count))


def _scale_check(
    model: NoiseModel, pairs: list[NeighbourPair], samples: list[tuple[_F64, _F64]], alpha: float, eps: _F64
) -> tuple[float | None, int, str]:
    """The worst ratio over features of (loss the measured scale allows) / (claimed ε), as
    (loss, feature, note); the scale is each group's Laplace scale, its upper confidence bound."""
    if not model.fixed_k:
        return None, 0, "n/a: private k varies the released coefficients"
    f = eps.size
    groups = len(model.groups)
    upper = np.empty((groups, f))
    for g, (_, rows) in enumerate(model.groups):
        resid = []
        for vx, _vy in samples:
            c = model.coordinates(np.swapaxes(vx, 1, 2))[..., rows]  # (R, F, mg)
            half = c.shape[0] // 2
            resid.append(np.abs(c[half:] - np.median(c[:half], axis=0)))
        r = np.concatenate(resid, axis=0)  # (R', F, mg)
        for j in range(f):
            upper[g, j] = laplace_scale_interval(r[:, j, :], alpha / (f * groups))[2]
    loss = np.zeros(f)
    for p in pairs:
        if p.reference is None:
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(np.stack(p.reference) > 0, np.stack(p.reference) / upper, 0.0)
        loss = np.maximum(loss, terms.sum(axis=0))
    # a feature of weight 0 has no noise to measure: it must be one public constant, the same
    # in every run of every input (else it leaks at ε = ∞)
    dropped = eps == 0
    if dropped.any():
        first = samples[0][0][0, 0]
        varies = np.zeros(f, dtype=bool)
        for vx, vy in samples:
            varies |= np.any(vx != first, axis=(0, 1)) | np.any(vy != first, axis=(0, 1))
        loss = np.where(dropped, np.where(varies, np.inf, 0.0), loss)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(eps > 0, loss / eps, np.where(loss > 0, np.inf, 0.0))
    j = int(np.argmax(ratio))
    return float(loss[j]), j, "Laplace scale, upper bound at the audit's confidence"


def audit_mechanism(
    mech: Mechanism,
    *,
    runs: int = 2000,
    selection_runs: int | None = None,
    alpha: float = 0.01,
    seed: int = 0,
    channel: ChannelFactory = Channel,
    probe_runs: int = 8,
) -> AuditReport:
    """Audit ``mech`` end to end, from raw chunks to the published message bytes.

    Per candidate pair of neighbouring raw chunks (:func:`~streamdp.privacy.audit.pairs.neighbour_pairs`),
    ``selection_runs`` releases of each input choose the best (pair, feature, statistic,
    threshold) test; ``runs`` fresh releases of each input of the chosen pair measure it, giving
    an ε lower bound with confidence ``1 − alpha``. The noise scale is checked against the bounds
    under the mechanism's noise model, and every unnoised field is compared exactly across
    varied inputs.

    Raises
    ------
    ValueError
        ``runs`` or ``selection_runs`` below 20, or ``alpha`` outside (0, 1).

    Examples
    --------
    >>> from streamdp.privacy import default_profile, make_mechanism
    >>> m = make_mechanism("lpa", epsilon=52.0, bounds=default_profile(), chunk_length=4)
    >>> report = audit_mechanism(m, runs=100, selection_runs=100)
    >>> report.verdict, report.leaking_fields
    ('pass', ())
    """
    sel = runs // 2 if selection_runs is None else selection_runs
    if runs < 20 or sel < 20:
        raise ValueError(f"runs and selection_runs must be ≥ 20, got {runs} and {sel}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    desc = mech.describe()
    eps = claimed_epsilons(mech)
    names = mech.bounds.names
    model = noise_model(desc)
    notes: list[str] = []
    ref_model = model if model is not None else noise_model({"mechanism": "lpa", "chunk_length": mech.chunk_length})
    assert ref_model is not None
    pairs = neighbour_pairs(ref_model, mech.bounds)
    noised = frozenset({"values", *([K_CHOSEN] if desc.get("k") == "private" else [])})

    # selection: every family, fresh seeds; choose the test with the highest bound above the claim
    samples = []
    best: tuple[float, int, int, ThresholdTest, _Stat] | None = None
    fields_seen = []
    for i, p in enumerate(pairs):
        vx, fx = _runs(channel, mech, seed * 1000 + 2 * i + 1, p.x, sel)
        vy, fy = _runs(channel, mech, seed * 1000 + 2 * i + 2, p.y, sel)
        samples.append((vx, vy))
        fields_seen.append((fx, fy))
        described = model is not None and all(model.consistent(np.swapaxes(v[:50], 1, 2)) for v in (vx, vy))
        if model is not None and not described:
            notes.append(f"the {model.name} noise model does not describe the released values")
            model = None
        stats = [_lda_stat(vx, vy)]
        if model is not None:
            stats.insert(0, _lr_stat(model, vx, vy))
        if K_CHOSEN in noised:
            stats.append(_k_stat(len(names)))
        for st in stats:
            sx, sy = st.apply(vx, fx), st.apply(vy, fy)
            claim = _claims(st, eps, desc)
            for j in range(len(names)):
                test, bound = best_test(sx[:, j], sy[:, j], alpha)
                if eps[j] == 0 and bound <= 0:
                    continue  # a public constant (weight 0) that does not vary: nothing to test
                score = bound - claim[j]
                if best is None or score > best[0]:
                    best = (score, i, j, test, st)
    assert best is not None
    _, i, j, test, st = best
    claimed = _claims(st, eps, desc)
    p = pairs[i]
    vx, fx = _runs(channel, mech, seed * 1000 + 501, p.x, runs)
    vy, fy = _runs(channel, mech, seed * 1000 + 502, p.y, runs)
    eps_lb, eps_hat = evaluate_test(test, st.apply(vx, fx)[:, j], st.apply(vy, fy)[:, j], alpha)

    # unnoised fields: varied probes under one seed, and every run of the pairs
    probe_inputs = field_probes(mech.bounds, mech.chunk_length)
    probes = [_runs(channel, mech, seed * 1000 + 900, x, probe_runs)[1] for x in probe_inputs]
    leaks = set(differing_fields(probes, noised))
    for fx_sel, fy_sel in fields_seen:
        leaks |= set(differing_fields([fx_sel, fy_sel], noised))
    leaks |= set(differing_fields([fx, fy], noised))

    rho_lower = rho = None
    if K_CHOSEN in noised:
        inputs = [q for pair in pairs for q in (pair.x, pair.y)] + [p.x, p.y]
        seen = [f for pair_fields in fields_seen for f in pair_fields] + [fx, fy]
        rho_lower, rho, _ = selection_check(mech, inputs, seen, alpha)

    if model is None:
        scale_eps, sj, scale_note = None, 0, "n/a: no noise model of this mechanism"
    else:
        scale_eps, sj, scale_note = _scale_check(model, pairs, samples, alpha, eps)
    return AuditReport(
        mechanism=str(desc.get("mechanism")),
        description=desc,
        epsilon_chunk=float(mech.epsilon_chunk),
        epsilon_claimed=float(claimed[j]),
        epsilon_lower_bound=eps_lb,
        epsilon_estimate=eps_hat,
        confidence=1.0 - alpha,
        feature=names[j],
        family=p.family,
        statistic=st.name,
        scale_epsilon=scale_eps,
        scale_claimed=float(eps[sj]),
        scale_feature=names[sj],
        scale_note=scale_note,
        leaking_fields=tuple(sorted(leaks)),
        runs=runs,
        notes=tuple(notes),
        selection_rho_lower=rho_lower,
        selection_rho=rho,
    )


__all__ = ["AuditReport", "ChannelFactory", "audit_mechanism", "claimed_epsilons"]
