"""``streamdp evaluate``: utility, re-identification and task accuracy over mechanisms × ε × n
(needs the ``evaluate`` extra: scikit-learn and matplotlib)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import StreamdpError
from ..privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from .common import require_extra
from .options import add_config_options, config_from

#: every mechanism the evaluation can sanitize with (the "none" baseline is always included)
CHOICES = (*MECHANISMS, *OFFLINE_MECHANISMS)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "evaluate",
        help="utility, re-identification and task accuracy over mechanisms × ε × n",
        description="Needs the optional extra: pip install 'streamdp[evaluate]'.",
    )
    p.add_argument("--manifest", help="CSV with recording,participant,task (default: synthetic people)")
    p.add_argument("--out", default="evaluation", help="output folder (default: %(default)s)")
    p.add_argument(
        "--mechanisms", nargs="+", default=list(CHOICES), choices=CHOICES, help="(default: all of them)"
    )
    p.add_argument("--epsilons", nargs="+", type=float, default=[1.0, 10.0, 100.0, 1000.0], help="ε per feature")
    p.add_argument("--chunk-lengths", nargs="+", type=int, default=[32], help="steps per chunk (default: 32)")
    p.add_argument("--people", type=int, default=6, help="synthetic people without a manifest (default: 6)")
    p.add_argument("--seconds", type=float, default=240.0, help="seconds per synthetic recording (default: 240)")
    p.add_argument("--seed", type=int, default=0, help="seed of the noise and synthetic people (default: 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_config_options(p, ["features"])
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for module in ("sklearn", "matplotlib"):
        require_extra(module, "evaluate", "evaluate")
    from ..offline.evaluate import GridPoint, evaluate, feature_signals, read_manifest, synthetic_study, write_results
    from ..readers import read_recording

    config = config_from(args)
    if args.manifest:
        items = [(read_recording(p), person, task) for p, person, task in read_manifest(args.manifest)]
    else:
        print(
            f"no manifest: {args.people} synthetic people, each reading and searching for {args.seconds:g} s",
            file=sys.stderr,
        )
        items = synthetic_study(args.people, args.seconds, args.seed)
    recs = feature_signals(items, config)
    if len({r.participant for r in recs}) < 2 or len({r.task for r in recs}) < 2:
        raise StreamdpError("evaluation needs at least two participants and two tasks with enough gaze")
    grid = [GridPoint("none", 0.0, n) for n in args.chunk_lengths[:1]]
    grid += [GridPoint(m, e, n) for m in args.mechanisms for n in args.chunk_lengths for e in args.epsilons]
    rows = evaluate(recs, grid, seed=args.seed, progress=not args.quiet, config=config)
    out = Path(args.out)
    paths = write_results(rows, out)
    print((out / "results.md").read_text())
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0
