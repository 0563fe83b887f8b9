"""``streamdp fit-weights``: a split of a chunk's ε over the features, fitted on labelled pilot
recordings, to a weights file.

The manifest is the one ``streamdp evaluate`` reads (``recording,participant,task`` and any other
label columns). Each recording's unsanitized feature rows are made as ``streamdp features`` makes
them (the feature options), and the weights keep the ``--task`` column's classes apart, giving
nothing to a feature that separates the ``--protect`` column (e.g. the participants) more; the
noise they are weighed against is the configured mechanism's (mechanism, chunk length, transform,
k, sensitivity, level share, bounds). The objective and its closed-form solution are in
docs/privacy.md, "Weights fitted on labelled pilot data". The file holds the weights and how they
were fitted (columns, counts, the objective, the noise model, the streamdp version and the
manifest's SHA-256), never a feature row or a recording's path.

With ``--epsilon`` (the total ε per chunk the sessions will spend, after ``--epsilon-ceiling``) the
weights are fitted for that ε: how many features to fund is chosen by an inner cross-validation on
the manifest's recordings, grouped by participant (:mod:`streamdp.offline.epsilon_fit`), and the
file states the ε, the count and the inner score; a session at another ε says so in one line.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import StreamdpError
from .common import add_csv_options, csv_layout, output_file, write_atomically
from .console import say
from .format import counted
from .options import add_config_file_option, add_config_options, checked, config_from, reads
from .parsing import COUNT
from .progress import AFTER, Progress

if TYPE_CHECKING:
    from ..offline.fitted_weights import FittedWeights

#: the configuration fields it reads: the features group (the rows are those a session makes) and
#: what the mechanism's noise on each feature depends on, but not ε or the weights themselves
#: and the total ε per chunk it will run at (``--epsilon``, after ``--epsilon-ceiling``): given, how
#: many features to fund is chosen for it (docs/privacy.md)
READS = reads("features", plus=("mechanism", "transform", "k", "sensitivity", "level_share", "bounds", "epsilon",
                                "epsilon_ceiling"))  # fmt: skip
#: no two of its options contradict each other
CONFLICTS = ()

#: how many of the largest shares the summary names
SHOWN = 5


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser(
        "fit-weights",
        help="fit the split of ε over the features on labelled pilot recordings",
        description="Fit the split of a chunk's ε over the 52 features on labelled recordings (a public "
        "dataset or consenting pilot participants): the features that keep the --task column's classes "
        "apart get ε, in proportion to (usefulness × unit noise)^(1/3), and a feature that separates the "
        "--protect column more gets none; with --epsilon, how many features to fund is chosen for that ε by "
        "an inner cross-validation grouped by participant. Writes a weights file (JSON) for the sessions to use.",
    )
    p.add_argument("manifest", nargs="?", metavar="MANIFEST", help="CSV with recording,participant,task,… columns")
    p.add_argument(
        "--task", metavar="COLUMN", help="the manifest column whose classes to keep apart (required: no default)"
    )
    p.add_argument(
        "--protect",
        metavar="COLUMN",
        help="a manifest column whose classes should not be told apart, e.g. participant (default: none)",
    )
    p.add_argument("--out", default="weights.json", help="the weights file to write, .json")
    p.add_argument("--name", help="the allocation's name in ledgers (default: the file's stem)")
    p.add_argument("--jobs", type=COUNT, help="local worker processes reading the recordings, ≥ 1 (default: all cores)")
    add_config_file_option(p)
    add_config_options(p, READS)
    add_csv_options(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.manifest is None:
        raise StreamdpError("give the MANIFEST of labelled recordings (a CSV with recording,participant,task,…)")
    if not args.task:
        raise StreamdpError("--task: give the manifest column whose classes the weights keep apart, e.g. --task task")
    if args.protect is not None and args.protect == args.task:
        raise StreamdpError(f"--protect {args.protect}: the protected column must be another than --task")
    config = checked(config_from(args))  # bad options fail before anything is read
    layout = csv_layout(args, config)
    out = output_file(args.out, (".json",))
    name = args.name if args.name is not None else out.stem
    if not name.strip():
        raise StreamdpError("--name: give a non-empty name")
    from ..offline.fit_weights import fit_manifest
    from ..offline.manifest import read_manifest_rows

    # the ε the session will spend: given, the count of funded features is fitted for it
    epsilon = None if config.epsilon is None else float(config.mechanism_instance().describe()["epsilon"])
    total = len(read_manifest_rows(args.manifest))  # refused here, before any recording is read
    with Progress("fit-weights", estimate=0.0, total=total, unit="recording", show=not args.quiet,
                  delay=AFTER) as progress:  # fmt: skip
        fitted, digest = fit_manifest(
            args.manifest,
            task=args.task,
            protect=args.protect,
            config=config,
            layout=layout,
            each=progress.advance,
            epsilon=epsilon,
            workers=args.jobs,
        )
    text = json.dumps(fitted.document(name=name, manifest_digest=digest), indent=1) + "\n"
    write_atomically(out, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
    shares = sorted(fitted.mapping().items(), key=lambda item: -item[1])[:SHOWN]
    against = f", protecting {args.protect!r}" if args.protect else ""
    people = f" of {counted(fitted.participants, 'participant')}" if fitted.participants else ""
    say(
        f"wrote {out}: {fitted.released.sum()} of {fitted.weights.size} features get ε, fitted to keep "
        f"{args.task!r} apart{against} on {counted(fitted.recordings, 'recording')}{people}; largest shares "
        + ", ".join(f"{f} {100 * w:.1f} %" for f, w in shares if w > 0)
        + f"; noise on what the task needs {fitted.loss() / fitted.loss([1.0] * fitted.weights.size):.2g}× "
        "that of an equal split; " + _for_epsilon(fitted)
    )
    return 0


def _for_epsilon(fitted: FittedWeights) -> str:
    """What the summary says of the ε the weights were fitted for."""
    fit = fitted.epsilon_fit
    if fit is None:
        return "fitted for any ε (give --epsilon to choose how many features to fund for the ε you will run at)"
    signal = "" if fit.above_chance else " — not above chance: no feature carries the task at this ε"
    return (
        f"fitted for ε {fit.epsilon:g} a chunk: {fit.k} funded, inner cross-validated task accuracy "
        f"{fit.score:.2f} ± {fit.score_se:.2f} (chance {fit.chance:.2f}){signal}"
    )
