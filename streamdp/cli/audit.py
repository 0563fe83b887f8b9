"""``streamdp audit``: an end-to-end privacy audit of each mechanism, that can fail.

The options are the privacy group of :class:`~streamdp.config.SessionConfig` (ε, chunk length,
k, bounds, …); each audited mechanism is that configuration with one mechanism, transform,
sensitivity and k (the configured k, else both the public default and ``private``), built by
:meth:`~streamdp.config.SessionConfig.mechanism_instance` with every feature. Each runs from raw
chunks through the privatizer to the published message bytes (:mod:`streamdp.privacy.audit`).
``--mechanisms``, ``--transforms`` and ``--sensitivities`` list several values at once (a single
``--mechanism``, ``--transform`` or ``--sensitivity`` is that list's only value); a transform,
sensitivity or k goes to the mechanisms that take it, and one that no audited mechanism takes is
refused. The exit status is 1 when any audit fails.
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
    p.add_argument("--runs", type=COUNT, default=2000, help="evaluation runs per neighbouring input, ≥ 20")
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


def run(args: argparse.Namespace) -> int:
    from ..privacy.audit import audit_mechanism

    if args.runs < 20:
        raise StreamdpError(f"--runs must be ≥ 20, got {args.runs}")
    base = config_from(args)
    mechanisms = [checked(config).mechanism_instance() for config in audited_configs(base, args)]
    confidence = f"{counted(args.runs, 'run')} per input, {100 * (1 - args.alpha):.4g} % confidence"
    print(f"ε per feature; lower bound and scale check at {confidence}")
    print(
        f"{'mechanism':13s} {'transform':9s} {'k':>7s} {'sensitivity':16s} {'ε claimed':>9s} "
        f"{'ε lower bound (est.)':>21s} {'scale check':>12s} {'fields':>7s}  verdict"
    )
    failed = 0
    seed = base.seed if base.seed is not None else 0
    for mech in mechanisms:
        res = audit_mechanism(mech, runs=args.runs, alpha=args.alpha, seed=seed)
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
    return 1 if failed else 0
