"""``streamdp evaluate``: utility, re-identification and task accuracy over mechanisms × ε × n
(needs the ``evaluate`` extra: scikit-learn and matplotlib).

The options are the privacy and feature groups of :class:`~streamdp.config.SessionConfig`, so
bounds, transform, k, sensitivity, unit and the feature settings reach every grid point. The grid
is given by ``--mechanisms``, ``--epsilons`` and ``--chunk-lengths``; each point is the
configuration with that mechanism, ε and chunk length. A single ``--mechanism``, ``--epsilon`` or
``--chunk-length`` set away from its default is that axis's only value; both forms at once are
refused.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError
from ..privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from .common import require_extra
from .options import add_config_options, config_from, option_name

#: every mechanism the evaluation can sanitize with (the "none" baseline is always included)
CHOICES = (*MECHANISMS, *OFFLINE_MECHANISMS)
DEFAULT_EPSILONS = (1.0, 10.0, 100.0, 1000.0)
DEFAULT_CHUNK_LENGTHS = (32,)

_FIELD_DEFAULTS = {f.name: f.default for f in fields(SessionConfig)}


def grid_axis(args: argparse.Namespace, field: str, many: str, default: Sequence[Any]) -> list[Any]:
    """The values of one grid axis: the list option ``many`` if given, else the configuration
    option ``field`` if set away from its default, else ``default``.

    Raises
    ------
    StreamdpError
        Both ``many`` and ``field`` were given.

    Examples
    --------
    >>> args = argparse.Namespace(epsilon=2.0, epsilons=None)
    >>> grid_axis(args, "epsilon", "epsilons", [1.0, 10.0])
    [2.0]
    """
    one, several = getattr(args, field), getattr(args, many)
    given = one != _FIELD_DEFAULTS[field]
    if several is not None and given:
        raise StreamdpError(f"give {option_name(field)} or {option_name(many)}, not both")
    if several is not None:
        return list(several)
    return [one] if given else list(default)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "evaluate",
        help="utility, re-identification and task accuracy over mechanisms × ε × n",
        description="Needs the optional extra: pip install 'streamdp[evaluate]'.",
        conflict_handler="resolve",  # its own --seed replaces the configuration's
    )
    p.add_argument("--manifest", help="CSV with recording,participant,task (default: synthetic people)")
    p.add_argument("--out", default="evaluation", help="output folder (default: %(default)s)")
    p.add_argument("--mechanisms", nargs="+", choices=CHOICES, help="(default: all of them)")
    p.add_argument(
        "--epsilons", nargs="+", type=float, help=f"ε per feature (default: {' '.join(map(str, DEFAULT_EPSILONS))})"
    )
    p.add_argument(
        "--chunk-lengths", nargs="+", type=int, help=f"steps per chunk (default: {DEFAULT_CHUNK_LENGTHS[0]})"
    )
    p.add_argument("--people", type=int, default=6, help="synthetic people without a manifest (default: 6)")
    p.add_argument("--seconds", type=float, default=240.0, help="seconds per synthetic recording (default: 240)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_config_options(p, ["privacy", "features"])
    p.add_argument("--seed", type=int, default=0, help="seed of the noise and synthetic people (default: 0)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    for module in ("sklearn", "matplotlib"):
        require_extra(module, "evaluate", "evaluate")
    from ..offline.evaluate import GridPoint, evaluate, feature_signals, read_manifest, synthetic_study
    from ..offline.results import write_results
    from ..readers import read_recording

    config = config_from(args)
    mechanisms = grid_axis(args, "mechanism", "mechanisms", CHOICES)
    epsilons = grid_axis(args, "epsilon", "epsilons", DEFAULT_EPSILONS)
    chunk_lengths = grid_axis(args, "chunk_length", "chunk_lengths", DEFAULT_CHUNK_LENGTHS)
    grid = [GridPoint("none", 0.0, n) for n in chunk_lengths[:1]]
    grid += [GridPoint(m, e, n) for m in mechanisms for n in chunk_lengths for e in epsilons]
    for point in grid:  # every point's configuration is refused or accepted before any work
        try:
            point.config(config)
        except TypeError as exc:
            if "does not take" not in str(exc):
                raise
            raise StreamdpError(f"{exc}: leave it out or choose --mechanisms that take it") from None
    seed = config.seed if config.seed is not None else 0
    if args.manifest:
        items = [(read_recording(p), person, task) for p, person, task in read_manifest(args.manifest)]
    else:
        print(
            f"no manifest: {args.people} synthetic people, each reading and searching for {args.seconds:g} s",
            file=sys.stderr,
        )
        items = synthetic_study(args.people, args.seconds, seed)
    recs = feature_signals(items, config)
    if len({r.participant for r in recs}) < 2 or len({r.task for r in recs}) < 2:
        raise StreamdpError("evaluation needs at least two participants and two tasks with enough gaze")
    rows = evaluate(recs, grid, seed=seed, progress=not args.quiet, config=config)
    out = Path(args.out)
    paths = write_results(rows, out)
    print((out / "results.md").read_text())
    print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0
