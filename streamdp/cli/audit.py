"""``streamdp audit``: an empirical lower bound on each mechanism's ε, next to its claim."""

from __future__ import annotations

import argparse
import itertools
from typing import Any

from ..errors import StreamdpError
from ..privacy.mechanisms import MECHANISMS
from .options import field_choices


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("audit", help="empirical privacy audit: a high-confidence lower bound on ε")
    p.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=tuple(MECHANISMS))
    transforms, sensitivities = field_choices("transform"), field_choices("sensitivity")
    p.add_argument(
        "--transforms", nargs="+", default=list(transforms), choices=transforms, help="for mechanisms that take one"
    )
    p.add_argument(
        "--sensitivities",
        nargs="+",
        default=list(sensitivities),
        choices=sensitivities,
        help="for mechanisms that take one",
    )
    p.add_argument("--epsilon", type=float, default=1.0, help="ε per feature per chunk (default: %(default)s)")
    p.add_argument("--chunk-length", type=int, default=32, help="steps per chunk (default: %(default)s)")
    p.add_argument("--k", type=int, default=2, help="coefficients kept, where a mechanism takes k (default: 2)")
    p.add_argument("--feature", default="fixation_rate", help="the feature whose bounds are audited")
    p.add_argument("--runs", type=int, default=20000, help="runs per neighbouring input (default: %(default)s)")
    p.add_argument("--alpha", type=float, default=0.01, help="1 - confidence of the bound (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="seed of the audit's noise (default: %(default)s)")
    p.set_defaults(handler=run)


def _variants(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The parameter sets to audit for mechanism ``name``: every transform × sensitivity it takes."""
    takes = MECHANISMS[name].parameters
    axes: dict[str, list[Any]] = {}
    if "transform" in takes:
        axes["transform"] = list(args.transforms)
    if "sensitivity" in takes:
        axes["sensitivity"] = list(args.sensitivities)
    if "k" in takes:
        axes["k"] = [args.k]
    return [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*axes.values())]


def run(args: argparse.Namespace) -> int:
    from ..privacy import default_profile, make_mechanism
    from ..privacy.audit import audit
    from ..schema import FEATURE_INDEX

    if args.feature not in FEATURE_INDEX:
        raise StreamdpError(f"--feature {args.feature!r} is not one of the 52 feature names")
    one = default_profile().select([FEATURE_INDEX[args.feature]])
    mechanisms = [
        make_mechanism(name, epsilon=args.epsilon, bounds=one, chunk_length=args.chunk_length, **params)
        for name in args.mechanisms
        for params in _variants(name, args)
    ]
    print(
        f"{'mechanism':10s} {'transform':9s} {'k':>3s} {'sensitivity':12s} {'ε claimed':>9s} "
        f"{'ε lower bound':>13s}  result  ({args.runs} runs per input, {1 - args.alpha:.0%} confidence)"
    )
    failed = 0
    for mech in mechanisms:
        res = audit(mech, runs=args.runs, alpha=args.alpha, seed=args.seed)
        d = res.config
        failed += not res.passed
        print(
            f"{res.mechanism:10s} {d.get('transform', '-'):9s} {d.get('k', '-')!s:>3s} "
            f"{d.get('sensitivity', '-'):12s} {res.epsilon_claimed:9.3g} {res.epsilon_lower_bound:13.3f}  "
            f"{'ok' if res.passed else 'VIOLATED'}"
        )
    return 1 if failed else 0
