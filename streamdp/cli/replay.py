"""``streamdp replay``: recorded sessions through the same private session as the relay,
sanitized features to files.

SIGINT and SIGTERM stop the worker processes and remove the staging folder: nothing partial is
left, and the exit status is 130 or 143. What it prints, as what it writes, never holds the seed:
a seeded run says "noise reproducible, not private".
"""

from __future__ import annotations

import argparse
import sys

from .common import add_csv_options, csv_layout
from .console import say
from .contract import Needs
from .format import counted, json_line
from .gaze_options import gaze_options_checked
from .options import add_config_file_option, add_config_options, reads
from .parsing import COUNT

#: the configuration fields it reads: all but the live group's (a recording is read in time order)
READS = reads("privacy", "features", "gaze")
#: options that do nothing without another
CONFLICTS = (Needs("--scheduler", "--executor=dask", "it is the address of a dask.distributed scheduler"),)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "replay", help="recorded sessions through the private pipeline, sanitized features to files"
    )
    p.add_argument("paths", nargs="+", help="recordings (any format streamdp reads)")
    p.add_argument("--out", required=True, help="output folder (refused if it exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--jobs", type=COUNT, help="local worker processes, ≥ 1 (default: all cores)")
    p.add_argument(
        "--executor",
        choices=("processes", "dask"),
        default="processes",
        help="local processes, or a dask.distributed cluster",
    )
    p.add_argument(
        "--scheduler", help="dask.distributed scheduler address, with --executor dask (default: a local cluster)"
    )
    p.add_argument("--json", action="store_true", help="print one JSON object per recording on stdout")
    add_config_file_option(p)
    add_config_options(p, READS)
    add_csv_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ..offline.replay import noise_statement, replay, shared_result

    config = gaze_options_checked(args)  # bad options fail here, before any work starts
    layout = csv_layout(args, config)
    results = replay(
        args.paths,
        args.out,
        config,
        overwrite=args.overwrite,
        jobs=args.jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        progress=not args.quiet,
        layout=layout,
    )
    unreadable = 0
    alone = len(results) == 1
    for r in results:
        if args.json:
            print(json_line(shared_result(r)), flush=True)
        if r.warning:
            print(f"streamdp: warning: {r.path}: {r.warning}", file=sys.stderr)
        if r.skipped:
            unreadable += r.skipped.startswith("cannot read")
            if not alone:
                print(f"skipped {r.path}: {r.skipped}", file=sys.stderr)
            continue
        if r.note:
            say(f"streamdp replay: {r.path}: {r.note}")
        if not args.json:
            noise = f"noise {noise_statement(r.seed)}"
            ticks = f", {counted(r.ticks, 'gaze tick')}" if config.gaze_channel else ""
            print(f"{r.path}: {counted(r.chunks, 'sanitized chunk')}{ticks} ({noise}) → {args.out}/{r.name}.*")
    if not any(r.chunks for r in results):
        # one recording: its reason is the error; several: each said why above
        every = f"every recording was skipped ({counted(len(results), 'recording')})"
        why = f"{results[0].path}: {results[0].skipped}" if alone else every
        print(f"streamdp replay: error: {why}; nothing written to {args.out}", file=sys.stderr)
        return 1
    return 1 if unreadable else 0
