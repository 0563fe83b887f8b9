"""``streamdp evaluate --channel gaze``: the real-time gaze channel's mechanisms × ε per tick × w on
synthetic people (angular error, dwell selection, pursuit and re-identification) or, with
``--manifest``, on the manifest's recordings (angular error, re-identification of the participant
and classification of the task: :mod:`streamdp.offline.gaze_manifest`), as released and
after public post-processing filters (:mod:`streamdp.offline.evaluate_gaze`; needs the
``evaluate`` extra). The configuration gives the tick rate (``gaze_rate``), the scene camera, the
confidence threshold and the feature settings; the grid comes from the options below. The output
folder appears whole at the end, or not at all.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from ..errors import StreamdpError
from ..privacy.gaze_mechanisms import GAZE_MECHANISMS
from .common import require_extra
from .console import say
from .cost import gaze_evaluate_cost
from .options import config_from
from .parsing import COUNT, POSITIVE
from .progress import Progress, preview, progress_after, terminal_bar

#: the gaze grid's defaults (offline.evaluate_gaze's, repeated so that the CLI imports no extra)
DEFAULT_TICK_EPSILONS = (0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_WINDOWS = (30, 60)
DEFAULT_FILTERS = ("median5", "median9", "median15")
DEFAULT_GAZE_SEEDS = 2
#: the re-identification attackers (offline.gaze_sequence_attacker.ATTACKERS); cnn needs the attack extra
ATTACKERS = ("features", "cnn")
#: the cnn attacker's training, per job and filter, in s per person-second of recording (one CPU thread)
CNN_PERSON_SECOND_S = 0.002

#: options of the features channel only: (destination, option, its default)
_FEATURES_ONLY = (
    ("mechanisms", "--mechanisms", None),
    ("epsilons", "--epsilons", None),
    ("chunk_lengths", "--chunk-lengths", None),
    ("split", "--split", "chunked"),
    ("tasks", "--tasks", ["task"]),
)
#: options of the gaze channel only
_GAZE_ONLY = (
    ("gaze_mechanisms", "--gaze-mechanisms"),
    ("tick_epsilons", "--tick-epsilons"),
    ("gaze_windows", "--gaze-windows"),
    ("filters", "--filters"),
    ("trials", "--trials"),
    ("pursuit_seconds", "--pursuit-seconds"),
    ("no_reid", "--no-reid"),
    ("attackers", "--attackers"),
)


def add_gaze_options(p: argparse.ArgumentParser) -> None:
    """The ``--channel`` switch and the gaze channel's grid and study options."""
    p.add_argument(
        "--channel",
        choices=("features", "gaze"),
        default="features",
        help="what to evaluate: the sanitized feature chunks (default) or the real-time gaze channel's ticks",
    )
    g = p.add_argument_group("gaze channel (--channel gaze)")
    g.add_argument(
        "--gaze-mechanisms",
        nargs="+",
        choices=tuple(GAZE_MECHANISMS),
        help="gaze mechanisms to compare (default: all of them)",
    )
    g.add_argument(
        "--tick-epsilons",
        nargs="+",
        type=POSITIVE,
        help="ε per tick per degree of L1 displacement, ε_w/w "
        f"(default: {' '.join(f'{e:g}' for e in DEFAULT_TICK_EPSILONS)})",
    )
    g.add_argument(
        "--gaze-windows",
        nargs="+",
        type=COUNT,
        help="windows w in ticks (geo-bd; geo-uniform's noise depends on ε_w/w only and runs at the "
        f"configured gaze_w) (default: {' '.join(map(str, DEFAULT_WINDOWS))})",
    )
    g.add_argument(
        "--filters",
        nargs="+",
        help="public post-processing filters compared with the stream as released: median<k>, mean<k> or "
        f"adaptive<k> (k odd) over the last k ticks (default: {' '.join(DEFAULT_FILTERS)}; none: the stream alone)",
    )
    g.add_argument("--trials", type=COUNT, help="dwell trials per person (default: 12)")
    g.add_argument("--pursuit-seconds", type=POSITIVE, help="seconds of pursuit per person (default: 20)")
    g.add_argument(
        "--no-reid",
        action="store_true",
        default=None,
        help="skip the re-identification attack (utility only, much faster)",
    )
    g.add_argument(
        "--attackers",
        nargs="+",
        choices=ATTACKERS,
        help="attackers (re-identification, and the task where labels are given): features (52 features, four "
        "classifiers) and cnn (a convolutional network over the ticks' velocity; pip install 'streamdp[attack]'); "
        "the report gives each and the best of all (default: features)",
    )


def check_channel_options(args: argparse.Namespace) -> None:
    """Refuse an option of the other channel, named.

    Raises
    ------
    StreamdpError
        A features option with ``--channel gaze``, or a gaze option without it.
    """
    if args.channel == "gaze":
        for dest, option, default in _FEATURES_ONLY:
            if getattr(args, dest) != default:
                raise StreamdpError(f"{option} applies to --channel features, not to the gaze channel")
        if getattr(args, "csv_columns", None) is not None and not args.manifest:
            raise StreamdpError("--csv-columns reads the recordings of a --manifest; give one")
        return
    for dest, option in _GAZE_ONLY:
        if getattr(args, dest) is not None:
            raise StreamdpError(f"{option} applies to --channel gaze")


def _synthetic_only(args: argparse.Namespace) -> None:
    """Refuse, with a ``--manifest``, the options that shape the synthetic people."""
    for dest, option in (("trials", "--trials"), ("pursuit_seconds", "--pursuit-seconds")):
        if getattr(args, dest) is not None:
            raise StreamdpError(f"{option} shapes the synthetic people's tasks: a --manifest has recordings of its own")


def _manifest_study(args: argparse.Namespace, config: Any, reid: bool) -> tuple[Any, dict[str, Any]]:
    """The manifest's recordings as a gaze study, and the study's parameters for evaluation.json."""
    from ..offline.gaze_manifest import manifest_gaze_study
    from .common import csv_layout

    _synthetic_only(args)
    study = manifest_gaze_study(args.manifest, config, layout=csv_layout(args, config), reid=reid)
    seconds = [float(s.ticks.t[-1] - s.ticks.t[0]) if len(s.ticks) else 0.0 for s in study.streams]
    tasks = sorted(set(study.task_of))
    say(
        f"gaze channel: {args.manifest}: {len(study.recordings)} recordings of {len(study.people)} participants"
        + (f", tasks {' '.join(tasks)}" if tasks else ", one task (not classified)")
        + f", {sum(seconds) / max(len(seconds), 1):.0f} s each on average"
    )
    params = {"manifest": str(args.manifest), "recordings": len(study.recordings), "people": len(study.people),
              "tasks": tasks, "seconds": sum(seconds), "reid": reid}  # fmt: skip
    return study, params


def run_gaze(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..offline.evaluate import default_workers
    from ..offline.evaluate_gaze import evaluate_gaze, gaze_grid
    from ..offline.gaze_manifest_report import manifest_markdown
    from ..offline.gaze_report import markdown, write_gaze_results
    from ..offline.gaze_study import check_filter, gaze_study
    from ..offline.results import check_output_folder, staged_folder

    config = config_from(args)
    filters = ["none", *(f for f in (args.filters or DEFAULT_FILTERS) if f != "none")]
    for f in filters:
        try:
            check_filter(f)
        except ValueError as exc:
            raise StreamdpError(f"--filters: {exc}") from None
    grid = gaze_grid(
        args.gaze_mechanisms or list(GAZE_MECHANISMS),
        args.tick_epsilons or DEFAULT_TICK_EPSILONS,
        args.gaze_windows or DEFAULT_WINDOWS,
        uniform_w=config.gaze_w,
    )
    for point in grid:
        try:
            point.instance(config)
        except (TypeError, ValueError) as exc:
            raise StreamdpError(
                f"{point.mechanism} at ε {point.epsilon_tick:g} per tick, w = {point.w}: {exc}"
            ) from None
    out = Path(args.out)
    check_output_folder(out, overwrite=args.overwrite)
    seed = config.seed if config.seed is not None else 0
    seeds = args.seeds or DEFAULT_GAZE_SEEDS
    reid = not args.no_reid
    attackers = tuple(dict.fromkeys(args.attackers or ("features",)))
    if args.attackers and not reid:
        raise StreamdpError("--attackers chooses the re-identification attackers: drop --no-reid")
    if "cnn" in attackers:
        require_extra("torch", "attack", "evaluate --attackers cnn")
    jobs = len(grid) * seeds
    parallel = min(args.workers or default_workers(), default_workers())
    study = None
    if args.manifest:
        study, params = _manifest_study(args, config, reid)
        people, seconds = max(len(study.people), 1), params["seconds"] / 2 / max(len(study.people), 1)
    else:
        params = {
            "people": args.people,
            "seconds": args.seconds,
            "trials": args.trials or 12,
            "pursuit_s": args.pursuit_seconds or 20.0,
            "reid": reid,
        }
        if reid and args.seconds < 70.0:
            raise StreamdpError(
                f"--seconds {args.seconds:g}: re-identification needs ≥ 70 s (two halves of a 30 s window "
                "and more); give longer recordings or --no-reid"
            )
        people, seconds = args.people, args.seconds
    cost = gaze_evaluate_cost(jobs=jobs, people=people, seconds=seconds, reid=reid, parallel=parallel)
    if reid and "cnn" in attackers:
        trainings = jobs * len(filters) / min(parallel, max(jobs, 1))
        cost = replace(cost, seconds=cost.seconds + trainings * people * seconds * CNN_PERSON_SECOND_S)
    long = preview(cost, "evaluate")
    if study is None:
        say(
            f"gaze channel: {args.people} synthetic people (dwell {params['trials']} trials, pursuit "
            f"{params['pursuit_s']:g} s"
            + (f", reading and searching {args.seconds:g} s each)" if reid else ")")
            + f", {len(grid)} points × {seeds} seeds, filters {' '.join(filters)}"
        )
    else:
        say(f"{len(grid)} points × {seeds} seeds, filters {' '.join(filters)}")
    show = not args.quiet and not terminal_bar()  # on a terminal, the evaluation's own bar
    with Progress("evaluate", estimate=cost.seconds, show=show, delay=progress_after(long)):
        if study is None:
            study = gaze_study(
                args.people,
                args.seconds,
                seed,
                trials=params["trials"],
                pursuit_s=params["pursuit_s"],
                reid=reid,
                config=config,
            )
        rows = evaluate_gaze(
            study,
            grid,
            seed=seed,
            seeds=seeds,
            filters=filters,
            reid=reid,
            attackers=attackers,
            workers=args.workers or min(default_workers(), jobs),
            progress=not args.quiet,
        )
    render = manifest_markdown if args.manifest else markdown
    meta = {
        **params,
        "seeds": seeds,
        "seed": None,
        "filters": filters,
        "attackers": list(attackers) if reid else [],
        "rate_hz": config.gaze_rate,
        "fov_deg": list(study.fov_deg),
    }
    with staged_folder(out, overwrite=args.overwrite) as stage:
        paths = [out / p.name for p in write_gaze_results(rows, stage.path, study.config, meta, render)]
    print((out / "results.md").read_text())
    say("wrote " + ", ".join(str(p) for p in paths))
    return 0
