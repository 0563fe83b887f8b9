"""The durable ledger: the ε one person has spent, kept on the device across restarts.

A budget that lives in memory starts again whenever the relay, Capture, the plugin or the machine
restarts, and for every recording of a replay: a user-level guarantee needs the spending written
down. :class:`LedgerStore` keeps it in one small JSON file per identity (a name the user chooses,
e.g. ``"alice@headset1"``), in a folder of the user's state directory
(:func:`default_ledger_dir`: ``$XDG_STATE_HOME/streamdp/ledgers``, else
``~/.local/state/streamdp/ledgers``; ``%LOCALAPPDATA%\\streamdp\\ledgers`` on Windows).

Every charge is written ahead of its release (:meth:`LedgerStore.charge`): under an exclusive
lock on the identity's lock file, the current file is read again (another process of the same
person may have spent meanwhile), the budget checked, and the new total written to a temporary
file, flushed to disk (``fsync``), renamed over the old one (``os.replace``, atomic) and the
folder flushed, so that a crash at any instant leaves either the old total or the new one, never
a release that was not charged. A file that cannot be read or was damaged is refused, never taken
for a fresh budget.

The file is local: it names the person, and it is never published or written beside shared data.

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

import contextlib
import hashlib
import json
import math
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError

FORMAT = "streamdp-ledger"
VERSION = 1
_MAX_IDENTITY = 200


@dataclass(frozen=True)
class LedgerState:
    """What one identity has spent: the total ε, the number of chunks charged, and the most
    recent charges, newest last (the w-event unit's window)."""

    epsilon_spent: float = 0.0
    chunks_charged: int = 0
    recent: tuple[float, ...] = ()


def default_ledger_dir() -> Path:
    """The folder of the ledgers when none is named: the user's state directory.

    Examples
    --------
    >>> default_ledger_dir().parts[-2:]
    ('streamdp', 'ledgers')
    """
    if sys.platform == "win32":  # pragma: no cover - depends on the host
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "streamdp" / "ledgers"
    state = os.environ.get("XDG_STATE_HOME", "")
    base_dir = Path(state) if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base_dir / "streamdp" / "ledgers"


def check_identity(identity: object) -> str:
    """``identity`` if it can name a ledger: a non-empty string of printable characters, at most
    200 long, not only spaces.

    Raises
    ------
    TypeError
        ``identity`` is not a string.
    ValueError
        It is empty, blank, too long or holds control characters.

    Examples
    --------
    >>> check_identity("alice@headset1")
    'alice@headset1'
    >>> check_identity(" ")
    Traceback (most recent call last):
    ...
    ValueError: identity must name whose budget this is (e.g. 'alice@headset1'), got ' '
    """
    if not isinstance(identity, str):
        raise TypeError(f"identity must be a str naming whose budget this is, got {identity!r}")
    if not identity.strip() or len(identity) > _MAX_IDENTITY or not identity.isprintable():
        raise ValueError(f"identity must name whose budget this is (e.g. 'alice@headset1'), got {identity!r}")
    return identity


def ledger_file_name(identity: str) -> str:
    """The file of ``identity``'s ledger: its safe characters, then a digest of the whole name,
    so that two identities never share a file.

    Examples
    --------
    >>> ledger_file_name("alice@headset1")
    'alice@headset1-9882cc7440c7.json'
    """
    safe = re.sub(r"[^A-Za-z0-9@._-]", "_", check_identity(identity))[:64].lstrip(".") or "_"
    digest = hashlib.blake2b(identity.encode("utf-8"), digest_size=6, person=b"streamdp.ledger").hexdigest()
    return f"{safe}-{digest}.json"


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

    __slots__ = ("_identity", "_path")

    def __init__(self, identity: str, *, folder: str | os.PathLike[str] | None = None) -> None:
        self._identity = check_identity(identity)
        if folder is not None and not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"ledger folder must be a path, got {folder!r}")
        base = Path(folder).expanduser() if folder is not None else default_ledger_dir()
        self._path = base / ledger_file_name(identity)

    @property
    def identity(self) -> str:
        return self._identity

    @property
    def path(self) -> Path:
        """The ledger file."""
        return self._path

    def __repr__(self) -> str:
        return f"LedgerStore({self._identity!r}, path={str(self._path)!r})"

    def read(self) -> LedgerState:
        """What the identity has spent (nothing yet when the file does not exist).

        Raises
        ------
        InputError
            The file cannot be read, is damaged, or belongs to another identity: a budget is
            never started afresh because its record was lost.
        """
        with self._locked():
            return self._read()

    def charge(
        self, epsilon: float, *, keep: int, check: Callable[[LedgerState], None] | None = None
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

        Raises
        ------
        InputError
            The ledger cannot be read (:meth:`read`).
        OSError
            The ledger cannot be written: nothing may then be released.
        """
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)):
            raise TypeError(f"epsilon must be a number, got {epsilon!r}")
        if not (math.isfinite(epsilon) and epsilon > 0):
            raise ValueError(f"epsilon must be finite and > 0, got {epsilon!r}")
        with self._locked():
            state = self._read()
            if check is not None:
                check(state)
            recent = (*state.recent, float(epsilon))[-keep:] if keep > 0 else ()
            new = LedgerState(state.epsilon_spent + float(epsilon), state.chunks_charged + 1, recent)
            self._write(new)
            return new

    # ------------------------------------------------------------- file

    def _read(self) -> LedgerState:
        try:
            text = self._path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return LedgerState()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{self._path}: the privacy ledger cannot be read ({exc})") from None
        try:
            data = json.loads(text)
            state = _state_from(data)
        except (ValueError, TypeError, KeyError) as exc:
            raise InputError(
                f"{self._path}: the privacy ledger is damaged ({exc}); it is not replaced by a fresh budget: "
                "restore it, or remove it knowingly"
            ) from None
        if data.get("identity") != self._identity:
            owner = data.get("identity")
            raise InputError(f"{self._path}: the privacy ledger belongs to {owner!r}, not to {self._identity!r}")
        return state

    def _write(self, state: LedgerState) -> None:
        folder = self._path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        record = {
            "format": FORMAT,
            "version": VERSION,
            "identity": self._identity,
            "epsilon_spent": state.epsilon_spent,
            "chunks_charged": state.chunks_charged,
            "recent": list(state.recent),
        }
        fd, tmp = tempfile.mkstemp(prefix=f".{self._path.name}.", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(record, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self._path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        _fsync_dir(folder)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """An exclusive lock on the identity's lock file, for every process of this machine."""
        folder = self._path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self._path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            _lock(fd)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock


def _state_from(data: Any) -> LedgerState:
    if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("version") != VERSION:
        raise ValueError("not a streamdp ledger of a known version")
    spent, charged, recent = data["epsilon_spent"], data["chunks_charged"], data["recent"]
    if isinstance(spent, bool) or not isinstance(spent, (int, float)) or not (math.isfinite(spent) and spent >= 0):
        raise ValueError(f"epsilon_spent {spent!r}")
    if type(charged) is not int or charged < 0:
        raise ValueError(f"chunks_charged {charged!r}")
    if not isinstance(recent, list) or not all(
        type(e) in (int, float) and math.isfinite(e) and e > 0 for e in recent
    ):
        raise ValueError(f"recent {recent!r}")
    return LedgerState(float(spent), charged, tuple(float(e) for e in recent))


if sys.platform == "win32":  # pragma: no cover - depends on the host
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def _fsync_dir(folder: Path) -> None:
        pass  # a folder cannot be opened for fsync on Windows; os.replace is durable there
else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def _fsync_dir(folder: Path) -> None:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
