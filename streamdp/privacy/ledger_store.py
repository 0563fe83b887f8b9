"""The durable ledger: the ε one person has spent, kept on the device across restarts, append-only
and tamper-evident.

A budget that lives in memory starts again whenever the relay, Capture, the plugin or the machine
restarts, and for every recording of a replay: a user-level guarantee needs the spending written
down. :class:`LedgerStore` keeps it in one file per identity (a name the user chooses, e.g.
``"alice@headset1"``), in a folder of the user's state directory (:func:`default_ledger_dir`:
``$XDG_STATE_HOME/streamdp/ledgers``, else ``~/.local/state/streamdp/ledgers``;
``%LOCALAPPDATA%\\streamdp\\ledgers`` on Windows).

The file is a chain (:mod:`streamdp.privacy.ledger_chain`): one JSON record a line, each with the
running total and the sha256 of the line before it; the folder's index
(:mod:`streamdp.privacy.ledger_folder`) remembers each ledger's record count and last hash. A
ledger is refused (:class:`~streamdp.privacy.ledger_chain.LedgerError`, one line naming the file)
when a total went down, a record was edited, the file was cut back (mid-line or to fewer records
than the index remembers), it vanished while the index remembers it, it is garbage, or it is an
old-format file (``<name>.json``: ``streamdp budget migrate IDENTITY`` carries its total into a
chain). ``streamdp budget reset IDENTITY`` (:meth:`LedgerStore.reset`) is the only way to start
over: it archives the old file under a new name and starts a chain whose first record names it.

Every charge is written ahead of its release (:meth:`LedgerStore.charge`): under an exclusive lock
on the identity's lock file the ledger is verified again (another process of the same person may
have spent meanwhile: only the records appended since this store last verified it are read), the
budget checked, the record appended and flushed to disk (``fsync``), then the index updated
(atomic rename). A crash mid-append leaves an incomplete last line; it is never an accepted charge
(the charge had not returned, nothing was released), so it is dropped with a warning at the next
charge, as long as the complete records still hold everything the index remembers; cutting into a
record the index knows is refused as truncation. A crash between the append and the index leaves
the ledger one record ahead of the index: that charge counts (write-ahead: a charge may precede a
release that never happened, never the reverse).

What it does not stop: someone who rewrites a ledger and the folder's index consistently (both are
the user's files; ``streamdp budget show`` prints the last hash, to note elsewhere). The files are
local: they name the person, and they are never published or written beside shared data.

Examples
--------
>>> import tempfile
>>> folder = tempfile.mkdtemp()
>>> store = LedgerStore("alice@headset1", folder=folder)
>>> store.read().epsilon_spent
0.0
>>> store.charge(52.0, keep=0).epsilon_spent, store.charge(52.0, keep=0).chunks_charged
(52.0, 2)
>>> LedgerStore("alice@headset1", folder=folder).read().epsilon_spent
104.0
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from . import ledger_folder as folder_files
from .ledger_chain import Chain, LedgerError, LedgerState, charge_record, encode_record, start_record, verify_chain
from .ledger_folder import IndexEntry, check_identity, default_ledger_dir, ledger_file_name, ledger_identities

__all__ = ["LedgerError", "LedgerReset", "LedgerState", "LedgerStore", "check_identity", "default_ledger_dir"]
__all__ += ["ledger_file_name", "ledger_identities"]

log = logging.getLogger(__name__)

#: the charge a store makes is of one of these units (``streamdp budget show`` says what is left)
_UNITS = ("session", "w-event")


@dataclass(frozen=True)
class LedgerReset:
    """What :meth:`LedgerStore.reset` did: the files it archived (kept, renamed), what the old
    ledger held (None when there was none or it was refused: ``problem`` says why) and the new
    ledger's head."""

    archived: tuple[Path, ...]
    previous: Chain | None
    problem: str | None
    head: str


class LedgerStore:
    """The durable ledger of one identity (see the module docstring).

    Parameters
    ----------
    identity : str
        Whose budget this is, as the user names it (:func:`check_identity`).
    folder : str or path-like, optional
        Where the ledgers are kept (default: :func:`default_ledger_dir`); made when first written.

    Raises
    ------
    TypeError, ValueError
        ``identity`` is not a usable name; ``folder`` is not a path.
    """

    __slots__ = ("_folder", "_identity", "_known", "_path")

    def __init__(self, identity: str, *, folder: str | os.PathLike[str] | None = None) -> None:
        self._identity = check_identity(identity)
        if folder is not None and not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"ledger folder must be a path, got {folder!r}")
        self._folder = Path(folder).expanduser() if folder is not None else default_ledger_dir()
        self._path = self._folder / ledger_file_name(identity)
        #: the file (device, inode) and chain this store last verified: a charge reads only what follows
        self._known: tuple[int, int, Chain] | None = None

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def path(self) -> Path:
        """The ledger file."""
        return self._path

    @property
    def legacy_path(self) -> Path:
        """Where an old-format ledger of this identity would be."""
        return self._folder / ledger_file_name(self._identity, suffix=".json")

    def __repr__(self) -> str:
        return f"LedgerStore({self._identity!r}, path={str(self._path)!r})"

    def read(self) -> LedgerState:
        """What the identity has spent (nothing yet when it has no ledger).

        Raises
        ------
        LedgerError
            The ledger is refused (module docstring): a budget is never started afresh because
            its record was lost or changed.
        """
        return self.inspect().state

    def inspect(self) -> Chain:
        """The whole ledger, verified from its first record (what ``streamdp budget show`` prints).

        Raises
        ------
        LedgerError
            As :meth:`read`.
        """
        self._known = None
        with folder_files.locked(self._lock_file):
            return self._verified()

    def charge(
        self,
        epsilon: float,
        *,
        keep: int,
        check: Callable[[LedgerState], None] | None = None,
        unit: str | None = None,
        budget: float | None = None,
        w: int | None = None,
    ) -> LedgerState:
        """Write one charge of ``epsilon`` ahead of its release and return the new state.

        Parameters
        ----------
        epsilon : float
            The chunk's ε (finite, > 0).
        keep : int
            How many recent charges to keep (the w-event window; 0 for the session unit).
        check : callable, optional
            Called with the state read under the lock, before anything is written: it raises
            (e.g. :class:`~streamdp.errors.BudgetExhausted`) to refuse the charge.
        unit, budget, w : optional
            What the charge is made under (``"session"`` or ``"w-event"``, its budget, its w),
            kept in the record so that ``streamdp budget show`` can say what is left.

        Raises
        ------
        TypeError, ValueError
            A parameter of the wrong type or out of range, named with its value.
        LedgerError
            The ledger is refused (:meth:`read`).
        OSError
            The ledger cannot be written: nothing may then be released.
        """
        epsilon = _positive("epsilon", epsilon)
        if isinstance(keep, bool) or not isinstance(keep, int):
            raise TypeError(f"keep must be an int, got {keep!r}")
        if keep < 0:
            raise ValueError(f"keep must be ≥ 0, got {keep}")
        if unit is not None and unit not in _UNITS:
            raise ValueError(f"unit must be one of {', '.join(_UNITS)} or None, got {unit!r}")
        if budget is not None:
            budget = _positive("budget", budget)
        if w is not None:
            if isinstance(w, bool) or not isinstance(w, int):
                raise TypeError(f"w must be an int, got {w!r}")
            if w < 1:
                raise ValueError(f"w must be ≥ 1, got {w}")
        limit = {key: value for key, value in (("unit", unit), ("budget", budget), ("w", w)) if value is not None}
        with folder_files.locked(self._lock_file):
            chain = self._verified()
            if check is not None:
                check(chain.state)
            record = charge_record(
                self._identity, seq=chain.records, prev=chain.head, before=chain.state, epsilon=epsilon, keep=keep,
                limit=limit,
            )  # fmt: skip
            line = encode_record(record) + b"\n"
            device_inode = self._append(chain, line)
            new = verify_chain(line, path=self._path, identity=self._identity, after=chain, want=chain.records)
            folder_files.update_index(self._folder, self._path.name, _entry(self._identity, new))
            self._known = (*device_inode, new)
            return new.state

    def reset(self) -> LedgerReset:
        """Start over: archive the ledger (renamed beside it, kept, even when it is refused) and
        start a new one whose first record names the archive. The only way to lower a total.

        Raises
        ------
        OSError
            The folder cannot be written (nothing is archived then, or the archive is kept and
            the next start finds no ledger while the index remembers it: run reset again).
        """
        self._known = None
        with folder_files.locked(self._lock_file):
            try:
                previous, problem = self._verified(), None
            except LedgerError as exc:
                previous, problem = None, str(exc)
            archived = tuple(folder_files.archive(p, "archived") for p in (self._path, self.legacy_path) if p.exists())
            about: dict[str, Any] = {"archived": [p.name for p in archived]}
            if previous is not None and previous.records:
                about.update(archived_head=previous.head, archived_epsilon_spent=previous.state.epsilon_spent)
            return LedgerReset(archived, previous, problem, self._start("reset", LedgerState(), about).head)

    def migrate(self) -> LedgerState:
        """Carry the total of an old-format ledger (``<name>.json``) into a chained ledger and
        archive the old file; finishes a migration a crash interrupted.

        Raises
        ------
        LedgerError
            There is no old-format ledger, it is damaged or another identity's, or a chained
            ledger exists that is not its migration.
        OSError
            The folder cannot be written.
        """
        self._known = None
        with folder_files.locked(self._lock_file):
            old = folder_files.read_legacy(self.legacy_path, self._identity)
            if self._path.exists():
                try:
                    chain = verify_chain(self._path.read_bytes(), path=self._path, identity=self._identity, want=0)
                except OSError as exc:
                    raise LedgerError(f"{self._path}: the ledger cannot be read ({exc})") from None
                first = chain.first or {}
                if chain.records != 1 or first.get("kind") != "migrated" or chain.state != old:
                    raise LedgerError(
                        f"{self.legacy_path}: an old-format ledger beside the chained ledger {self._path.name}: "
                        "keep one (move the other away), or start over with "
                        f"`streamdp budget reset {self._identity}`"
                    )
                folder_files.update_index(self._folder, self._path.name, _entry(self._identity, chain))
            else:
                self._start("migrated", old, {"migrated_from": self.legacy_path.name})
            folder_files.archive(self.legacy_path, "migrated")
            return old

    # ------------------------------------------------------------- file

    @property
    def _lock_file(self) -> Path:
        return self._path.with_suffix(".lock")

    def _verified(self) -> Chain:
        """The ledger, verified against itself and the folder's index (under the lock)."""
        known, self._known = self._known, None  # kept again only when this verification passes
        if self.legacy_path.exists():
            raise LedgerError(
                f"{self.legacy_path}: an old-format ledger (one total, no chain): carry its total into a chained "
                f"ledger with `streamdp budget migrate {self._identity}`, or archive it and start over with "
                f"`streamdp budget reset {self._identity}`"
            )
        entry = folder_files.read_index(self._folder).get(self._path.name)
        if entry is not None and entry.identity != self._identity:
            raise LedgerError(
                f"{self._folder / folder_files.INDEX_NAME}: the folder's index names {entry.identity!r} for "
                f"{self._path.name}, not {self._identity!r}"
            )
        try:
            with open(self._path, "rb") as f:
                stat = os.fstat(f.fileno())
                chain = self._read_chain(f, known, (stat.st_dev, stat.st_ino), entry)
        except FileNotFoundError:
            if entry is not None:
                raise LedgerError(
                    f"{self._path}: the ledger vanished while the folder's index remembers it ({entry.records} "
                    f"record(s), ε spent {entry.epsilon_spent:g}, last hash {entry.head[:16]}…): restore the file, "
                    f"or start over knowingly with `streamdp budget reset {self._identity}`"
                ) from None
            return Chain()
        except (OSError, UnicodeDecodeError) as exc:
            raise LedgerError(f"{self._path}: the ledger cannot be read ({exc})") from None
        self._check_against(chain, entry)
        self._known = (stat.st_dev, stat.st_ino, chain)
        return chain

    def _read_chain(
        self, f: Any, known: tuple[int, int, Chain] | None, device_inode: tuple[int, int], entry: IndexEntry | None
    ) -> Chain:
        """The chain in ``f``: only what follows the chain this store verified last, when the
        file is the same, no shorter, and still ends that chain with the same record."""
        want = entry.records - 1 if entry is not None else None
        if known is not None and known[:2] == device_inode and entry is not None:
            chain = known[2]
            start = chain.length - len(chain.last_line) - 1
            if chain.records and entry.records >= chain.records and start >= 0:
                f.seek(start)
                data = f.read()
                if data.startswith(chain.last_line + b"\n"):
                    hashes = {chain.records - 1: chain.head}
                    after = replace(chain, torn=0, hashes=hashes)
                    rest = data[len(chain.last_line) + 1 :]
                    return verify_chain(rest, path=self._path, identity=self._identity, after=after, want=want)
        f.seek(0)
        return verify_chain(f.read(), path=self._path, identity=self._identity, want=want)

    def _check_against(self, chain: Chain, entry: IndexEntry | None) -> None:
        index = self._folder / folder_files.INDEX_NAME
        fix = f"restore it, or start over knowingly with `streamdp budget reset {self._identity}`"
        if entry is None:
            # one record ahead of the index: a crash came between the first append and the index
            if chain.records > 1:
                raise LedgerError(
                    f"{self._path}: the folder's index ({index}) does not know this ledger of {chain.records} "
                    f"records (the index was deleted or edited, or the file was put here): {fix}"
                )
        elif chain.records < entry.records:
            torn = " and an incomplete last line" if chain.torn else ""
            raise LedgerError(
                f"{self._path}: truncated: the file holds {chain.records} complete record(s){torn} (ε spent "
                f"{chain.state.epsilon_spent:g}), the folder's index remembers {entry.records} (ε spent "
                f"{entry.epsilon_spent:g}): {fix}"
            )
        elif chain.hashes.get(entry.records - 1) != entry.head:
            raise LedgerError(
                f"{self._path}: record {entry.records} is not the one the folder's index remembers (its hash "
                f"differs): the ledger was edited or replaced by another: {fix}"
            )
        if chain.torn and not chain.torn_is_append:
            raise LedgerError(
                f"{self._path}: line {chain.records + 1}: an incomplete last line that is no record's beginning "
                f"(damaged): {fix}"
            )

    def _append(self, chain: Chain, line: bytes) -> tuple[int, int]:
        """Append ``line`` after the chain's complete records, flushed to disk; a torn last line
        (an append a crash interrupted, never accepted) is cut first. Returns (device, inode)."""
        self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            if chain.torn:
                log.warning(
                    "%s: dropped an incomplete last line of %d bytes (an append a crash interrupted; it was "
                    "never charged or released)", self._path, chain.torn,
                )  # fmt: skip
                os.ftruncate(fd, chain.length)
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        if not chain.records:
            folder_files.fsync_dir(self._folder)
        return stat.st_dev, stat.st_ino

    def _start(self, kind: str, state: LedgerState, about: dict[str, Any]) -> Chain:
        """Write a new ledger whose one record starts it (``reset`` or ``migrated``)."""
        line = encode_record(start_record(self._identity, kind=kind, state=state, **about)) + b"\n"
        self._folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        folder_files.write_whole(self._path, line)
        chain = verify_chain(line, path=self._path, identity=self._identity, want=0)
        folder_files.update_index(self._folder, self._path.name, _entry(self._identity, chain))
        return chain


def _entry(identity: str, chain: Chain) -> IndexEntry:
    return IndexEntry(identity, chain.records, chain.head, chain.state.epsilon_spent)


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return float(value)
