"""``streamdp evaluate``: utility, re-identification and task accuracy over mechanisms × ε × n
(needs the ``evaluate`` extra: scikit-learn and matplotlib).

The options are the privacy and feature groups of :class:`~streamdp.config.SessionConfig`, so
bounds, transform, k, sensitivity, unit and the feature settings reach every grid point. The grid
is given by ``--mechanisms``, ``--epsilons`` and ``--chunk-lengths``, each point run with
``--seeds`` noise seeds (mean ± sd in the tables, error bars in the plots) on ``--workers`` local
processes; ``--split`` chooses how re-identification is attacked and ``--tasks`` which manifest
columns are classified; ``--fit-weights`` splits ε by weights fitted on each training fold alone
(:mod:`streamdp.offline.fold_weights`) instead of ``--weights``; each point is the
configuration with that mechanism, ε and chunk length. A single ``--mechanism``, ``--epsilon`` or
``--chunk-length`` set away from its default (on the command line or in ``--config``) is that
axis's only value; both forms at once are refused. A chunk length longer than a recording gives
is refused, naming the recordings. The output folder appears whole at the end, or not at all; an
existing one is refused unless ``--overwrite``.

The trade-off as a curve (:mod:`streamdp.offline.frontier`): every run also measures Algorithm 1 as
published at each ε and chunk length and the floor (a release without signal) at each chunk length,
and writes ``frontier.csv``, ``frontier.md`` and ``frontier.png``: task accuracy against
re-identification per mechanism and allocation across ε, each curve's Pareto frontier and those
references with no noise, mean ± SE over seeds; their rows are in ``baselines.csv``, the other
files are those of the grid alone. ``--no-baselines`` leaves the references out (the frontier then
has no noise only).

``--channel gaze`` evaluates the real-time gaze channel instead (:mod:`streamdp.cli.evaluate_gaze`):
its mechanisms × ε per tick × w on synthetic people, or on a ``--manifest``'s recordings, with options
of its own.

Either evaluation estimates its cost (grid points × seeds × recordings, and the synthetic people to
make) before any work: refused beyond the machine's memory, announced over a minute, its progress
shown (:mod:`streamdp.cli.progress`).
"""

from __future__ import annotations

import argparse
import csv
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ..config import SessionConfig
from ..errors import StreamdpError
from ..privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from .common import SCHEDULER_NEEDS_DASK, add_csv_options, add_executor_options, csv_layout, require_extra
from .console import say
from .contract import Excludes
from .cost import evaluate_cost, feature_steps
from .evaluate_gaze import add_gaze_options, check_channel_options, run_gaze
from .format import counted
from .options import GivenValue, add_config_file_option, add_config_options, checked, config_from, option_name, reads
from .parsing import COUNT, POSITIVE, SEED, number
from .progress import Progress, preview, progress_after, terminal_bar

#: the re-identification splits (offline.classify.REID_SPLITS; repeated so that the CLI imports no extra)
REID_SPLITS = ("chunked", "cross-session")

#: every mechanism the evaluation can sanitize with (the "none" baseline is always included)
CHOICES = (*MECHANISMS, *OFFLINE_MECHANISMS)
DEFAULT_EPSILONS = (1.0, 10.0, 100.0, 1000.0)
DEFAULT_CHUNK_LENGTHS = (32,)

_FIELD_DEFAULTS = {f.name: f.default for f in fields(SessionConfig)}

#: the configuration fields it reads: the privacy and features groups, but a durable ledger's (an
#: evaluation charges no one's budget); the seed is its own option (of the noise and the people);
#: and the gaze channel's tick rate (--channel gaze: a manifest's recordings must feed it)
READS = reads("privacy", "features", but=("identity", "ledger_dir"), plus=("gaze_rate",))


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


CONFLICTS = (
    Excludes("--channel=gaze", "--postprocess", "post-processing is for chunks of features; the gaze channel's "
             "public median is --gaze-smoothing"),
    SCHEDULER_NEEDS_DASK,
    Excludes("--workers", "--executor=dask", "the dask cluster has its own workers"),
    Excludes("--channel=gaze", "--executor=dask", "the gaze channel's evaluation runs on local processes"),
    Excludes("--channel=gaze", "--fit-weights", "the gaze channel has no features to split ε over"),
    Excludes("--fit-weights", "--weights", "the weights are fitted on each training fold instead"),
    Excludes("--channel=gaze", "--no-baselines", "the gaze channel's evaluation draws no frontier of features"),
)  # fmt: skip


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
        help="ε of one chunk, all features together (offline fpa: of its one release of the whole recording) "
        f"(default: {' '.join(f'{e:g}' for e in DEFAULT_EPSILONS)})",
    )
    p.add_argument(
        "--chunk-lengths", nargs="+", type=COUNT, help=f"steps per chunk (default: {DEFAULT_CHUNK_LENGTHS[0]})"
    )
    p.add_argument(
        "--seeds", type=COUNT, default=None, help="noise seeds per grid point (default: 3; --channel gaze: 2)"
    )
    p.add_argument(
        "--split",
        choices=(*REID_SPLITS, "both"),
        default="chunked",
        help="re-identification: chunked (within a recording, a window apart), cross-session, or both",
    )
    p.add_argument(
        "--tasks", nargs="+", default=["task"], help="manifest columns to classify (default: task), e.g. task gender"
    )
    p.add_argument(
        "--workers", type=COUNT, default=None, help="local worker processes (default: the processors available)"
    )
    add_executor_options(p)
    p.add_argument("--people", type=number(int, low=2), default=6, help="synthetic people without a manifest, ≥ 2")
    p.add_argument("--seconds", type=POSITIVE, default=240.0, help="seconds per synthetic recording")
    p.add_argument(
        "--postprocess",
        action="store_true",
        help="also measure the releases after streamdp.postprocess (public constraints, smoothing across "
        "chunks; no ε): rows with postprocess=yes (docs/postprocess.md)",
    )
    p.add_argument(
        "--fit-weights",
        action="store_true",
        help="split each mechanism's ε by weights fitted on each training fold alone, as streamdp fit-weights "
        "fits them (for the first --tasks column, protecting participant, and for each point's ε: how many "
        "features to fund chosen by an inner cross-validation on the fold), instead of --weights: rows say "
        "weights=fitted and each fold's digest (docs/privacy.md)",
    )
    p.add_argument(
        "--no-baselines",
        dest="baselines",
        action="store_false",
        help="leave out the frontier's references, Algorithm 1 as published (dcfpa-bozkir, equal weights, no "
        "ceiling) at each ε and n and the floor (a release without signal) at each n: fewer jobs, and a "
        "frontier with no noise as its only reference (docs/evaluation.md)",
    )
    add_gaze_options(p)
    add_config_file_option(p)
    add_config_options(p, READS)
    p.add_argument(
        "--seed", type=SEED, default=0, action=GivenValue, help="seed of the noise and synthetic people (default: 0)"
    )
    add_csv_options(p)
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
    from ..offline.evaluate import chunked_split, sanitize

    window = config.window_config().window
    for n in chunk_lengths:
        pairs = sanitize(recs, "none", 0.0, n, seed, config)
        short = [
            f"{r.participant}/{r.task}"
            for r, pair in zip(recs, pairs, strict=True)
            if not len(chunked_split(pair.t, pair.chunk, window)[1])
        ]
        if short:
            longest = max(len(r.features) for r in recs)
            raise StreamdpError(
                f"--chunk-lengths {n}: {counted(len(short), 'recording')} of {len(recs)} give no two whole chunks "
                f"of {n} steps a {window:g} s window apart ({', '.join(short[:4])}"
                f"{', …' if len(short) > 4 else ''}; the longest has {longest} steps): "
                "give shorter chunk lengths or longer recordings"
            )


def _recordings(
    args: argparse.Namespace, config: SessionConfig, layout: Any, seed: int, jobs: int, parallel: int
) -> tuple[list[Any], bool]:
    """The labelled recordings (the manifest's, or synthetic people) and whether the work was
    announced as long: synthetic people are previewed before they are made, the grid's ``jobs``
    with them (their number and length are the options')."""
    from ..offline.evaluate import feature_signals, synthetic_study
    from ..offline.manifest import read_manifest_rows
    from ..offline.recordings import open_recording

    if args.manifest:
        manifest = read_manifest_rows(args.manifest)
        unknown = [c for c in args.tasks if c not in ("task", "participant") and c not in manifest[0].labels]
        if unknown:
            raise StreamdpError(f"--tasks: {args.manifest} has no column {', '.join(map(repr, unknown))}")
        items = [(open_recording(r.recording, layout, config), r.participant, r.task) for r in manifest]
        return feature_signals(items, config, [r.labels for r in manifest]), False
    if args.tasks != ["task"]:
        raise StreamdpError("--tasks: the synthetic study has the column task only; give a --manifest")
    recordings = 2 * args.people  # each reads and searches
    steps = recordings * feature_steps(args.seconds, config.step, config.window)
    cost = evaluate_cost(jobs=jobs, steps=steps, parallel=parallel, study_samples=recordings * args.seconds * 120)
    cost = replace(cost, smaller="fewer --people, a smaller --seconds, or fewer grid points or --seeds")
    long = preview(cost, "evaluate")
    say(
        f"no manifest: {args.people} synthetic people, each reading and searching for {args.seconds:g} s "
        f"({config.signal})"
    )
    with Progress("evaluate", estimate=cost.seconds, show=not args.quiet, delay=progress_after(long)):
        return feature_signals(synthetic_study(args.people, args.seconds, seed, config.signal), config, None), long


def _require_extras() -> None:
    """The evaluate extra, imported (seconds of it): after the options were checked."""
    for module in ("sklearn", "matplotlib"):
        require_extra(module, "evaluate", "evaluate")


def run(args: argparse.Namespace) -> int:
    # the options are checked first, the extra's imports (seconds) after: a refusal comes at once
    check_channel_options(args)
    if args.manifest and not Path(args.manifest).is_file():
        what = "is a folder, not a CSV file" if Path(args.manifest).is_dir() else "no such file"
        raise StreamdpError(f"--manifest {args.manifest}: {what}")
    if args.channel == "gaze":
        _require_extras()
        return run_gaze(args)
    args.seeds = args.seeds or 3
    config = config_from(args)
    if config.epsilon_per_feature is not None:
        n = len(config.bounds_profile().names)
        raise StreamdpError(
            f"--epsilon-per-feature: the grid's ε is the total of a chunk; give --epsilons {n} × the per-feature ε "
            f"(e.g. --epsilons {n * config.epsilon_per_feature:g} for {config.epsilon_per_feature:g} per feature)"
        )
    layout = csv_layout(args, config)
    if layout is not None and not args.manifest:
        raise StreamdpError("--csv-columns reads the recordings of a --manifest; give one")
    mechanisms = grid_axis(args, "mechanism", "mechanisms", CHOICES, config)
    epsilons = grid_axis(args, "epsilon", "epsilons", DEFAULT_EPSILONS, config)
    chunk_lengths = grid_axis(args, "chunk_length", "chunk_lengths", DEFAULT_CHUNK_LENGTHS, config)
    from ..offline.evaluate import GridPoint, baseline_points, default_workers, evaluate
    from ..offline.frontier import ALG1, FLOOR
    from ..offline.results import check_output_folder, staged_folder, write_results

    grid = [GridPoint("none", 0.0, n) for n in chunk_lengths[:1]]
    grid += [GridPoint(m, e, n) for m in mechanisms for n in chunk_lengths for e in epsilons]
    baselines = baseline_points(grid) if args.baselines else []
    _check_grid([*grid, *baselines], config)
    out = Path(args.out)
    check_output_folder(out, overwrite=args.overwrite)
    _require_extras()
    seed = config.seed if config.seed is not None else 0
    jobs = (len(grid) + len(baselines)) * args.seeds
    parallel = min(args.workers or default_workers(), default_workers())
    recs, long = _recordings(args, config, layout, seed, jobs, parallel)
    if len({r.participant for r in recs}) < 2 or len({r.task for r in recs}) < 2:
        raise StreamdpError("evaluation needs at least two participants and two tasks with enough gaze")
    splits = REID_SPLITS if args.split == "both" else (args.split,)
    if "chunked" in splits:
        _check_chunk_lengths(recs, chunk_lengths, config, seed)
    if "cross-session" in splits and len({r.participant for r in recs}) == len(recs):
        raise StreamdpError("--split cross-session: no participant has two recordings")
    cost = evaluate_cost(jobs=jobs, steps=sum(len(r.features) for r in recs), parallel=parallel)
    if args.manifest:  # the recordings' lengths are known once they are read
        long = preview(cost, "evaluate")
    show = not args.quiet and not terminal_bar()  # on a terminal, the evaluation's own bar
    progress = Progress(
        "evaluate", estimate=cost.seconds, total=jobs, unit="job", show=show, delay=progress_after(long)
    )
    with progress:  # counted by job: what is left is revised from the jobs done
        rows = evaluate(
            recs,
            grid,
            seed=seed,
            progress=not args.quiet,
            config=config,
            seeds=args.seeds,
            tasks=args.tasks,
            splits=splits,
            workers=args.workers or min(default_workers(), jobs),
            postprocess=args.postprocess,
            executor=args.executor,
            scheduler=args.scheduler,
            fit_weights=args.fit_weights,
            baselines=args.baselines,
            on_job=progress.advance,
        )
    curve = _frontier(rows, config)
    references = [r for r in rows if r["mechanism"] in (ALG1, FLOOR)]
    with staged_folder(out, overwrite=args.overwrite) as stage:
        grid_rows = [r for r in rows if r["mechanism"] not in (ALG1, FLOOR)]
        written = write_results(grid_rows, stage.path, config) + _write_frontier(curve, references, stage.path)
        paths = [out / p.name for p in written]
    print((out / "results.md").read_text())
    if curve.points:
        print(curve.table())
    else:
        say(curve.reason)
    say("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _frontier(rows: list[dict[str, Any]], config: SessionConfig) -> Any:
    """The trade-off's curve of ``rows`` (:func:`streamdp.offline.frontier.frontier`), the
    streaming mechanisms' allocation named as the configuration's weights name it."""
    from ..offline.frontier import frontier
    from ..offline.grid import grid_config

    weights = config.weights
    # the shipped allocation depends on the ε a chunk spends (task@k=K below it): named once per
    # grid point, not per row (a point has a row per seed, metric and classifier)
    points = {(r["mechanism"], float(r["epsilon"]), int(r["chunk_length"])) for r in rows
              if "weights" not in r and r["mechanism"] in MECHANISMS and isinstance(weights, str)}  # fmt: skip
    names = {p: grid_config(config, *p).bounds_profile().weights_name for p in points}

    def named(row: dict[str, Any]) -> dict[str, Any]:
        point = (row["mechanism"], float(row["epsilon"]), int(row["chunk_length"]))
        return {**row, "weights": names[point]} if "weights" not in row and point in names else row

    return frontier([named(r) for r in rows], allocation=str(getattr(weights, "allocation", weights)))


def _write_frontier(curve: Any, references: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """frontier.csv, .md and .png, and baselines.csv: the references' rows, as results.csv's."""
    from ..offline.frontier_files import write_frontier
    from ..offline.results import FITTED_KEYS, RESULT_KEYS

    written = write_frontier(curve, out_dir)
    if references:
        keys = [*RESULT_KEYS, *(FITTED_KEYS if "weights" in references[0] else ())]
        with open(out_dir / "baselines.csv", "w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
            writer.writeheader()
            writer.writerows({"postprocess": "no", **r} for r in references)
        written.append(out_dir / "baselines.csv")
    return written
