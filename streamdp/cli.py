"""The ``streamdp`` command line. Errors in input end with a message and a non-zero exit, never a
traceback."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .errors import StreamdpError
from .kernels.geometry import CAMERA_FOV_DEG
from .pipeline import FeaturePipeline
from .schema import FEATURE_NAMES
from .stages.events import EventConfig
from .stages.features import FeatureRows, WindowConfig

log = logging.getLogger("streamdp")

_COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {}


def _command(
    name: str,
) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    def register(fn: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        _COMMANDS[name] = fn
        return fn

    return register


def _add_pipeline_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("features")
    g.add_argument("--window", type=float, default=30.0, help="window length in s (default 30)")
    g.add_argument("--step", type=float, default=0.5, help="step in s (default 0.5; PrivacEye used 1)")
    g.add_argument(
        "--max-dispersion",
        type=float,
        default=EventConfig.max_dispersion,
        help="I-DT dispersion threshold in degrees (default %(default)s)",
    )
    g.add_argument(
        "--camera",
        choices=["auto", *sorted(CAMERA_FOV_DEG)],
        default="auto",
        help="scene camera, for its field of view (default: the recording's, else pupil_core_720p)",
    )
    g.add_argument(
        "--blinks",
        choices=("confidence", "given"),
        default="confidence",
        help="detect blinks from confidence, or use the recording's own blink events",
    )


def _pipeline_from(args: argparse.Namespace, recording_camera: str | None = None) -> FeaturePipeline:
    camera = args.camera if args.camera != "auto" else (recording_camera or "pupil_core_720p")
    fov = CAMERA_FOV_DEG[camera]
    events = EventConfig(max_dispersion=args.max_dispersion, fov_deg=fov, blink_source=args.blinks)
    return FeaturePipeline(events, WindowConfig(window=args.window, step=args.step))


def _load(path: str | None, synthetic: float | None, seed: int):
    from .readers import read_recording
    from .synthetic import generate

    if path is None:
        return generate(duration=synthetic or 120.0, seed=seed).recording
    return read_recording(path)


def write_feature_rows(rows: FeatureRows, out: Path) -> None:
    """CSV (``t`` then the 52 named columns) or ``.npz`` (arrays ``t``, ``values``, ``names``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    if out.suffix == ".npz":
        with open(tmp, "wb") as fh:
            np.savez(fh, t=rows.t, values=rows.values, names=np.array(FEATURE_NAMES))
    else:
        data = np.column_stack([rows.t, rows.values]) if len(rows) else np.empty((0, 53))
        header = ",".join(("t", *FEATURE_NAMES))
        np.savetxt(tmp, data, delimiter=",", header=header, comments="", fmt="%.17g")
    tmp.replace(out)  # nothing half-written is left under the final name


@_command("features")
def _features(args: argparse.Namespace) -> int:
    rec = _load(args.path, args.synthetic, args.seed)
    pipe = _pipeline_from(args, rec.camera)
    if args.blinks == "given" and rec.blinks is None:
        raise StreamdpError(f"{args.path}: --blinks given, but the recording has no blink events")
    rows = pipe.run(rec)
    out = Path(args.out)
    write_feature_rows(rows, out)
    print(
        f"wrote {len(rows)} UNSANITIZED feature rows of {rec.name} to {out} "
        "(raw features for local research: not differentially private, do not share)",
        file=sys.stderr,
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="streamdp",
        description="Differentially private eye-movement features for Pupil Labs headsets.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more log output")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser(
        "features",
        help="UNSANITIZED features of a recording to a local file (for research only)",
        description="Write the raw, unsanitized 52 features of a recording to a local file. The "
        "output is NOT differentially private: keep it local.",
    )
    p.add_argument("path", nargs="?", help="recording folder or file (default: synthetic gaze)")
    p.add_argument("--out", required=True, help="output file, .csv or .npz")
    p.add_argument("--synthetic", type=float, metavar="SECONDS", help="length of synthetic gaze when no path")
    p.add_argument("--seed", type=int, default=0, help="seed of the synthetic gaze")
    _add_pipeline_options(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING - 10 * min(args.verbose, 2),
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    try:
        return _COMMANDS[args.command](args)
    except StreamdpError as exc:
        print(f"streamdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        # invalid option values reach the validated configs; name them as the user typed them
        print(f"streamdp {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
