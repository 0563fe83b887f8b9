"""An end-to-end audit of a real-time gaze mechanism that can fail, on the published tick messages.

Worst-case neighbouring gaze streams are built from the public field: positions ``distance``
degrees (L1) apart at the centre, at the field's corner, diagonally, beyond the edge (clipping must
bring it back to ``distance``) and, for ``w > 1``, over ``min(w, window_ticks)`` consecutive ticks.
Each becomes a raw gaze stream (normalized scene positions, :mod:`~streamdp.privacy.audit.gaze_wire`)
and runs through a fresh :class:`~streamdp.gaze_channel.GazeChannel` per run — ticks, clipping,
noise, sealing — to the msgpack bytes of every tick's message, decoded as a subscriber decodes
them. Every check reads those bytes; any of them fails the audit:

1. **ε lower bound** (black box, Jagielski et al. 2020; Nasr et al. 2021): a threshold test on a
   statistic of the released positions is chosen on a selection sample and counted on a fresh
   evaluation sample; Clopper–Pearson bounds give an ε lower bound with confidence ``1 − α``,
   which must not exceed the claim for that pair: ``distance`` × the per-degree ε the mechanism
   states for it, ``min(ε_w, L·ε_tick,max)`` for ``L ≤ w`` differing ticks, or the ε the messages
   report for those ticks when that is the same public constant in every run (uniform; a stream's
   first tick), whichever is smaller: the mechanism is held to the tighter of its claims.
2. **Noise scale** (model based): each publication's noise, times the ε its tick reports, must
   have a Laplace scale of at least 1 per axis (upper confidence bound).
3. **Lattice** (exactness, Mironov 2012): every released coordinate, also for inputs with
   arbitrary low bits, must be a multiple of the lattice the mechanism describes; a float
   mechanism's outputs are not, and their set depends on the input's low bits.
4. **Accounting**: the ε each tick reports is at most the stated per-tick maximum, any ``w``
   consecutive ticks add up to at most ``ε_w``, and the ε spent is their running sum.
5. **Fields**: over the pairs and over probe streams of one length (steady, a saccade, beyond the
   edge, a gap, a blink), every message field but the positions and the per-tick ε keys is the
   same for every input and run (the normalized position must follow from the degrees); the ε
   keys must be identical under one noise seed or a function of the published positions.

The publish-time check needs a live session: :func:`~streamdp.privacy.audit.gaze_timing.audit_gaze_channel`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...gaze import GazeBatch
from ...gaze_channel import GazeChannel
from ...stages.event_config import EventConfig
from ...stages.gaze_ticks import DEFAULT_TICK_RATE
from ..gaze_base import GazeMechanism
from .gaze_checks import (
    TICK_COUNT,
    TOLERANCE,
    accounting_ok,
    epsilon_keys_check,
    leaking_fields,
    norm_follows,
    on_lattice,
    scale_check,
)
from .gaze_wire import GazeChannelFactory, GazeWire, WireRuns, channel_fov, gaze_stream
from .stats import ThresholdTest, best_test, evaluate_test

_F64 = NDArray[np.float64]
#: how many of the best tests on the selection sample are measured on fresh runs
EVALUATED = 3
#: the longest run of differing ticks audited (a longer window's claim is beyond any test's reach)
WINDOW_TICKS = 16
#: the length of the field probes (ticks)
PROBE_TICKS = 8


@dataclass(frozen=True, eq=False)
class GazePair:
    """Two neighbouring streams (L, 2) of raw positions in degrees and the ε the mechanism claims
    for them."""

    name: str
    x: _F64
    y: _F64
    claim: float


@dataclass(frozen=True)
class GazeAuditReport:
    """What the audit of one gaze mechanism found; ``epsilon_lower_bound`` holds with confidence
    ``confidence`` for ``pair`` and is compared with that pair's ``epsilon_claimed``;
    ``scale_epsilon`` is the ε per degree the measured noise of the largest publication allows
    (``scale_claimed`` the ε it reports); ``leaking_fields`` are the message fields that depend on
    the gaze or the noise without being noised; ``publish_times`` says whether the release times
    depend on the gaze (None: not checked, see :func:`~.gaze_timing.audit_gaze_channel`)."""

    mechanism: str
    description: dict[str, Any]
    distance: float
    pair: str
    statistic: str
    epsilon_claimed: float
    epsilon_lower_bound: float
    epsilon_estimate: float
    confidence: float
    on_lattice: bool
    accounting_ok: bool
    runs: int
    scale_epsilon: float = 0.0
    scale_claimed: float = 0.0
    leaking_fields: tuple[str, ...] = ()
    epsilon_keys_ok: bool = True
    epsilon_keys: str = ""
    publish_times_ok: bool | None = None
    publish_times: str = "not checked"
    notes: tuple[str, ...] = ()

    @property
    def bound_passed(self) -> bool:
        return self.epsilon_lower_bound <= self.epsilon_claimed * (1 + TOLERANCE)

    @property
    def scale_passed(self) -> bool:
        return self.scale_epsilon <= self.scale_claimed * (1 + TOLERANCE)

    @property
    def fields_passed(self) -> bool:
        return not self.leaking_fields and self.epsilon_keys_ok

    @property
    def passed(self) -> bool:
        checks = (self.bound_passed, self.scale_passed, self.on_lattice, self.accounting_ok, self.fields_passed)
        return all(checks) and self.publish_times_ok is not False

    @property
    def verdict(self) -> str:
        return "pass" if self.passed else "fail"


def _beyond(f: float) -> float:
    """A point beyond a half-extent ``f`` (within 90° when ``f`` is: a camera can map it)."""
    return f + (min(10 * f, (90.0 - f) / 2) if f < 90.0 else 10 * f)


def gaze_pairs(mech: GazeMechanism, distance: float, *, window: int | None = None) -> list[GazePair]:
    """The worst-case neighbouring streams of ``mech`` at L1 ``distance`` (≤ the field's
    half-extents); the last pair differs in ``min(w, window)`` consecutive ticks (default ``w``)."""
    fx, fy = mech.field
    d = distance
    w = mech.w if window is None else min(mech.w, window)
    tick_max = float(mech.describe()["epsilon_tick_max_per_degree"])

    def pair(name: str, x: list[tuple[float, float]], y: list[tuple[float, float]]) -> GazePair:
        claim = d * min(mech.epsilon, len(x) * tick_max)
        return GazePair(name, np.array(x, dtype=np.float64), np.array(y, dtype=np.float64), claim)

    pairs = [
        pair("centre, one tick", [(0.0, 0.0)], [(d, 0.0)]),
        pair("corner, one tick", [(fx - d, fy)], [(fx, fy)]),
        pair("diagonal, one tick", [(0.0, 0.0)], [(d / 2, d / 2)]),
        # clipping must bring the far point back to the edge, d from the other
        pair("beyond the edge, one tick", [(-fx + d, -fy)], [(-_beyond(fx), -fy)]),
    ]
    if w > 1:
        pairs.append(pair(f"centre, {w} ticks", [(0.0, 0.0)] * w, [(d, 0.0)] * w))
    return pairs


def probe_streams(mech: GazeMechanism, rate: float, fov_deg: tuple[float, float]) -> list[tuple[str, GazeBatch]]:
    """Streams of :data:`PROBE_TICKS` ticks whose gaze differs in every way the public fields
    must not show: a steady fixation, a saccade, gaze beyond the field (clipped), a gap without
    samples and a blink (samples below the confidence threshold), each starting and ending with gaze."""
    fx, fy = mech.field
    n = PROBE_TICKS
    steady = np.tile([0.1 * fx, -0.1 * fy], (n, 1))
    saccade = np.where(np.arange(n)[:, None] < n // 2, [-0.5 * fx, 0.3 * fy], [0.6 * fx, -0.4 * fy])
    middle = (np.arange(n) >= 2) & (np.arange(n) < n - 2)
    return [
        ("steady", gaze_stream(steady, rate, fov_deg)),
        ("saccade", gaze_stream(saccade, rate, fov_deg)),
        ("beyond the edge", gaze_stream(np.tile([-_beyond(fx), _beyond(fy)], (n, 1)), rate, fov_deg)),
        ("gap", gaze_stream(steady, rate, fov_deg, keep=~middle)),
        ("blink", gaze_stream(steady, rate, fov_deg, confidence=np.where(middle, 0.0, 1.0))),
    ]


Statistic = Callable[[_F64], _F64]


def _statistics(p: GazePair, field: tuple[float, float]) -> list[tuple[str, Statistic]]:
    """Statistics of the runs' outputs (R, L, 2) that separate the pair: the per-axis Laplace
    log-likelihood ratio (positions clipped between the two inputs, summed), the first tick's
    and the mean projection on the displacement."""
    fx, fy = field
    cx = np.clip(p.x, (-fx, -fy), (fx, fy))
    cy = np.clip(p.y, (-fx, -fy), (fx, fy))
    lo, hi = np.minimum(cx, cy), np.maximum(cx, cy)
    sign = np.sign(cy - cx)
    direction = (cy - cx)[0]

    def ratio(v: _F64) -> _F64:
        return np.asarray(np.sum(sign * np.clip(v, lo, hi), axis=(1, 2)))

    def first(v: _F64) -> _F64:
        return np.asarray((v[:, 0, :] - cx[0]) @ direction)

    def mean(v: _F64) -> _F64:
        return np.asarray(np.mean((v - cx) @ direction, axis=1))

    stats: list[tuple[str, Statistic]] = [("Laplace likelihood ratio", ratio), ("first tick projection", first)]
    if p.x.shape[0] > 1:
        stats.append(("mean projection", mean))
    return stats


def _claim(p: GazePair, distance: float, rx: WireRuns, ry: WireRuns) -> float:
    """The tighter of the mechanism's two claims for the pair: the stated bound, and ``distance`` ×
    the ε the messages report for the differing ticks when that is one public constant in every run."""
    reported = np.concatenate((rx.epsilon.sum(axis=1), ry.epsilon.sum(axis=1)))
    if reported.size and np.all(reported == reported[0]) and math.isfinite(float(reported[0])):
        return min(p.claim, distance * float(reported[0]))
    return p.claim


def _check_arguments(mech: object, distance: object, trials: int, sel: int, alpha: float) -> None:
    if not isinstance(mech, GazeMechanism):
        raise TypeError(f"mech must be a GazeMechanism, got {type(mech).__name__}")
    if not (isinstance(distance, (int, float)) and math.isfinite(distance) and 0 < distance <= min(mech.field)):
        raise ValueError(f"distance must be finite, > 0 and at most the field's half-extents, got {distance!r}")
    if trials < 20 or sel < 20:
        raise ValueError(f"trials and selection_trials must be ≥ 20, got {trials} and {sel}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")


def audit_gaze_mechanism(
    mech: GazeMechanism,
    *,
    distance: float = 1.0,
    trials: int = 2000,
    alpha: float = 0.01,
    seed: int = 0,
    selection_trials: int | None = None,
    rate: float = DEFAULT_TICK_RATE,
    min_confidence: float = EventConfig().min_confidence,
    channel: GazeChannelFactory = GazeChannel,
    window_ticks: int = WINDOW_TICKS,
    probe_runs: int = 32,
) -> GazeAuditReport:
    """Audit ``mech`` end to end, from raw gaze streams ``distance`` degrees apart to the tick
    messages' bytes, through ``channel`` (a :class:`~streamdp.gaze_channel.GazeChannel` at ``rate``
    ticks a second, field of view twice ``mech.field``).

    For every pair of :func:`gaze_pairs`, ``selection_trials`` runs (default ``trials // 2``) of
    each stream rank the (pair, statistic, threshold) tests by their bound above the pair's claim;
    ``trials`` fresh runs of each pair among the :data:`EVALUATED` best measure them, each at
    ``alpha/EVALUATED``, and the one furthest above its claim is reported: an ε lower bound with
    confidence ``1 − alpha``. The scale, lattice, accounting and fields checks (module docstring)
    read the same messages, the probes' ``probe_runs`` runs each.

    Raises
    ------
    TypeError
        ``mech`` is not a :class:`~streamdp.privacy.gaze_base.GazeMechanism`.
    ValueError
        ``distance`` not finite, > 0 and within the field; ``trials`` or ``selection_trials``
        below 20; ``alpha`` outside (0, 1); a field of 90° or more.

    Examples
    --------
    >>> from streamdp.privacy.gaze_mechanisms import GazeUniform
    >>> report = audit_gaze_mechanism(GazeUniform(epsilon=2.0, w=2), trials=200, probe_runs=4)
    >>> report.verdict, report.on_lattice, report.leaking_fields, report.epsilon_lower_bound <= report.epsilon_claimed
    ('pass', True, (), True)
    """
    sel = trials // 2 if selection_trials is None else selection_trials
    _check_arguments(mech, distance, trials, sel, alpha)
    desc = mech.describe()
    lattice = float(desc.get("lattice_deg", 0.0))
    notes: list[str] = []
    if not (lattice > 0 and math.frexp(lattice)[0] == 0.5):
        notes.append(f"the described lattice {lattice!r} is not a power of two")
    fov = channel_fov(mech)

    def wire(s: int) -> GazeWire:
        return GazeWire(mech, s, rate=rate, min_confidence=min_confidence, channel=channel)

    pairs = gaze_pairs(mech, float(distance), window=window_ticks)
    streams = [(gaze_stream(p.x, rate, fov), gaze_stream(p.y, rate, fov)) for p in pairs]
    seen: list[tuple[WireRuns, _F64]] = []
    groups: dict[int, list[WireRuns]] = {}
    candidates: list[tuple[float, int, str, Statistic, ThresholdTest]] = []
    claims = []
    miscounted = False
    for i, (p, (sx, sy)) in enumerate(zip(pairs, streams, strict=True)):
        rx = wire(seed * 1000 + 2 * i + 1).runs(sx, sel)
        ry = wire(seed * 1000 + 2 * i + 2).runs(sy, sel)
        seen += [(rx, p.x), (ry, p.y)]
        groups.setdefault(p.x.shape[0], []).extend([rx, ry])
        claims.append(_claim(p, float(distance), rx, ry))
        if not rx.ticks == ry.ticks == p.x.shape[0]:
            miscounted = True  # not one message per tick of the stream: no statistic reads them
            continue
        for name, stat in _statistics(p, mech.field):
            test, bound = best_test(stat(rx.values), stat(ry.values), alpha)
            candidates.append((bound - claims[i], i, name, stat, test))
    # the best few tests, each measured on fresh runs at α/EVALUATED (a union bound): one lucky
    # tail chosen on the selection sample cannot hide the others
    candidates.sort(key=lambda c: c[0], reverse=True)
    chosen = candidates[:EVALUATED]
    fresh: dict[int, tuple[WireRuns, WireRuns]] = {}
    results = []
    for _, i, name, stat, test in chosen:
        p = pairs[i]
        if i not in fresh:
            sx, sy = streams[i]
            fresh[i] = (
                wire(seed * 1000 + 501 + 2 * i).runs(sx, trials),
                wire(seed * 1000 + 502 + 2 * i).runs(sy, trials),
            )
            seen += [(fresh[i][0], p.x), (fresh[i][1], p.y)]
            groups[p.x.shape[0]].extend(fresh[i])
            claims[i] = min(claims[i], _claim(p, float(distance), *fresh[i]))
        rx, ry = fresh[i]
        if not rx.ticks == ry.ticks == p.x.shape[0]:
            miscounted = True
            continue
        lb, hat = evaluate_test(test, stat(rx.values), stat(ry.values), alpha / len(chosen))
        results.append((lb - claims[i], lb, hat, i, name))
    # no statistic could read the messages (a tick count that varies): no bound, and a fail below
    _, eps_lb, eps_hat, i, name = max(results, key=lambda r: r[0], default=(0.0, 0.0, 0.0, 0, "none"))

    # probes with arbitrary low bits: the outputs' set must not depend on them
    fx, fy = mech.field
    low_bits = np.array([[0.1 + 2.0**-40, -0.3 - 2.0**-43], [fx * 0.7310585786300049, fy * -0.2689414213699951]])
    for j in range(low_bits.shape[0]):
        runs = wire(seed * 1000 + 900 + j).runs(gaze_stream(low_bits[j : j + 1], rate, fov), 64)
        seen.append((runs, low_bits[j : j + 1]))
        groups.setdefault(1, []).append(runs)
    # field probes: one seed for all, so that a field depending on the noise alone shows too
    probes = [wire(seed * 1000 + 950).runs(stream, probe_runs) for _, stream in probe_streams(mech, rate, fov)]
    groups.setdefault(PROBE_TICKS, []).extend(probes)

    runs_seen = [r for r, _ in seen] + probes
    on_grid = not notes and all(on_lattice(r.values, lattice) for r in runs_seen)
    if not on_grid:
        notes.append("released positions off the described lattice: their set depends on the input's low bits")
    accounting = all(accounting_ok(r, mech) for r in runs_seen)
    if not accounting:
        notes.append(
            "the reported ε per tick exceeds the stated per-tick maximum or window total, or ε spent is not their sum"
        )
    leaks = leaking_fields(list(groups.values()))
    if miscounted and TICK_COUNT not in leaks:
        leaks.append(TICK_COUNT)
    if not all(norm_follows(r, fov) for r in runs_seen):
        leaks.append("values (x_norm, y_norm): not the released degrees mapped with the public field of view")
    keys_ok, keys = epsilon_keys_check(probes, runs_seen)
    scale_eps, scale_claim, _ = scale_check([c for c in seen if c[0].ticks == c[1].shape[0]], mech, alpha)
    return GazeAuditReport(
        mechanism=str(desc.get("mechanism")),
        description=desc,
        distance=float(distance),
        pair=pairs[i].name,
        statistic=name,
        epsilon_claimed=claims[i],
        epsilon_lower_bound=eps_lb,
        epsilon_estimate=eps_hat,
        confidence=1.0 - alpha,
        on_lattice=on_grid,
        accounting_ok=accounting,
        runs=trials,
        scale_epsilon=scale_eps,
        scale_claimed=scale_claim,
        leaking_fields=tuple(leaks),
        epsilon_keys_ok=keys_ok,
        epsilon_keys=keys,
        notes=tuple(notes),
    )


__all__ = [
    "EVALUATED",
    "PROBE_TICKS",
    "WINDOW_TICKS",
    "GazeAuditReport",
    "GazePair",
    "audit_gaze_mechanism",
    "gaze_pairs",
    "probe_streams",
]
