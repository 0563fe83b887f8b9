"""``streamdp install-plugin``: put the Capture plugin into ``pupil_capture_settings/plugins``.

Capture imports every ``.py`` file and every package folder it finds there, into its world process,
with the Python and the numpy it was bundled with (v3.6+: Python 3.11; v3.0–v3.5: Python 3.6,
which cannot read the plugin). So the command copies exactly what the plugin's import path needs:
``streamdp_capture.py`` and one ``streamdp`` folder holding only the modules that file reaches
through its imports (found by reading them, not by running them) — no command line, offline
evaluation, simulator or relay, and no third-party package: numpy, scipy, pyzmq and msgpack are
Capture's own. Before copying it checks the target's Python and numpy against what the plugin
declares (``REQUIRED_PYTHON``, ``REQUIRED_NUMPY`` in the plugin file) and refuses an older one;
the plugin checks numpy again when Capture loads it. Running it again leaves the same files.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from .console import say

PLUGIN_FILE = "streamdp_capture.py"
#: written into the installed folder: a ``streamdp`` folder without it is not replaced
MANIFEST = "INSTALLED_BY_STREAMDP.txt"
#: the first two bytes of a ``.pyc`` (little-endian) per Python version: a PyInstaller bundle's
#: ``base_library.zip`` holds the standard library compiled by the bundled interpreter
PYC_MAGIC = {3379: (3, 6), 3394: (3, 7), 3413: (3, 8), 3425: (3, 9), 3439: (3, 10), 3495: (3, 11), 3531: (3, 12)}
#: where bundled Capture installs itself (Linux .deb, macOS .app, Windows .msi)
BUNDLE_LOCATIONS = ("/opt/pupil_capture", "/Applications/Pupil Capture.app", "C:/Program Files (x86)/Pupil-Labs")


@dataclass(frozen=True)
class Target:
    """The Python and numpy a Capture runs plugins with, and where that was read."""

    python: tuple[int, ...]
    numpy: tuple[int, ...] | None
    source: str


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text)[:2])


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(map(str, version))


def plugin_source() -> Path:
    """The plugin file of this streamdp (``plugins/`` beside the package in a source checkout).

    Raises
    ------
    InputError
        This streamdp was installed without its ``plugins/`` folder.
    """
    path = Path(__file__).resolve().parents[2] / "plugins" / PLUGIN_FILE
    if not path.is_file():
        raise InputError(f"{path}: not found; install-plugin runs from a source checkout (pip install -e .)")
    return path


def requirements(plugin: Path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``REQUIRED_PYTHON`` and ``REQUIRED_NUMPY`` as the plugin file declares them."""
    found: dict[str, tuple[int, ...]] = {}
    for node in ast.parse(plugin.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("REQUIRED_PYTHON", "REQUIRED_NUMPY"):
                found[node.targets[0].id] = tuple(ast.literal_eval(node.value))
    return found["REQUIRED_PYTHON"], found["REQUIRED_NUMPY"]


def _imported(module: str, path: Path) -> set[str]:
    """The streamdp modules a module's source imports, anywhere in it (lazy imports included, not
    those under ``if TYPE_CHECKING:``, which never run)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for block in [n for n in ast.walk(tree) if isinstance(n, ast.If)]:
        if ast.unparse(block.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            block.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.split(".")[0] == "streamdp":
                out.add(base)
                out.update(f"{base}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.split(".")[0] == "streamdp")
    return out


def needed_modules(plugin: Path, package: Path) -> dict[str, Path]:
    """Every streamdp module the plugin file reaches through its imports, with its source file;
    ``package`` is the ``streamdp`` folder. The package itself is always needed: Capture imports
    the folder too."""

    def source(name: str) -> Path | None:
        rel = Path(*name.split(".")[1:])
        for candidate in (package / rel / "__init__.py", (package / rel).with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    found: dict[str, Path] = {}
    todo = ["streamdp", *_imported("streamdp_capture", plugin)]
    while todo:
        parts = todo.pop().split(".")
        for i in range(1, len(parts) + 1):
            name = ".".join(parts[:i])
            path = source(name)
            if path is not None and name not in found:
                found[name] = path
                todo.extend(_imported(name, path))
    return found


def probe_python(executable: str) -> Target:
    """The Python and numpy versions of an interpreter (Capture run from source).

    Raises
    ------
    InputError
        The interpreter cannot be run.
    """
    code = (
        "import sys\ntry:\n import numpy; v = numpy.__version__\n"
        "except ImportError: v = ''\nprint(sys.version.split()[0], v)"
    )
    try:
        out = subprocess.run([executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise InputError(f"--python {executable}: cannot run it ({exc})") from None
    python, _, numpy = out.strip().partition(" ")
    return Target(_version(python), _version(numpy) if numpy else None, f"--python {executable}")


def probe_bundle(folder: Path) -> Target:
    """The Python of a bundled Capture (from the compiled standard library PyInstaller ships) and
    its numpy when the bundle carries numpy's metadata (else None: the plugin checks at load).

    Raises
    ------
    InputError
        ``folder`` holds no PyInstaller ``base_library.zip``.
    """
    libraries = sorted(folder.rglob("base_library.zip"))
    if not libraries:
        raise InputError(f"--capture {folder}: no bundled Capture there (no base_library.zip)")
    with zipfile.ZipFile(libraries[0]) as zf:
        pyc = next((n for n in zf.namelist() if n.endswith(".pyc")), None)
        magic = int.from_bytes(zf.read(pyc)[:2], "little") if pyc else -1
    if magic not in PYC_MAGIC:
        raise InputError(f"--capture {folder}: its Python is unknown to streamdp (.pyc magic {magic})")
    metadata = sorted(folder.rglob("numpy-*.dist-info"))
    numpy = _version(metadata[0].name.split("-")[1]) if metadata else None
    return Target(PYC_MAGIC[magic], numpy, f"--capture {folder}")


def check_target(target: Target, plugin: Path) -> None:
    """Refuse a target older than the plugin declares.

    Raises
    ------
    InputError
        The target's Python or numpy is older than required, or numpy is missing.
    """
    python, numpy = requirements(plugin)
    if target.python < python:
        raise InputError(
            f"{target.source}: Capture runs Python {_dotted(target.python)}, the plugin needs "
            f"{_dotted(python)}+ (bundled Capture v3.6 or later); with an older Capture run `streamdp relay`"
        )
    if target.numpy is not None and target.numpy < numpy:
        raise InputError(
            f"{target.source}: Capture has numpy {_dotted(target.numpy)}, the plugin needs "
            f"{_dotted(numpy)}+; run `streamdp relay` beside this Capture instead"
        )
    if target.numpy is None and target.source.startswith("--python"):
        raise InputError(f"{target.source}: that Python has no numpy; Capture needs it")


def install(plugins_dir: Path, target: Target) -> list[Path]:
    """Check ``target``, then copy the plugin and the modules it needs into ``plugins_dir``,
    replacing what an earlier run installed. Returns the files written (relative).

    Raises
    ------
    InputError
        The target is too old (:func:`check_target`), ``plugins_dir`` is not a folder, or it
        holds a ``streamdp`` folder this command did not write (e.g. from ``pip install
        --target``): it is left alone and named.
    """
    plugin = plugin_source()
    check_target(target, plugin)
    if not plugins_dir.is_dir():
        raise InputError(f"{plugins_dir}: not a folder (Capture's plugin folder is pupil_capture_settings/plugins)")
    dest = plugins_dir / "streamdp"
    if dest.exists() and not (dest / MANIFEST).is_file():
        raise InputError(f"{dest}: not written by install-plugin; remove it (and what pip put beside it)")
    package = Path(__file__).resolve().parents[1]
    modules = needed_modules(plugin, package)
    written = [Path(PLUGIN_FILE)]
    staging = Path(tempfile.mkdtemp(prefix=".streamdp-", dir=plugins_dir))
    try:
        # the shipped data files (weights, profiles) the modules read at run time
        for path in [*modules.values(), *sorted((package / "data").glob("*.json"))]:
            rel = path.relative_to(package)
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, staging / rel)
            written.append(Path("streamdp") / rel)
        (staging / MANIFEST).write_text(
            f"streamdp Capture plugin, checked against {target.source}\n" + "".join(f"{p}\n" for p in sorted(written)),
            encoding="utf-8",
        )
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    shutil.copyfile(plugin, plugins_dir / PLUGIN_FILE)
    return sorted(written)


def add_parser(commands: argparse._SubParsersAction) -> None:
    p = commands.add_parser("install-plugin", help="install the Capture plugin into pupil_capture_settings/plugins")
    p.add_argument("plugins_dir", help="Capture's plugin folder, e.g. ~/pupil_capture_settings/plugins")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--capture", help="the bundled Capture's installation folder (default: its usual place)")
    where.add_argument("--python", help="the Python that runs Capture from source (default: none: the bundled Capture)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.python:
        target = probe_python(args.python)
    elif args.capture:
        target = probe_bundle(Path(args.capture).expanduser())
    else:
        found = [Path(p) for p in BUNDLE_LOCATIONS if Path(p).is_dir()]
        if not found:
            raise InputError("no bundled Capture in its usual places: give --capture FOLDER or --python EXECUTABLE")
        target = probe_bundle(found[0])
    written = install(Path(args.plugins_dir).expanduser(), target)
    numpy = _dotted(target.numpy) if target.numpy else "unread (the plugin checks it when Capture loads it)"
    say(
        f"streamdp install-plugin: {len(written)} files into {args.plugins_dir} for Python "
        f"{_dotted(target.python)}, numpy {numpy}; enable StreamDP in Capture's plugin manager"
    )
    return 0

