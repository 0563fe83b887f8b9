"""``streamdp evaluate``: utility, re-identification and task accuracy over mechanisms × ε × n
(needs the ``evaluate`` extra: scikit-learn and matplotlib).

The options are the privacy and feature groups of :class:`~streamdp.config.SessionConfig`, so
bounds, transform, k, sensitivity, unit and the feature settings reach every grid point. The grid
is given by ``--mechanisms``, ``--epsilons`` and ``--chunk-lengths``; each point is the
configuration with that mechanism, ε and chunk length. A single ``--mechanism``, ``--epsilon`` or
``--chunk-length`` set away from its default (on the command line or in ``--config``) is that
axis's only value; both forms at once are refused. A chunk length longer than a recording gives
is refused, naming the recordings. The output folder appears whole at the end, or not at all; an
existing one is refused unless ``--overwrite``.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError
from ..privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from .common import require_extra
from .console import say
from .format import counted
from .options import GivenValue, add_config_file_option, add_config_options, checked, config_from, option_name
from .parsing import COUNT, POSITIVE, number

#: every mechanism the evaluation can sanitize with (the "none" baseline is always included)
CHOICES = (*MECHANISMS, *OFFLINE_MECHANISMS)
DEFAULT_EPSILONS = (1.0, 10.0, 100.0, 1000.0)
DEFAULT_CHUNK_LENGTHS = (32,)

_FIELD_DEFAULTS = {f.name: f.default for f in fields(SessionConfig)}


def grid_axis(
    args: argparse.Namespace, field: str, many: str, default: Sequence[Any], config: SessionConfig | None = None
) -> list[Any]:
    """The values of one grid axis: the list option ``many`` if given, else the configuration's
    ``field`` (``config``'s, else the parsed option's) if set away from its default, else
    ``default``.

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
    one = getattr(config, field) if config is not None else getattr(args, field)
    several = getattr(args, many)
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
    p.add_argument("--out", default="evaluation", help="output folder (refused if it exists, unless --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    p.add_argument("--mechanisms", nargs="+", choices=CHOICES, help="mechanisms to compare (default: all of them)")
    p.add_argument(
        "--epsilons",
        nargs="+",
        type=POSITIVE,
        help=f"ε per feature per chunk (default: {' '.join(f'{e:g}' for e in DEFAULT_EPSILONS)})",
    )
    p.add_argument(
        "--chunk-lengths", nargs="+", type=COUNT, help=f"steps per chunk (default: {DEFAULT_CHUNK_LENGTHS[0]})"
    )
    p.add_argument("--people", type=number(int, low=2), default=6, help="synthetic people without a manifest, ≥ 2")
    p.add_argument("--seconds", type=POSITIVE, default=240.0, help="seconds per synthetic recording")
    add_config_file_option(p)
    add_config_options(p, ["privacy", "features"])
    p.add_argument(
        "--seed", type=int, default=0, action=GivenValue, help="seed of the noise and synthetic people (default: 0)"
    )
    p.set_defaults(handler=run)


def _check_grid(grid: Sequence[Any], config: SessionConfig) -> None:
    """Every grid point's configuration, refused or accepted before any work."""
    for point in grid:
        try:
            cfg = point.config(config)
        except TypeError as exc:
            if "does not take" not in str(exc):
                raise
            raise StreamdpError(f"{exc}: leave it out or choose --mechanisms that take it") from None
        if point.mechanism in MECHANISMS:
            checked(cfg)


def _check_chunk_lengths(recs: Sequence[Any], chunk_lengths: Sequence[int], config: SessionConfig, seed: int) -> None:
    """Refuse a chunk length that some recording is too short to fill once: it would drop out of
    the comparison unnoticed (or leave the classifiers nothing to learn from)."""
    from ..offline.evaluate import sanitize

    for n in chunk_lengths:
        pairs = sanitize(recs, "none", 0.0, n, seed, config)
        short = [f"{r.participant}/{r.task}" for r, pair in zip(recs, pairs, strict=True) if not len(pair.clean)]
        if short:
            longest = max(len(r.features) for r in recs)
            raise StreamdpError(
                f"--chunk-lengths {n}: {counted(len(short), 'recording')} of {len(recs)} give no whole chunk of "
                f"{n} steps ({', '.join(short[:4])}{', …' if len(short) > 4 else ''}; the longest has "
                f"{longest} steps): give shorter chunk lengths or longer recordings"
            )


def run(args: argparse.Namespace) -> int:
    for module in ("sklearn", "matplotlib"):
        require_extra(module, "evaluate", "evaluate")
    from ..offline.evaluate import GridPoint, evaluate, feature_signals, read_manifest, synthetic_study
    from ..offline.results import check_output_folder, staged_folder, write_results
    from ..readers import read_recording

    config = config_from(args)
    mechanisms = grid_axis(args, "mechanism", "mechanisms", CHOICES, config)
    epsilons = grid_axis(args, "epsilon", "epsilons", DEFAULT_EPSILONS, config)
    chunk_lengths = grid_axis(args, "chunk_length", "chunk_lengths", DEFAULT_CHUNK_LENGTHS, config)
    grid = [GridPoint("none", 0.0, n) for n in chunk_lengths[:1]]
    grid += [GridPoint(m, e, n) for m in mechanisms for n in chunk_lengths for e in epsilons]
    _check_grid(grid, config)
    out = Path(args.out)
    check_output_folder(out, overwrite=args.overwrite)
    seed = config.seed if config.seed is not None else 0
    if args.manifest:
        items = [(read_recording(p), person, task) for p, person, task in read_manifest(args.manifest)]
    else:
        say(
            f"no manifest: {args.people} synthetic people, each reading and searching for {args.seconds:g} s",
        )
        items = synthetic_study(args.people, args.seconds, seed)
    recs = feature_signals(items, config)
    if len({r.participant for r in recs}) < 2 or len({r.task for r in recs}) < 2:
        raise StreamdpError("evaluation needs at least two participants and two tasks with enough gaze")
    _check_chunk_lengths(recs, chunk_lengths, config, seed)
    rows = evaluate(recs, grid, seed=seed, progress=not args.quiet, config=config)
    with staged_folder(out, overwrite=args.overwrite) as stage:
        paths = [out / p.name for p in write_results(rows, stage.path)]
    print((out / "results.md").read_text())
    say("wrote " + ", ".join(str(p) for p in paths))
    return 0
