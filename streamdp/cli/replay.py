"""``streamdp replay``: recorded sessions through the same private session as the relay,
sanitized features to files.

SIGINT and SIGTERM stop the worker processes and remove the staging folder: nothing partial is
left, and the exit status is 130 or 143. What it prints, as what it writes, never holds the seed:
a seeded run says "noise reproducible, not private". Each recording's line says what the public
plausibility bounds left out of its gaze, when anything.

With ``--lsl`` each recording's releases are also played on Lab Streaming Layer streams
``streamdp-<recording>-features`` (and ``-gaze`` with ``--gaze-channel``), in real time, with the
recording's own timestamps plus one offset that each stream's description states
(:mod:`streamdp.offline.lsl_playback`): the replay waits for an inlet on each stream before its
first release (``--lsl-wait`` bounds the wait; a recording no inlet took exits 1, its files
written), and runs the recordings in this process, one after another.

A recording some of whose steps fall outside the public grid's chunk slots gets one short line
(how many steps are in whole chunks); ``-v`` gives the whole explanation.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ..errors import InputError
from .common import SCHEDULER_NEEDS_DASK, add_csv_options, add_executor_options, csv_layout, refuse_eye_camera_data
from .console import say
from .contract import Excludes, Needs
from .format import counted, json_line
from .gaze_options import gaze_options_checked
from .options import add_config_file_option, add_config_options, reads
from .parsing import COUNT, POSITIVE, verbosity

#: the exit statuses, as ``streamdp replay --help`` states them
EPILOG = (
    "exit status: 0 at least one recording written (any skipped are named on stderr); 1 every recording "
    "skipped (nothing written), or with --lsl a recording whose streams no inlet took (its files written); "
    "2 bad input; 130 / 143 interrupted (SIGINT / SIGTERM), nothing partial left"
)

#: the configuration fields it reads: all but the live group's (a recording is read in time order)
READS = reads("privacy", "features", "gaze")
#: options that do nothing without another
CONFLICTS = (
    SCHEDULER_NEEDS_DASK,
    Needs("--lsl-wait", "--lsl", "it is how long the LSL streams wait for an inlet"),
    Needs("--publish-reproducible-noise-not-private", "--lsl", "seeded noise is published only onto LSL streams"),
    Excludes("--lsl", "--executor=dask", "the LSL streams are played from this process, where the releases are made"),
    Excludes("--lsl", "--jobs", "the LSL streams are played from this process, one recording after another"),
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "replay", help="recorded sessions through the private pipeline, sanitized features to files", epilog=EPILOG
    )
    p.add_argument("paths", nargs="+", help="recordings (any format streamdp reads)")
    p.add_argument("--out", required=True, help="output folder (refused if it exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--jobs", type=COUNT, help="local worker processes, ≥ 1 (default: all cores)")
    add_executor_options(p)
    p.add_argument("--json", action="store_true", help="print one JSON object per recording on stdout")
    p.add_argument(
        "--lsl",
        action="store_true",
        help="also play each recording's releases on Lab Streaming Layer streams, in real time, with the "
        "recording's timestamps (waits for an inlet; extra lsl; default: off)",
    )
    p.add_argument(
        "--lsl-wait",
        type=POSITIVE,
        metavar="SECONDS",
        help="with --lsl: how long each recording's streams wait for an inlet (default: until stopped)",
    )
    p.add_argument(
        "--publish-reproducible-noise-not-private",
        action="store_true",
        help="with --lsl and --seed: publish anyway (tests and demos only: whoever knows the seed removes the noise)",
    )
    add_config_file_option(p)
    add_config_options(p, READS)
    add_csv_options(p)
    p.set_defaults(handler=run)


def _lsl(args: argparse.Namespace, config: Any) -> Any:
    """What ``--lsl`` asks (None without it), refused now when it cannot be done."""
    if not args.lsl:
        return None
    from ..offline.lsl_playback import LslReplay

    lsl = LslReplay(
        wait=args.lsl_wait,
        publish_reproducible_noise_not_private=args.publish_reproducible_noise_not_private,
        say=say,
    )
    try:
        lsl.check(config)
    except ImportError as exc:
        raise InputError(f"--lsl: {exc}") from None
    except ValueError as exc:
        flag = "--publish-reproducible-noise-not-private"
        raise InputError(f"--lsl: {exc}".replace("publish_reproducible_noise_not_private", flag)) from None
    return lsl


def _preview(args: argparse.Namespace, config: Any, layout: Any) -> Any:
    """Refuse or announce a step finer than the default: the work then grows with the user's
    number, not only with the recordings (the first one read tells the size of each). The
    progress to show while the replay runs (a context manager)."""
    import contextlib

    from ..config import SessionConfig
    from .common import load_recording
    from .cost import feature_cost
    from .progress import Progress, preview, progress_after, terminal_bar

    if config.step >= SessionConfig().step:
        return contextlib.nullcontext()
    try:
        rec = load_recording(args.paths[0], None, 0, layout, config, lambda _: None)  # said by the replay
    except Exception:  # the replay says why it cannot read it, with the others
        return contextlib.nullcontext()
    seconds = float(rec.gaze.duration) if len(rec.gaze) else 0.0
    rate = len(rec.gaze) / seconds if seconds else 0.0
    cost = feature_cost(seconds=seconds, rate=rate, step=config.step, window=config.window)
    cost = replace(cost, seconds=cost.seconds * len(args.paths))
    long = preview(cost, "replay")
    show = not args.quiet and not terminal_bar()  # on a terminal, the replay's own bar
    return Progress("replay", estimate=cost.seconds, show=show, delay=progress_after(long))


def run(args: argparse.Namespace) -> int:
    from ..offline.replay import noise_statement, replay, shared_result

    config = gaze_options_checked(args)  # bad options fail here, before any work starts
    layout = csv_layout(args, config)
    if layout is None:
        for path in args.paths:
            refuse_eye_camera_data(path)
    lsl = _lsl(args, config)
    with _preview(args, config, layout):
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
            lsl=lsl,
        )
    unplayed = 0
    alone = len(results) == 1
    for r in results:
        if args.json:
            print(json_line(shared_result(r)), flush=True)
        if r.warning:
            print(f"streamdp: warning: {r.path}: {r.warning}", file=sys.stderr)
        if r.skipped:
            if not alone:
                print(f"skipped {r.path}: {r.skipped}", file=sys.stderr)
            continue
        if r.note:
            say(f"streamdp replay: {r.path}: {r.note if verbosity(args) > 0 else _short_note(r.note)}")
        if r.implausible and args.json:
            say(f"streamdp replay: {r.path}: {r.implausible}")
        if r.lsl_problem:
            unplayed += 1
            print(f"streamdp: warning: {r.path}: {r.lsl_problem}", file=sys.stderr)
        if not args.json:
            noise = f"noise {noise_statement(r.seed)}"
            ticks = f", {counted(r.ticks, 'gaze tick')}" if config.gaze_channel else ""
            played = f" and LSL {' and '.join(r.lsl)}" if r.lsl else ""
            left_out = f"; {r.implausible}" if r.implausible else ""
            print(
                f"{r.path}: {counted(r.chunks, 'sanitized chunk')}{ticks} ({noise}) → {args.out}/{r.name}.*"
                f"{played}{left_out}"
            )
    if not any(r.chunks for r in results):
        # one recording: its reason is the error; several: each said why above
        every = f"every recording was skipped ({counted(len(results), 'recording')})"
        why = f"{results[0].path}: {results[0].skipped}" if alone else every
        print(f"streamdp replay: error: {why}; nothing written to {args.out}", file=sys.stderr)
        return 1
    skipped = sum(1 for r in results if r.skipped)
    if skipped:
        say(f"streamdp replay: {len(results) - skipped} of {counted(len(results), 'recording')} written to "
            f"{args.out}, {skipped} skipped (named above)")  # fmt: skip
    return 1 if unplayed else 0


def _short_note(note: str) -> str:
    """The first clause of a replay's coverage note (how many steps, how many in whole chunks), and
    where the rest is: the explanation of the public grid's chunk slots is for ``-v``."""
    head = note.split("; ", 1)[0]
    return f"{head}; the other steps fall outside the public grid's chunk slots and are not released (-v: why)"
