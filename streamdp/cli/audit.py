"""``streamdp audit``: an end-to-end privacy audit of each mechanism, that can fail.

The options are the privacy group of :class:`~streamdp.config.SessionConfig` (ε, chunk length,
k, bounds, …); each audited mechanism is that configuration with one mechanism, transform,
sensitivity and k (the configured k, else both the public default and ``private``), built by
:meth:`~streamdp.config.SessionConfig.mechanism_instance` with every feature. Each runs from raw
chunks through the privatizer to the published message bytes (:mod:`streamdp.privacy.audit`).
``--mechanisms``, ``--transforms`` and ``--sensitivities`` list several values at once (a single
``--mechanism``, ``--transform`` or ``--sensitivity`` is that list's only value); a transform,
sensitivity or k goes to the mechanisms that take it, and one that no audited mechanism takes is
refused.

The real-time gaze channel (``--channel gaze``) is audited too: each gaze mechanism
(``--gaze-mechanisms``, default both) at the configured ``--gaze-epsilon``, ``--gaze-w`` and
``--gaze-rate`` (whether or not ``--gaze-channel`` is given), from raw gaze streams through the
channel to the tick messages' bytes, with its publish times in a live session
(:func:`~streamdp.privacy.audit.gaze_timing.audit_gaze_channel`). ``--channel`` defaults to both
channels, or to the one whose mechanisms are named (``--mechanisms`` or ``--transforms`` …:
features; ``--gaze-mechanisms``: gaze). The exit status is 1 when any audit fails. Its cost
(mechanisms × ``--runs``) is estimated first: refused beyond the machine's memory, announced over a
minute, its progress shown per mechanism (:mod:`streamdp.cli.progress`).
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import replace
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError
from ..privacy.gaze_mechanisms import GAZE_MECHANISMS
from ..privacy.mechanisms import MECHANISMS
from .cost import audit_cost
from .evaluate import grid_axis
from .format import counted
from .gaze_options import gaze_option_names, name_gaze_option
from .options import (
    _GIVEN_DEST,
    GivenValue,
    add_config_options,
    checked,
    config_from,
    field_choices,
    option_name,
    reads,
)
from .parsing import COUNT, FRACTION, POSITIVE, SEED
from .progress import Progress, preview, progress_after

#: the mechanism parameters audited over, beyond what the configuration fixes
_PARAMETERS = ("transform", "k", "sensitivity")
#: the channels ``--channel`` chooses from
CHANNELS = ("features", "gaze", "all")
#: the options that name the features channel's mechanisms, and the gaze channel's: (lists, single)
_FEATURE_OPTIONS = (("mechanisms", "transforms", "sensitivities"), ("mechanism", "transform", "sensitivity"))
_GAZE_OPTIONS = (("gaze_mechanisms",), ("gaze_mechanism",))
#: the configuration fields it reads: what builds the mechanisms it audits; not the unit of privacy
#: (it audits one release) nor --gaze-channel (the gaze channel is audited whenever --channel says)
READS = reads("privacy", "gaze", but=("unit", "budget", "w", "identity", "ledger_dir", "gaze_channel"))


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "audit",
        help="empirical privacy audit: a high-confidence lower bound on ε",
        conflict_handler="resolve",  # its own --seed replaces the configuration's
    )
    p.add_argument(
        "--mechanisms", nargs="+", choices=tuple(MECHANISMS), help="mechanisms to audit (default: all of them)"
    )
    for many, field in (("--transforms", "transform"), ("--sensitivities", "sensitivity")):
        p.add_argument(many, nargs="+", choices=field_choices(field), help="where a mechanism takes it (default: all)")
    p.add_argument(
        "--channel",
        choices=CHANNELS,
        help="the channel audited: the feature chunks, the real-time gaze ticks, or both (default: both, "
        "or the one whose mechanisms are named)",
    )
    p.add_argument(
        "--gaze-mechanisms",
        nargs="+",
        choices=tuple(GAZE_MECHANISMS),
        help="gaze mechanisms to audit (default: all of them)",
    )
    p.add_argument(
        "--gaze-distance",
        type=POSITIVE,
        help="the gaze displacement (degrees, L1) between neighbouring inputs (default: the power of two "
        "at most 1/ε per tick, at most 1°)",
    )
    p.add_argument("--runs", type=COUNT, default=2000, help="evaluation runs per neighbouring input, ≥ 20")
    p.add_argument("--alpha", type=FRACTION, default=0.01, help="1 − confidence of the bound, strictly between 0 and 1")
    add_config_options(p, READS)
    p.add_argument("--seed", type=SEED, default=0, action=GivenValue, help="seed of the audit's noise")
    p.set_defaults(handler=run, chunk_length=32)


def audited_configs(base: SessionConfig, args: argparse.Namespace) -> list[SessionConfig]:
    """``base`` with each audited mechanism × every transform and sensitivity it takes; a
    parameter a mechanism does not take is left unset for it.

    Raises
    ------
    StreamdpError
        A list option and its single form are both given, or a parameter was set that none of
        the audited mechanisms takes.
    """
    names = grid_axis(args, "mechanism", "mechanisms", tuple(MECHANISMS))
    values: dict[str, list[Any]] = {
        "transform": grid_axis(args, "transform", "transforms", field_choices("transform")),
        "k": [base.k] if base.k is not None else [None, "private"],
        "sensitivity": grid_axis(args, "sensitivity", "sensitivities", field_choices("sensitivity")),
    }
    given = {"transform": args.transforms or base.transform, "k": base.k}
    given["sensitivity"] = args.sensitivities or base.sensitivity
    for param in _PARAMETERS:
        if given[param] is not None and not any(param in MECHANISMS[m].parameters for m in names):
            raise StreamdpError(f"{option_name(param)} applies to none of the audited mechanisms ({', '.join(names)})")
    out = []
    for name in names:
        takes = MECHANISMS[name].parameters
        axes = [values[p] if p in takes else [None] for p in _PARAMETERS]
        for combo in itertools.product(*axes):
            out.append(replace(base, mechanism=name, **dict(zip(_PARAMETERS, combo, strict=True))))
    return out


def audited_channels(args: argparse.Namespace) -> tuple[str, ...]:
    """The channels to audit: ``--channel``, else the one whose mechanisms the options name,
    else both.

    Raises
    ------
    StreamdpError
        An option of one channel with ``--channel`` naming only the other.
    """
    given: set[str] = getattr(args, _GIVEN_DEST, set())

    def named(options: tuple[tuple[str, ...], tuple[str, ...]]) -> list[str]:
        lists, singles = options
        return [o for o in lists if getattr(args, o, None) is not None] + [o for o in singles if o in given]

    features, gaze = named(_FEATURE_OPTIONS), named(_GAZE_OPTIONS)
    channel = args.channel
    if channel is None:
        channel = "features" if features and not gaze else "gaze" if gaze and not features else "all"
    wrong = features if channel == "gaze" else gaze if channel == "features" else []
    if wrong:
        raise StreamdpError(f"{option_name(wrong[0])} does not apply to --channel {channel}")
    return ("features", "gaze") if channel == "all" else (channel,)


def gaze_configs(base: SessionConfig, args: argparse.Namespace) -> list[SessionConfig]:
    """``base`` with the gaze channel on, once per audited gaze mechanism.

    Raises
    ------
    StreamdpError
        A gaze parameter the mechanism refuses (named as options).
    """
    out = []
    for name in grid_axis(args, "gaze_mechanism", "gaze_mechanisms", tuple(GAZE_MECHANISMS)):
        config = replace(base, gaze_channel=True, gaze_mechanism=name)
        try:
            mech = config.gaze_mechanism_instance()
        except (TypeError, ValueError) as exc:
            options = f"--gaze-mechanism {name} --gaze-epsilon {config.gaze_epsilon:g} --gaze-w {config.gaze_w}"
            raise StreamdpError(f"{options}: {name_gaze_option(str(exc))}") from None
        distance = args.gaze_distance
        if distance is not None and mech is not None and distance > min(mech.field):
            raise StreamdpError(
                f"--gaze-distance must be at most the field's half-extents {mech.field}, got {distance:g}"
            )
        out.append(config)
    return out


def run(args: argparse.Namespace) -> int:
    if args.runs < 20:
        raise StreamdpError(f"--runs must be ≥ 20, got {args.runs}")
    channels = audited_channels(args)
    with gaze_option_names():
        base = config_from(args)
    # everything is built before the first line is printed: a bad option fails at once
    mechanisms = (
        [checked(c).mechanism_instance() for c in audited_configs(base, args)] if "features" in channels else []
    )
    gazes = gaze_configs(base, args) if "gaze" in channels else []
    seed = base.seed if base.seed is not None else 0
    cost = audit_cost(audits=len(mechanisms), gaze_audits=len(gazes), runs=args.runs, chunk_length=base.chunk_length)
    long = preview(cost, "audit")
    total = len(mechanisms) + len(gazes)
    show, delay = not args.quiet, progress_after(long)
    with Progress("audit", estimate=cost.seconds, total=total, unit="mechanism", show=show, delay=delay) as progress:
        failed = _audit_features(mechanisms, args, seed, progress) if mechanisms else 0
        if gazes:
            failed += _audit_gaze(gazes, args, seed, progress)
    return 1 if failed else 0


def _audit_features(mechanisms: list[Any], args: argparse.Namespace, seed: int, progress: Progress) -> int:
    """Audit the chunk mechanisms, a line each; the number that failed."""
    from ..privacy.audit import audit_mechanism

    confidence = f"{counted(args.runs, 'run')} per input, {100 * (1 - args.alpha):.4g} % confidence"
    print(f"ε per feature; lower bound and scale check at {confidence}")
    print(
        f"{'mechanism':13s} {'transform':9s} {'k':>7s} {'sensitivity':16s} {'ε claimed':>9s} "
        f"{'ε lower bound (est.)':>21s} {'scale check':>12s} {'fields':>7s}  verdict"
    )
    failed = 0
    for mech in mechanisms:
        res = audit_mechanism(mech, runs=args.runs, alpha=args.alpha, seed=seed)
        progress.advance()
        d = res.description
        failed += not res.passed
        scale = "n/a" if res.scale_epsilon is None else f"{res.scale_epsilon:.3g}/{res.scale_claimed:.3g}"
        scale += "" if res.scale_passed else "!"
        fields = "ok" if not res.leaking_fields else "LEAK"
        print(
            f"{res.mechanism:13s} {d.get('transform', '-')!s:9s} {d.get('k', '-')!s:>7s} "
            f"{d.get('sensitivity', '-')!s:16s} {res.epsilon_claimed:9.3g} "
            f"{res.epsilon_lower_bound:12.3f} ({res.epsilon_estimate:6.3f}) {scale:>12s} {fields:>7s}  "
            f"{'pass' if res.passed else 'FAIL'}"
        )
        for key in res.leaking_fields:
            print(f"    {key}: differs between neighbouring inputs and is not noised (ε = ∞)")
        if res.selection_rho is not None:
            spent = "within" if res.selection_passed else "MORE than"
            print(
                f"    private k: spends {res.selection_rho:.3g}× its declared share (lower bound "
                f"{res.selection_rho_lower:.3g}×): {spent} its share"
            )
        for note in res.notes:
            print(f"    {note}")
    return failed


def _ok(passed: bool, fail: str = "FAIL") -> str:
    return "ok" if passed else fail


def _audit_gaze(configs: list[SessionConfig], args: argparse.Namespace, seed: int, progress: Progress) -> int:
    """Audit the gaze channel with each gaze mechanism, a line each; the number that failed."""
    from ..privacy.audit.gaze_timing import audit_gaze_channel

    c = configs[0]
    fx, fy = (a / 2 for a in c.event_config(None).fov_deg)
    confidence = f"{counted(args.runs, 'run')} per input, {100 * (1 - args.alpha):.4g} % confidence"
    print(
        f"gaze channel: ε per degree of L1 displacement, ε_w = {c.gaze_epsilon:g} over w = {c.gaze_w} ticks at "
        f"{c.gaze_rate:g} Hz, field ±{fx:g}° × ±{fy:g}°; lower bound and scale check at {confidence}"
    )
    print(
        f"{'mechanism':13s} {'distance':>9s} {'pair':26s} {'ε claimed':>9s} {'ε lower bound (est.)':>21s} "
        f"{'scale check':>12s} {'lattice':>7s} {'accounting':>10s} {'fields':>7s} {'publish times':>13s}  verdict"
    )
    failed = 0
    for config in configs:
        res = audit_gaze_channel(config, distance=args.gaze_distance, trials=args.runs, alpha=args.alpha, seed=seed)
        progress.advance()
        failed += not res.passed
        scale = f"{res.scale_epsilon:.3g}/{res.scale_claimed:.3g}" + ("" if res.scale_passed else "!")
        print(
            f"{res.mechanism:13s} {res.distance:8.4g}° {res.pair:26s} {res.epsilon_claimed:9.3g} "
            f"{res.epsilon_lower_bound:12.3f} ({res.epsilon_estimate:6.3f}) {scale:>12s} "
            f"{_ok(res.on_lattice):>7s} {_ok(res.accounting_ok):>10s} {_ok(res.fields_passed, 'LEAK'):>7s} "
            f"{_ok(res.publish_times_ok is not False, 'DIFFER'):>13s}  {'pass' if res.passed else 'FAIL'}"
        )
        for key in res.leaking_fields:
            print(f"    {key}: differs between inputs and is not noised (ε = ∞)")
        print(f"    ε keys: {res.epsilon_keys}")
        print(f"    publish times: {res.publish_times}")
        for note in res.notes:
            print(f"    {note}")
    return failed
