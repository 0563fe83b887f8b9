"""``streamdp audit``: an empirical lower bound on each mechanism's ε, next to its claim.

The options are the privacy group of :class:`~streamdp.config.SessionConfig` (ε, chunk length,
k, bounds, …); each audited mechanism is that configuration with one mechanism, transform and
sensitivity, built by :meth:`~streamdp.config.SessionConfig.mechanism_instance` and narrowed to
the audited feature's bounds. ``--mechanisms``, ``--transforms`` and ``--sensitivities`` list
several values at once (a single ``--mechanism``, ``--transform`` or ``--sensitivity`` is that
list's only value); a transform, sensitivity or k goes to the mechanisms that take it, and one
that no audited mechanism takes is refused.
"""

from __future__ import annotations

import argparse
import itertools
from dataclasses import replace
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError
from ..privacy.mechanisms import MECHANISMS
from .evaluate import grid_axis
from .format import counted
from .options import GivenValue, add_config_options, checked, config_from, field_choices, option_name
from .parsing import COUNT, FRACTION

#: the mechanism parameters audited over, beyond what the configuration fixes
_PARAMETERS = ("transform", "k", "sensitivity")


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
    p.add_argument("--feature", default="fixation_rate", help="the feature whose bounds are audited")
    p.add_argument("--runs", type=COUNT, default=20000, help="runs per neighbouring input, ≥ 1")
    p.add_argument(
        "--alpha", type=FRACTION, default=0.01, help="1 − confidence of the bound, strictly between 0 and 1"
    )
    add_config_options(p, ["privacy"])
    p.add_argument("--seed", type=int, default=0, action=GivenValue, help="seed of the audit's noise")
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
        "k": [base.k],
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


def run(args: argparse.Namespace) -> int:
    from ..privacy.audit import audit

    base = config_from(args)
    names = base.bounds_profile().names
    if args.feature not in names:
        raise StreamdpError(f"--feature {args.feature!r} is not one of the {len(names)} feature names")
    feature = [names.index(args.feature)]
    mechanisms = []
    for config in audited_configs(base, args):
        mech = checked(config).mechanism_instance()
        # the same mechanism on the audited feature's bounds only: the audit is one feature at a time
        mechanisms.append(type(mech)(**{**mech.arguments(), "bounds": mech.bounds.select(feature)}))
    confidence = f"{counted(args.runs, 'run')} per input, {100 * (1 - args.alpha):.4g} % confidence"
    print(
        f"{'mechanism':10s} {'transform':9s} {'k':>3s} {'sensitivity':12s} {'ε claimed':>9s} "
        f"{'ε lower bound':>13s}  result  ({confidence})"
    )
    failed = 0
    seed = base.seed if base.seed is not None else 0
    for mech in mechanisms:
        res = audit(mech, runs=args.runs, alpha=args.alpha, seed=seed)
        d = res.config
        failed += not res.passed
        print(
            f"{res.mechanism:10s} {d.get('transform', '-'):9s} {d.get('k', '-')!s:>3s} "
            f"{d.get('sensitivity', '-'):12s} {res.epsilon_claimed:9.3g} {res.epsilon_lower_bound:13.3f}  "
            f"{'ok' if res.passed else 'VIOLATED'}"
        )
    return 1 if failed else 0
