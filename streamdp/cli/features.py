"""``streamdp features``: the unsanitized 52 features of a recording, to a local file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..errors import StreamdpError
from ..schema import FEATURE_NAMES
from ..stages.features import FeatureRows
from .common import load_recording
from .options import add_config_options, config_from


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "features",
        help="UNSANITIZED features of a recording to a local file (for research only)",
        description="Write the raw, unsanitized 52 features of a recording to a local file. The "
        "output is NOT differentially private: keep it local. --camera auto uses the recording's "
        "scene camera.",
    )
    p.add_argument("path", nargs="?", help="recording folder or file (default: synthetic gaze)")
    p.add_argument("--out", required=True, help="output file, .csv or .npz")
    p.add_argument("--synthetic", type=float, metavar="SECONDS", help="length of synthetic gaze when no path")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic gaze (default: %(default)s)")
    add_config_options(p, ["features"])
    p.set_defaults(handler=run)


def write_feature_rows(rows: FeatureRows, out: Path) -> None:
    """CSV (``t`` then the 52 named columns) or ``.npz`` (arrays ``t``, ``values``, ``names``);
    nothing half-written is ever left under the final name."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    if out.suffix == ".npz":
        with open(tmp, "wb") as fh:
            np.savez(fh, t=rows.t, values=rows.values, names=np.array(FEATURE_NAMES))
    else:
        data = np.column_stack([rows.t, rows.values]) if len(rows) else np.empty((0, 1 + len(FEATURE_NAMES)))
        header = ",".join(("t", *FEATURE_NAMES))
        np.savetxt(tmp, data, delimiter=",", header=header, comments="", fmt="%.17g")
    tmp.replace(out)


def run(args: argparse.Namespace) -> int:
    config = config_from(args)  # bad options fail before anything is read or written
    rec = load_recording(args.path, args.synthetic, args.seed)
    if config.blinks == "given" and rec.blinks is None:
        raise StreamdpError(f"{args.path or rec.name}: --blinks given, but the recording has no blink events")
    from ..session import Session

    rows = Session.for_recording(config, rec).feature_rows(rec)
    out = Path(args.out)
    write_feature_rows(rows, out)
    print(
        f"wrote {len(rows)} UNSANITIZED feature rows of {rec.name} to {out} "
        f"(scene camera {config.camera_for(rec.camera)}; raw features for local research: "
        "not differentially private, do not share)",
        file=sys.stderr,
    )
    return 0
