"""``streamdp heatmap``: a differentially private fixation heatmap over many recordings (Liu et
al.), as ``.npy`` and a PNG picture (the PNG needs the ``plot`` extra: matplotlib)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from ..errors import StreamdpError
from ..privacy.mechanisms import HEATMAP_MECHANISMS
from .common import require_extra
from .options import add_config_options, config_from


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
    p.add_argument(
        "--mechanism",
        choices=tuple(HEATMAP_MECHANISMS),
        default="gaussian",
        help="(default: %(default)s)",
    )
    p.add_argument("--epsilon", type=float, default=1.0, help="ε per observer (default: %(default)s)")
    p.add_argument("--delta", type=float, default=1e-5, help="δ, where the mechanism has one (default: %(default)s)")
    p.add_argument("--cap", default="1", help="per-pixel cap m (public), or 'auto' for Algorithm 1 (not private)")
    p.add_argument("--shape", default="24x32", help="HEIGHTxWIDTH of the map (default: %(default)s)")
    p.add_argument("--seed", type=int, help="seed (default: OS entropy)")
    add_config_options(p, ["features"])
    p.set_defaults(handler=run)


def _shape(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise StreamdpError(f"--shape must be HEIGHTxWIDTH, e.g. 48x64, got {text!r}") from None
    return h, w


def run(args: argparse.Namespace) -> int:
    require_extra("matplotlib", "plot", "heatmap")  # before any work: the PNG is part of the output
    from ..events import EventBatch
    from ..kernels.geometry import degrees_to_norm
    from ..privacy import secure_generator
    from ..privacy.heatmap import HeatmapGaussian, HeatmapLaplace, gaze_map, optimal_cap
    from ..readers import read_recording
    from ..stages.events import EventDetector

    config = config_from(args)
    h, w = _shape(args.shape)
    if args.cap != "auto":
        try:
            cap = int(args.cap)
        except ValueError:
            raise StreamdpError(f"--cap must be an integer or 'auto', got {args.cap!r}") from None
    maps = []
    for path in args.paths:
        rec = read_recording(path)
        events = config.event_config(rec.camera)
        det = EventDetector(events)
        fix = EventBatch.concat([det.update(rec.gaze), det.flush()]).fixations
        nx, ny = degrees_to_norm(fix.x, fix.y, events.fov_deg) if events.units == "deg" else (fix.x, fix.y)
        maps.append(gaze_map(nx, ny, (h, w), cap=10**9))
    arr = np.asarray(maps)
    cap_note = "public"
    if args.cap == "auto":
        probe = HeatmapGaussian(epsilon=args.epsilon, delta=args.delta, cap=1, n_observers=len(maps), shape=(h, w))
        cap = optimal_cap(arr, probe.sigma)
        cap_note = "chosen from the data by Liu et al. Algorithm 1: NOT covered by the guarantee"
    cls = HEATMAP_MECHANISMS[args.mechanism]
    params = {"epsilon": args.epsilon, "cap": cap, "n_observers": len(maps), "shape": (h, w)}
    if "delta" in cls.parameters:
        params["delta"] = args.delta
    mech = cls(**params)
    if isinstance(mech, HeatmapGaussian):
        guarantee = f"({args.epsilon:g}, {args.delta:g})-DP per observer, σ = {mech.sigma:.4g}"
    elif isinstance(mech, HeatmapLaplace):
        guarantee = f"{args.epsilon:g}-DP per observer, Laplace scale {mech.scale:.4g}"
    else:
        guarantee = f"{args.epsilon:g}-DP per observer, {mech!r}"
    noisy = mech.privatize(arr, secure_generator(args.seed))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.save(out, noisy)
    png = Path(args.png) if args.png else out.with_suffix(".png")
    _picture(noisy, png, f"{mech.name}: {len(maps)} observers, cap {cap}")
    print(f"wrote {out} and {png}: {guarantee}; cap m = {cap} ({cap_note})", file=sys.stderr)
    return 0


def _picture(noisy: np.ndarray, png: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h, w = noisy.shape
    fig, ax = plt.subplots(figsize=(w / 8 + 1.5, h / 8 + 0.8))
    im = ax.imshow(noisy, cmap="inferno", extent=(0, 1, 0, 1), aspect="auto")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="fixations per observer")
    fig.savefig(png, dpi=120, bbox_inches="tight")
    plt.close(fig)
