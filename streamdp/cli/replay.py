"""``streamdp replay``: recorded sessions through the same private session as the relay,
sanitized features to files."""

from __future__ import annotations

import argparse
import sys

from .options import add_config_options, config_from


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "replay", help="recorded sessions through the private pipeline, sanitized features to files"
    )
    p.add_argument("paths", nargs="+", help="recordings (any format streamdp reads)")
    p.add_argument("--out", required=True, help="output folder (refused if it exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--jobs", type=int, help="local worker processes (default: all cores)")
    p.add_argument(
        "--executor",
        choices=("processes", "dask"),
        default="processes",
        help="local processes, or a dask.distributed cluster (default: %(default)s)",
    )
    p.add_argument("--scheduler", help="dask.distributed scheduler address, with --executor dask")
    p.add_argument("--quiet", action="store_true", help="no progress bar (shown when tqdm is installed)")
    add_config_options(p, ["privacy", "features"])
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..offline.replay import replay

    config = config_from(args).check()  # bad options fail here, before any work starts
    results = replay(
        args.paths,
        args.out,
        config,
        overwrite=args.overwrite,
        jobs=args.jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        progress=not args.quiet,
    )
    failed = 0
    for r in results:
        if r.skipped:
            failed += r.skipped.startswith("cannot read")
            print(f"skipped {r.path}: {r.skipped}", file=sys.stderr)
        else:
            print(f"{r.path}: {r.chunks} sanitized chunks (seed {r.seed}) → {args.out}/{r.name}.*", file=sys.stderr)
    return 1 if failed else 0
