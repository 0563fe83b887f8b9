"""The ledger folder: where it is, the names of its files, its index of identities, its locks,
and files written whole or not at all.

The index (``index.json`` in the ledger folder) remembers, for every ledger file, whose it is,
how many records it held, the hash of its last record and its total, as of the last charge. It is
what notices a ledger that vanished, was cut back to fewer records (at a line boundary the chain
alone still verifies) or was replaced by an older copy. It is rewritten after every append, under
the folder's lock, by an atomic rename; a ledger may therefore be ahead of it (a crash came between
the append and the index), never behind.

Examples
--------
>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> update_index(folder, "alice.jsonl", IndexEntry("alice", 1, "ab" * 32, 2.0))
>>> read_index(folder)["alice.jsonl"].records
1
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
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .ledger_chain import LedgerError, LedgerState

INDEX_NAME = "index.json"
INDEX_FORMAT = "streamdp-ledger-index"
INDEX_VERSION = 1
_HASH = re.compile(r"[0-9a-f]{64}")
_MAX_IDENTITY = 200
#: what the file of an old-format ledger (one JSON object, no chain) says it is
_LEGACY_FORMAT, _LEGACY_VERSION = "streamdp-ledger", 1


@dataclass(frozen=True)
class IndexEntry:
    """What the folder remembers of one ledger file."""

    identity: str
    records: int
    head: str
    epsilon_spent: float


def read_index(folder: Path) -> dict[str, IndexEntry]:
    """The folder's index: ledger file name → entry (empty when there is no index yet).

    Raises
    ------
    LedgerError
        The index cannot be read or is damaged (a ledger is never trusted without it).
    """
    path = folder / INDEX_NAME
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise LedgerError(f"{path}: the ledger folder's index cannot be read ({exc})") from None
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT or data.get("version") != INDEX_VERSION:
            raise ValueError("not a streamdp ledger index")
        return {str(name): _entry(value) for name, value in data["ledgers"].items()}
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise LedgerError(
            f"{path}: the ledger folder's index is damaged ({exc}): restore it; the ledgers are not trusted without it"
        ) from None


def _entry(value: object) -> IndexEntry:
    if not isinstance(value, dict):
        raise ValueError(f"entry {value!r}")
    entry = IndexEntry(value["identity"], value["records"], value["head"], value["epsilon_spent"])
    spent = entry.epsilon_spent
    if (
        not isinstance(entry.identity, str)
        or type(entry.records) is not int
        or entry.records < 1
        or not isinstance(entry.head, str)
        or not _HASH.fullmatch(entry.head)
        or isinstance(spent, bool)
        or not isinstance(spent, (int, float))
        or not math.isfinite(spent)
    ):
        raise ValueError(f"entry {value!r}")
    return entry


def update_index(folder: Path, name: str, entry: IndexEntry) -> None:
    """Remember ``entry`` for the ledger file ``name``, under the folder's lock, atomically.

    Raises
    ------
    LedgerError
        The index is damaged (it is left as it is).
    OSError
        It cannot be written.
    """
    with locked(folder / "index.lock"):
        ledgers = read_index(folder)
        ledgers[name] = entry
        data = {
            "format": INDEX_FORMAT,
            "version": INDEX_VERSION,
            "ledgers": {key: asdict(value) for key, value in sorted(ledgers.items())},
        }
        write_whole(folder / INDEX_NAME, (json.dumps(data, indent=1) + "\n").encode())


def write_whole(path: Path, data: bytes) -> None:
    """Write ``path`` whole or not at all: a temporary file, flushed to disk, renamed over it,
    and the folder flushed."""
    folder = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(folder)


@contextlib.contextmanager
def locked(lock_file: Path) -> Iterator[None]:
    """An exclusive lock on ``lock_file`` (made if missing), for every process of this machine."""
    lock_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        _lock(fd)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


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


def ledger_file_name(identity: str, *, suffix: str = ".jsonl") -> str:
    """The file of ``identity``'s ledger: its safe characters, then a digest of the whole name,
    so that two identities never share a file (``suffix=".json"``: the old format's file).

    Examples
    --------
    >>> ledger_file_name("alice@headset1")
    'alice@headset1-9882cc7440c7.jsonl'
    """
    safe = re.sub(r"[^A-Za-z0-9@._-]", "_", check_identity(identity))[:64].lstrip(".") or "_"
    digest = hashlib.blake2b(identity.encode("utf-8"), digest_size=6, person=b"streamdp.ledger").hexdigest()
    return f"{safe}-{digest}{suffix}"


def ledger_identities(folder: str | os.PathLike[str] | None = None) -> tuple[list[str], list[Path]]:
    """The identities the ledger folder knows (its index, its ledgers, old-format files), sorted,
    and the ledger files whose identity cannot be read.

    Raises
    ------
    LedgerError
        The folder's index is damaged.
    """
    base = Path(folder).expanduser() if folder is not None else default_ledger_dir()
    if not base.is_dir():
        return [], []
    names = {entry.identity for entry in read_index(base).values()}
    unreadable = []
    for path in sorted(base.iterdir()):
        if path.name.startswith(".") or ".archived-" in path.name or ".migrated-" in path.name:
            continue
        if path.suffix not in (".jsonl", ".json") or path.name == INDEX_NAME:
            continue
        try:
            with open(path, "rb") as f:
                first = json.loads(f.readline().decode("ascii"))
            name = check_identity(first["identity"])
            if path.name != ledger_file_name(name, suffix=path.suffix):
                raise ValueError("a file under another identity's name")
            names.add(name)
        except (OSError, ValueError, TypeError, KeyError):
            unreadable.append(path)
    return sorted(names), unreadable


def archive(path: Path, why: str) -> Path:
    """Rename ``path`` beside itself with ``why`` and the UTC time in its name; never over a file."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for n in range(1, 1000):
        target = path.with_name(f"{path.stem}.{why}-{stamp}{'' if n == 1 else f'-{n}'}{path.suffix}")
        if not target.exists():
            os.rename(path, target)
            fsync_dir(path.parent)
            return target
    raise FileExistsError(f"{path}: no free name to archive it under")


def read_legacy(path: Path, identity: str) -> LedgerState:
    """The state an old-format ledger (one JSON object) holds."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LedgerError(f"{path}: no old-format ledger of {identity!r} to migrate") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LedgerError(f"{path}: the old-format ledger cannot be read ({exc})") from None
    if not isinstance(data, dict) or (data.get("format"), data.get("version")) != (_LEGACY_FORMAT, _LEGACY_VERSION):
        raise LedgerError(f"{path}: not an old-format streamdp ledger")
    if data.get("identity") != identity:
        raise LedgerError(f"{path}: the old-format ledger belongs to {data.get('identity')!r}, not to {identity!r}")
    spent: Any = data.get("epsilon_spent")
    charged: Any = data.get("chunks_charged")
    recent: Any = data.get("recent")
    ok = not isinstance(spent, bool) and isinstance(spent, (int, float)) and math.isfinite(spent) and spent >= 0
    ok = ok and type(charged) is int and charged >= 0 and isinstance(recent, list)
    ok = ok and all(type(e) in (int, float) and math.isfinite(e) and e > 0 for e in recent or ())
    if not ok:
        raise LedgerError(f"{path}: the old-format ledger is damaged (its total, count or recent charges)")
    return LedgerState(float(spent), charged, tuple(float(e) for e in recent))


if sys.platform == "win32":  # pragma: no cover - depends on the host
    import msvcrt

    def _lock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)

    def fsync_dir(folder: Path) -> None:
        """Nothing: a folder cannot be opened for fsync on Windows; os.replace is durable there."""
else:
    import fcntl

    def _lock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_EX)

    def fsync_dir(folder: Path) -> None:
        """Flush the folder's entries (a new or renamed file) to disk."""
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
