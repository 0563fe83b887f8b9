"""``streamdp heatmap``: a differentially private fixation heatmap over many recordings (Liu et
al.), as ``.npy`` and a PNG picture (the PNG needs the ``plot`` extra: matplotlib).

The picture says what it shows: normalized scene coordinates on its axes, fixations per observer
on its colour bar (noisy, so some pixels are negative), and the mechanism, ε, δ, the cap m and
the number of observers in its title. When the noise's standard deviation is at least the map's
mean, the map is mostly noise: a warning says so and how many observers would be needed. A
recording none of whose samples reaches ``--min-confidence`` is refused (status 1, nothing
written); one where more than half fall below it is warned about. A ``--shape`` whose map and
picture would not fit in memory is refused before any recording is read.
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
from pathlib import Path

import numpy as np

from ..config import SessionConfig
from ..config.fields import EVENT_FIELDS
from ..errors import StreamdpError
from ..plausibility import Implausible, share
from ..privacy.mechanisms import HEATMAP_MECHANISMS
from .common import output_file, refuse_eye_camera_data, require_extra, write_atomically
from .console import say
from .contract import Excludes
from .cost import heatmap_cost
from .format import counted
from .options import add_config_options, config_from, reads
from .parsing import FRACTION, POSITIVE, SEED
from .progress import Progress, preview, progress_after

log = logging.getLogger(__name__)

#: the configuration fields it reads: the fixation detector's (its own --mechanism, --epsilon and
#: --seed are the heatmap's, not a session's)
READS = reads(plus=("signal", "camera", "blinks", *EVENT_FIELDS))
#: options that contradict each other
CONFLICTS = (Excludes("--mechanism=laplace", "--delta", "the Laplace mechanism has no δ (it is ε-DP)"),)
#: the picture's resolution (dots per inch)
DPI = 120


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "heatmap",
        help="differentially private fixation heatmap over many recordings (Liu et al.)",
        description="Fixations are detected with the features options (--camera auto: each recording's). "
        "The PNG needs the optional extra: pip install 'streamdp[plot]'.",
    )
    p.add_argument("paths", nargs="+", help="recordings, one per observer")
    p.add_argument("--out", required=True, help="output .npy (a PNG is written beside it)")
    p.add_argument("--png", help="PNG picture path (default: --out with .png)")
    p.add_argument("--mechanism", choices=tuple(HEATMAP_MECHANISMS), default="gaussian", help="noise mechanism")
    p.add_argument("--epsilon", type=POSITIVE, default=1.0, help="ε per observer")
    p.add_argument(
        "--delta", type=FRACTION, default=1e-5, help="δ, where the mechanism has one, strictly between 0 and 1"
    )
    p.add_argument(
        "--cap", default="1", help="per-pixel cap m ≥ 1 (public), or 'auto' for Algorithm 1, not private (default: 1)"
    )
    p.add_argument("--shape", default="24x32", help="HEIGHTxWIDTH of the map in pixels")
    p.add_argument("--seed", type=SEED, help="noise seed (default: OS entropy)")
    add_config_options(p, READS)
    p.set_defaults(handler=run)


def parse_shape(text: str) -> tuple[int, int]:
    """``"24x32"`` → ``(24, 32)``.

    Raises
    ------
    StreamdpError
        Not two whole numbers ≥ 1 joined by ``x``.

    Examples
    --------
    >>> parse_shape("24x32")
    (24, 32)
    >>> parse_shape("0x0")
    Traceback (most recent call last):
    ...
    streamdp.errors.StreamdpError: --shape 0x0: height and width must be whole numbers ≥ 1, e.g. 48x64
    """
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise StreamdpError(f"--shape must be HEIGHTxWIDTH, e.g. 48x64, got {text!r}") from None
    if h < 1 or w < 1:
        raise StreamdpError(f"--shape {text}: height and width must be whole numbers ≥ 1, e.g. 48x64")
    return h, w


def figure_inches(h: int, w: int) -> tuple[float, float]:
    """The picture's width and height in inches for a map of ``h`` × ``w`` pixels: 8 map pixels
    an inch, with room for the axes and the colour bar.

    Examples
    --------
    >>> figure_inches(24, 32)
    (6.0, 4.4)
    """
    return w / 8 + 2.0, h / 8 + 1.4


def _cap(text: str) -> int | None:
    if text == "auto":
        return None
    try:
        cap = int(text)
    except ValueError:
        cap = 0
    if cap < 1:
        raise StreamdpError(f"--cap must be a whole number ≥ 1 or 'auto', got {text!r}")
    return cap


def run(args: argparse.Namespace) -> int:
    require_extra("matplotlib", "plot", "heatmap")  # before any work: the PNG is part of the output
    config = config_from(args)
    h, w = parse_shape(args.shape)
    cap = _cap(args.cap)
    out = output_file(args.out, (".npy",))
    png = output_file(args.png or out.with_suffix(".png"), (".png",), option="--png")
    fig_w, fig_h = figure_inches(h, w)
    cost = heatmap_cost(observers=len(args.paths), pixels=h * w, figure_pixels=fig_w * fig_h * DPI**2)
    long = preview(cost, "heatmap")  # before any recording is read: the size is --shape's
    with Progress("heatmap", estimate=cost.seconds, show=not args.quiet, delay=progress_after(long)):
        return _heatmap(args, config, (h, w), cap, out, png)


def _about(count: float) -> str:
    """A count of people, whole up to a million, in scientific notation beyond.

    Examples
    --------
    >>> _about(41.2), _about(3.4e299)
    ('42', '3.4e+299')
    """
    return str(math.ceil(count)) if count < 1e6 else f"{count:.2g}"


def _heatmap(
    args: argparse.Namespace, config: SessionConfig, shape: tuple[int, int], cap: int | None, out: Path, png: Path
) -> int:
    from ..events import EventBatch
    from ..kernels.geometry import degrees_to_norm
    from ..offline.coverage import GazeTally
    from ..privacy import secure_generator
    from ..privacy.heatmap import HeatmapGaussian, HeatmapLaplace, gaze_map, optimal_cap
    from ..readers import read_recording
    from ..stages.events import EventDetector

    h, w = shape
    maps = []
    left_out: list[Implausible] = []
    for path in args.paths:
        refuse_eye_camera_data(path)
        rec = read_recording(path, report=left_out.append)
        tally = GazeTally(config.min_confidence)
        tally.add(rec.gaze.t, rec.gaze.valid, rec.gaze.confidence)
        unusable, warning = tally.problem()
        if unusable:  # an observer without gaze would count in the map's mean all the same
            why = "no fixation to map: leave it out of the observers; nothing written"
            print(f"streamdp heatmap: error: {path}: {unusable}: {why}", file=sys.stderr)
            return 1
        if warning:
            log.warning("%s: %s", path, warning)
        events = config.event_config(rec.camera)
        det = EventDetector(events)
        fix = EventBatch.concat([det.update(rec.gaze), det.flush()]).fixations
        nx, ny = degrees_to_norm(fix.x, fix.y, events.fov_deg) if events.units == "deg" else (fix.x, fix.y)
        maps.append(gaze_map(nx, ny, (h, w), cap=10**9))
    arr = np.asarray(maps)
    n = len(maps)
    cap_note = "public"
    if cap is None:
        probe = HeatmapGaussian(epsilon=args.epsilon, delta=args.delta, cap=1, n_observers=n, shape=(h, w))
        cap = optimal_cap(arr, probe.sigma)
        cap_note = "chosen from the data by Liu et al. Algorithm 1: NOT covered by the guarantee"
    cls = HEATMAP_MECHANISMS[args.mechanism]
    params = {"epsilon": args.epsilon, "cap": cap, "n_observers": n, "shape": (h, w)}
    if "delta" in cls.parameters:
        params["delta"] = args.delta
    mech = cls(**params)
    if isinstance(mech, HeatmapGaussian):
        sd = mech.sigma
        privacy = f"ε {args.epsilon:g}, δ {args.delta:g}"
        guarantee = f"({args.epsilon:g}, {args.delta:g})-DP per observer, Gaussian noise σ = {sd:.4g}"
    elif isinstance(mech, HeatmapLaplace):
        sd = math.sqrt(2.0) * mech.scale
        privacy = f"ε {args.epsilon:g}"
        guarantee = f"{args.epsilon:g}-DP per observer, Laplace scale {mech.scale:.4g} (sd {sd:.4g})"
    else:
        sd = float("nan")
        privacy = f"ε {args.epsilon:g}"
        guarantee = f"{args.epsilon:g}-DP per observer, {mech!r}"
    noisy = mech.privatize(arr, secure_generator(args.seed))
    mean = float(np.minimum(arr, cap).mean()) if n else 0.0
    if sd >= mean:
        need = n * sd / mean if mean > 0 else math.inf
        more = f"; about {_about(need)} observers would bring it below the mean" if math.isfinite(need) else ""
        log.warning(
            "the heatmap is mostly noise: its noise sd %.3g is at least the map's mean %.3g fixations per observer "
            "per pixel with %s%s (a larger ε, cap or pixels would help too)",
            sd,
            mean,
            counted(n, "observer"),
            more,
        )
    write_atomically(out, lambda tmp: _save(tmp, noisy))
    title = f"{mech.name}: {privacy}, cap m = {cap}, {counted(n, 'observer')}"
    write_atomically(png, lambda tmp: _picture(noisy, tmp, title), option="--png")
    implausible = sum(x.samples for x in left_out)
    if implausible:
        total = sum(x.total for x in left_out)
        cap_note += (
            f"; {implausible} of {total} gaze samples ({share(implausible, total)}) beyond the public plausibility "
            "bounds, counted as invalid"
        )
    say(f"wrote {out} and {png}: {guarantee}; cap m = {cap} ({cap_note})")
    return 0


def _save(path: Path, values: np.ndarray) -> None:
    with open(path, "wb") as fh:  # a file, not a name: np.save would add .npy to the staging name
        np.save(fh, values)


def _picture(noisy: np.ndarray, png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h, w = noisy.shape
    fig, ax = plt.subplots(figsize=figure_inches(h, w))
    im = ax.imshow(noisy, cmap="inferno", extent=(0, 1, 0, 1), aspect="auto")
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("scene x (normalized, 0 = left, 1 = right)")
    ax.set_ylabel("scene y (normalized, 0 = bottom, 1 = top)")
    fig.colorbar(im, ax=ax, label="fixations per observer (noisy: may be negative)")
    with open(png, "wb") as fh:
        fig.savefig(fh, format="png", dpi=DPI, bbox_inches="tight")
    plt.close(fig)
