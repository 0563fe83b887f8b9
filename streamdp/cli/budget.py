"""``streamdp budget``: the durable privacy ledgers of this device, in words, and the only way to
start one over.

``streamdp budget show [IDENTITY]`` verifies each ledger from its first record (its chain and the
ledger folder's index) and prints whose it is, the ε spent, what is left of the budget it was last
charged under, its records and whether its chain is OK; a ledger that is refused (edited, lowered,
truncated, vanished, garbage, old format) is one error line on stderr and exit status 2.
``streamdp budget reset IDENTITY`` archives the identity's ledger (renamed beside it, kept, even a
refused one) and starts a new one from 0, and says so; an identity with no ledger is refused
(a typo starts no one's budget) unless ``--create`` is given. A ``--ledger-dir`` that is a file, or
that does not exist (but for ``reset --create``), is refused. ``streamdp budget migrate IDENTITY`` carries
the total of an old-format ledger (``<name>.json``, one JSON object, written before the chain)
into a chained ledger and archives the old file. ``--ledger-dir`` is the relay's and replay's
option, with the same default.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import fields
from pathlib import Path

from ..config import SessionConfig
from ..errors import InputError
from ..privacy.ledger_chain import Chain
from ..privacy.ledger_store import LedgerError, LedgerStore, default_ledger_dir, ledger_identities
from ..stages.gaze_privatizer import GAZE_LEDGER_SUFFIX
from .console import error_text
from .format import counted
from .parsing import HelpFormatter, Parser, add_verbosity


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("budget", help="the durable privacy ledgers: show them; reset or migrate one")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=Parser)
    show = actions.add_parser("show", help="each ledger in words: whose, ε spent and left, records, chain OK")
    show.add_argument("identity", nargs="?", help="whose ledger (default: every ledger in the folder)")
    reset = actions.add_parser(
        "reset",
        help="start an identity's budget over: its ledger is archived (renamed, kept) and a new one starts at 0",
    )
    reset.add_argument("identity", help="whose ledger, e.g. alice@headset1 (streamdp budget show lists them)")
    reset.add_argument(
        "--create",
        action="store_true",
        help="start a ledger for an identity that has none yet (without it, an unknown identity is refused: "
        "a typo in a name starts no one's budget)",
    )
    migrate = actions.add_parser(
        "migrate", help="carry an old-format ledger's total (one JSON object, no chain) into a chained ledger"
    )
    migrate.add_argument("identity", help="whose ledger, e.g. alice@headset1")
    ledger_dir = next(f for f in fields(SessionConfig) if f.name == "ledger_dir")
    for sub, handler in ((show, run_show), (reset, run_reset), (migrate, run_migrate)):
        sub.formatter_class = HelpFormatter
        sub.add_argument("--ledger-dir", default=None, help=str(ledger_dir.metadata["help"]))
        add_verbosity(sub, after_command=True)
        sub.set_defaults(handler=handler)


def _ledger_folder(args: argparse.Namespace, *, must_exist: bool) -> Path:
    """The ledger folder the options name; a ``--ledger-dir`` that is a file (or, when
    ``must_exist``, that does not exist) is refused, naming it."""
    if args.ledger_dir is None:
        return default_ledger_dir()
    folder = Path(args.ledger_dir).expanduser()
    if folder.exists() and not folder.is_dir():
        raise InputError(f"--ledger-dir {args.ledger_dir}: is a file, not a folder of ledgers")
    if must_exist and not folder.exists():
        raise InputError(f"--ledger-dir {args.ledger_dir}: no such folder")
    return folder


def run_show(args: argparse.Namespace) -> int:
    _ledger_folder(args, must_exist=True)
    if args.identity is not None:
        store = LedgerStore(args.identity, folder=args.ledger_dir)
        print("\n".join(describe(store, store.inspect())))  # a refused ledger: one line, exit 2
        return 0
    identities, unreadable = ledger_identities(args.ledger_dir)
    folder = args.ledger_dir or default_ledger_dir()
    if not identities and not unreadable:
        print(f"no ledgers in {folder}")
        return 0
    refused = 0
    for identity in identities:
        store = LedgerStore(identity, folder=args.ledger_dir)
        try:
            print("\n".join(describe(store, store.inspect())), flush=True)
        except LedgerError as exc:
            print(f"streamdp budget: error: {error_text(exc)}", file=sys.stderr, flush=True)
            refused += 1
    for path in unreadable:
        print(f"streamdp budget: error: {path}: not a ledger whose identity can be read (damaged)", file=sys.stderr)
        refused += 1
    return 2 if refused else 0


def describe(store: LedgerStore, chain: Chain) -> list[str]:
    """The ledger of ``store``, verified as ``chain``, in words: one line to a fact."""
    state = chain.state
    if not chain.records:
        return [f"{store.identity}: no ledger yet, nothing spent ({store.path} will hold it)"]
    # the real-time gaze channel's line (streamdp.stages.gaze_privatizer): ε per degree, charged by the second
    gaze = store.identity.endswith(GAZE_LEDGER_SUFFIX)
    spent = (
        f"ε {state.epsilon_spent:g} per degree of gaze displacement, charged ahead in "
        f"{counted(state.chunks_charged, 'write')} (the most the gaze channel's ticks could spend)"
        if gaze
        else f"ε {state.epsilon_spent:g} over {counted(state.chunks_charged, 'chunk')}"
    )
    lines = [
        f"{store.identity}",
        f"  spent: {spent}",
        f"  left: {_left(chain)}",
        f"  records: {chain.records}, chain OK (each record holds the sha256 of the one before, and the "
        f"ledger folder's index agrees); last record's hash {chain.head}",
    ]
    first, last = chain.first or {}, chain.last or {}
    if first["kind"] == "reset":
        archived = ", ".join(first.get("archived", ())) or "nothing to archive"
        lines.append(f"  started over: {first['at']} (streamdp budget reset; archived: {archived})")
    elif first["kind"] == "migrated":
        lines.append(f"  carried over: {first['at']} from the old-format ledger {first.get('migrated_from', '?')}")
    if last["kind"] == "charge":
        lines.append(f"  last charge: {last['at']}")
    if chain.torn:
        lines.append(
            f"  note: an incomplete last line of {counted(chain.torn, 'byte')} (an append a crash interrupted: "
            "never charged, nothing released) is dropped at the next charge"
        )
    lines.append(f"  ledger: {store.path}")
    return lines


def _left(chain: Chain) -> str:
    """What is left of the budget the last charge was made under."""
    last, state = chain.last or {}, chain.state
    budget, unit = last.get("budget"), last.get("unit")
    if budget is None or unit is None:
        return "not known: no charge has named a budget yet"
    if unit == "w-event":
        w = int(last.get("w") or 1)
        window = sum(state.recent[-(w - 1) :]) if w > 1 else 0.0
        return (
            f"ε {max(budget - window, 0.0):g} for the next chunk, of the w-event budget {budget:g} for any {w} "
            f"consecutive chunks (the budget of the last charge)"
        )
    return (
        f"ε {max(budget - state.epsilon_spent, 0.0):g} of the session budget {budget:g} (the budget of the last charge)"
    )


def run_reset(args: argparse.Namespace) -> int:
    folder = _ledger_folder(args, must_exist=not args.create)
    store = LedgerStore(args.identity, folder=args.ledger_dir)
    known = store.path.exists() or store.legacy_path.exists() or store.identity in ledger_identities(folder)[0]
    if not known and not args.create:
        where = "" if args.ledger_dir is None else f" --ledger-dir {args.ledger_dir}"
        raise InputError(
            f"{store.identity}: no ledger of this identity in {folder} (streamdp budget show{where} lists them; "
            "give --create to start one)"
        )
    done = store.reset()
    if done.archived:
        names = ", ".join(str(p) for p in done.archived)
        if done.previous is not None:
            old = done.previous
            held = (
                f"ε {old.state.epsilon_spent:g} spent over {counted(old.state.chunks_charged, 'chunk')}, "
                f"{counted(old.records, 'record')}, last hash {old.head}"
            )
        else:
            held = f"it was refused: {done.problem}"
        print(f"{store.identity}: archived the old ledger as {names} ({held})")
    else:
        print(f"{store.identity}: no ledger to archive")
    print(f"{store.identity}: a new ledger starts from ε 0: {store.path}")
    return 0


def run_migrate(args: argparse.Namespace) -> int:
    store = LedgerStore(args.identity, folder=args.ledger_dir)
    old_path = store.legacy_path
    state = store.migrate()
    print(
        f"{store.identity}: carried ε {state.epsilon_spent:g} spent over {counted(state.chunks_charged, 'chunk')} "
        f"from the old-format ledger {old_path} (archived beside it) into {store.path}"
    )
    return 0
