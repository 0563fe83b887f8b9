"""``streamdp features``: the unsanitized 52 features of a recording, to a local file.

The format follows the extension: ``.csv``, ``.npz``, or ``.parquet`` (with the ``parquet``
extra); any other is refused before any work. A recording that gives no feature row (shorter
than one window), or none of whose samples reaches ``--min-confidence``, writes nothing and exits
with status 1, saying why; when more than half fall below it, a warning says what share. Rows
that would not fit in memory (a tiny ``--step``) are refused before any is computed, and work over
a minute is announced, then its progress shown (:mod:`streamdp.cli.progress`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..errors import StreamdpError
from ..plausibility import Implausible
from ..schema import FEATURE_NAMES
from ..stages.features import FeatureRows
from .common import (
    SYNTHETIC_RATE,
    SYNTHETIC_SECONDS,
    add_csv_options,
    csv_layout,
    load_recording,
    output_file,
    require_extra,
    write_atomically,
)
from .console import say
from .contract import Excludes
from .cost import feature_cost
from .options import add_config_options, config_from, reads
from .parsing import POSITIVE, SEED
from .progress import Progress, preview, progress_after

#: the output formats, by extension
SUFFIXES = (".csv", ".npz", ".parquet")

#: the configuration fields it reads: the features group (the chunk length too: events are cut where
#: the private pipeline's chunks end, so that the rows are those it would sanitize)
READS = reads("features")
#: options that contradict each other, or do nothing without another
CONFLICTS = (
    Excludes("PATH", "--synthetic", "synthetic gaze is made only when no recording is given"),
    Excludes("PATH", "--seed", "--seed seeds the synthetic gaze; a recording is played as it is"),
)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "features",
        help="UNSANITIZED features of a recording to a local file (for research only)",
        description="Write the raw, unsanitized 52 features of a recording to a local file. The "
        "output is NOT differentially private: keep it local. --camera auto uses the recording's "
        "scene camera; --signal says what the gaze measures; --csv-columns reads a CSV of any layout.",
    )
    p.add_argument("path", nargs="?", help="recording folder or file (default: synthetic gaze)")
    p.add_argument(
        "--out", required=True, help="output file: .csv, .npz, or .parquet (pip install 'streamdp[parquet]')"
    )
    p.add_argument(
        "--synthetic",
        type=POSITIVE,
        metavar="SECONDS",
        help=f"length of synthetic gaze when no path (default: {SYNTHETIC_SECONDS:g})",
    )
    p.add_argument("--seed", type=SEED, help="seed of the synthetic gaze (default: 0)")
    add_config_options(p, READS)
    add_csv_options(p)
    p.set_defaults(handler=run)


def write_feature_rows(rows: FeatureRows, out: Path) -> None:
    """CSV (``t`` then the 52 named columns), ``.npz`` (arrays ``t``, ``values``, ``names``) or
    Parquet (the CSV's columns; needs pyarrow); nothing half-written is ever left under the final
    name.

    Raises
    ------
    InputError
        The file cannot be written.
    """
    suffix = out.suffix.lower()

    def write(tmp: Path) -> None:
        if suffix == ".npz":
            with open(tmp, "wb") as fh:
                np.savez(fh, t=rows.t, values=rows.values, names=np.array(FEATURE_NAMES))
        elif suffix == ".parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            columns = {"t": rows.t, **{name: rows.values[:, i] for i, name in enumerate(FEATURE_NAMES)}}
            pq.write_table(pa.table(columns), tmp)
        else:
            data = np.column_stack([rows.t, rows.values]) if len(rows) else np.empty((0, 1 + len(FEATURE_NAMES)))
            header = ",".join(("t", *FEATURE_NAMES))
            np.savetxt(tmp, data, delimiter=",", header=header, comments="", fmt="%.17g")

    write_atomically(out, write)


def run(args: argparse.Namespace) -> int:
    config = config_from(args)  # bad options fail before anything is read or written
    layout = csv_layout(args, config)
    out = output_file(args.out, SUFFIXES)
    if out.suffix.lower() == ".parquet":
        require_extra("pyarrow", "parquet", "features")
    left_out: list[Implausible] = []
    if args.path is None:  # the size is the user's numbers alone: said before the gaze is made
        seconds = args.synthetic or SYNTHETIC_SECONDS
        cost = feature_cost(
            seconds=seconds, rate=SYNTHETIC_RATE, step=config.step, window=config.window, synthetic=True
        )
        long = preview(cost, "features")
    rec = load_recording(args.path, args.synthetic, args.seed or 0, layout, config, left_out.append)
    if config.blinks == "given" and rec.blinks is None:
        raise StreamdpError(f"{args.path or rec.name}: --blinks given, but the recording has no blink events")
    from ..offline.coverage import GazeTally
    from ..session import Session

    name = args.path or rec.name
    tally = GazeTally(config.min_confidence)
    tally.add(rec.gaze.t, rec.gaze.valid, rec.gaze.confidence)
    unusable, warning = tally.problem()
    if unusable:
        print(f"streamdp features: error: {name}: {unusable}: no feature rows, nothing written", file=sys.stderr)
        return 1
    if warning:
        print(f"streamdp: warning: {name}: {warning}", file=sys.stderr)
    seconds = float(rec.gaze.duration) if len(rec.gaze) else 0.0
    if args.path is not None:  # a recording's size is known once it is read
        rate = len(rec.gaze) / seconds if seconds else 0.0
        cost = feature_cost(seconds=seconds, rate=rate, step=config.step, window=config.window)
        long = preview(cost, "features")
    with Progress("features", estimate=cost.seconds, show=not args.quiet, delay=progress_after(long)):
        rows = Session.for_recording(config, rec).feature_rows(rec)
    if not len(rows):
        why = (
            f"{seconds:.1f} s of gaze is shorter than one {config.window:g} s window"
            if seconds < config.window
            else "no step has a window of usable gaze"
        )
        print(f"streamdp features: error: {name}: {why}: no feature rows, nothing written", file=sys.stderr)
        return 1
    write_feature_rows(rows, out)
    say(
        f"wrote {len(rows)} UNSANITIZED feature rows of {rec.name} to {out} "
        f"(scene camera {config.camera_for(rec.camera)}; raw features for local research: "
        "not differentially private, do not share)" + "".join(f"; {x.describe()}" for x in left_out if x.describe()),
    )
    return 0
