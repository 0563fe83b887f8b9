"""Dependencies by use and imports that run one way.

The core that the relay and the Capture plugin load must not pull in the optional extras
(evaluation, plots, progress bars, dataframes, dask): they are not installed beside Capture and
cost seconds at start. Each import is checked in a fresh interpreter, where ``sys.modules`` shows
everything it loaded. And the low layers (kernels, stages) never import the layers built on them.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "streamdp"
STANDIN = Path(__file__).resolve().parent / "pupil_standin"

#: top-level modules of the optional extras (and their heavy dependencies)
EXTRAS = ("sklearn", "matplotlib", "tqdm", "pandas", "pyarrow", "dask", "distributed")

_PROBE = """
import importlib, sys
sys.path[:0] = {path!r}
importlib.import_module({module!r})
{after}
print(",".join(sorted(m for m in {extras!r} if m in sys.modules)))
"""


def _loaded_extras(module: str, *, path: tuple[str, ...] = (), after: str = "") -> list[str]:
    code = _PROBE.format(path=list(path), module=module, after=after, extras=EXTRAS)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [m for m in proc.stdout.strip().split(",") if m]


@pytest.mark.parametrize(
    "module",
    ["streamdp", "streamdp.session", "streamdp.config", "streamdp.network.relay", "streamdp.privacy", "streamdp.sinks"],
)
def test_the_core_imports_no_optional_extra(module):
    assert _loaded_extras(module) == []


def test_the_command_line_and_its_parser_import_no_optional_extra():
    # building the parser imports every command module: each must defer its extras to when it runs
    after = "sys.modules['streamdp.cli'].build_parser()"
    assert _loaded_extras("streamdp.cli", after=after) == []


def test_the_capture_plugin_imports_no_optional_extra():
    # imported as Capture does: the plugin folder and Capture's own ``plugin`` module on the path
    assert _loaded_extras("streamdp_capture", path=(str(STANDIN), str(ROOT / "plugins"))) == []


def test_the_probe_sees_a_module_an_import_loads():
    # the check above can fail: a module that imports an extra is reported
    pytest.importorskip("tqdm")
    assert _loaded_extras("tqdm") == ["tqdm"]


_WITHOUT_EXTRAS = """
import sys
for name in {extras!r}:
    sys.modules[name] = None  # as if not installed: importing it raises ImportError
from streamdp.cli import main
codes = [main(argv) for argv in {commands!r}]
print(codes)
"""


def test_the_main_job_and_replay_run_without_any_optional_extra(tmp_path):
    from streamdp.synthetic import generate

    from .recording_files import write_capture_recording

    rec = write_capture_recording(generate(duration=70.0, seed=2).recording, tmp_path / "rec")
    commands = [
        ["demo", "--offline", "--seconds", "100", "--seed", "1"],
        ["replay", str(rec), "--out", str(tmp_path / "out"), "--jobs", "1", "--seed", "1", "--chunk-length", "32"],
    ]
    code = _WITHOUT_EXTRAS.format(extras=EXTRAS, commands=commands)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "[0, 0]", proc.stderr
    assert proc.stdout.startswith("chunk 0: streamdp.features.dcfpa")
    assert (tmp_path / "out" / "rec.msgpack").stat().st_size > 0


# ---------------------------------------------------------------- one-way imports

#: what each low layer must never import: the layers built on it
_ABOVE_STAGES = ("streamdp.pipeline", "streamdp.session", "streamdp.config", "streamdp.network", "streamdp.cli",
                 "streamdp.offline")
FORBIDDEN = {"kernels": ("streamdp.stages", *_ABOVE_STAGES), "stages": _ABOVE_STAGES}


def package_of(path: Path, root: Path = ROOT) -> str:
    """The package a module file under ``root`` belongs to (a package's ``__init__`` belongs to
    itself)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1])


def imported_modules(source: str, package: str) -> set[str]:
    """Every module ``source`` (a module of ``package``) imports, anywhere in it (functions
    included), as absolute names."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            out.add(module)
            out.update(f"{module}.{alias.name}" for alias in node.names)  # `from .. import config`
    return out


def test_imported_modules_resolves_relative_and_deferred_imports():
    source = "from ..config import SessionConfig\nfrom . import base\ndef f():\n    from ..network import relay\n"
    found = imported_modules(source, "streamdp.stages")
    assert {"streamdp.config", "streamdp.stages.base", "streamdp.network.relay"} <= found
    assert "streamdp.cli" in imported_modules("import streamdp.cli as c\n", "streamdp.kernels")


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_low_layers_never_import_the_layers_built_on_them(layer):
    offenders = [
        f"{path.relative_to(ROOT)} imports {name}"
        for path in sorted((PACKAGE / layer).rglob("*.py"))
        for name in sorted(imported_modules(path.read_text(), package_of(path)))
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN[layer])
    ]
    assert offenders == []


# ---------------------------------------------------------------- no import circles

def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name of a module file under ``root`` (a package's ``__init__``: the package)."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Which modules of ``package`` each of its modules imports: anywhere in its source (inside
    functions and under ``TYPE_CHECKING`` too: a deferred or type-only import still ties the two
    modules together, and turns into a real one the day someone moves it up), plus the packages
    whose ``__init__`` that import runs on the way. A module's own enclosing packages are left out:
    their ``__init__`` has already started when the module runs (the package's usual re-exports)."""
    root = package.parent
    names = {module_name(p, root): p for p in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)} | {name}
        imported = {m for m in imported_modules(path.read_text(), package_of(path, root)) if m in names}
        runs = {".".join(m.split(".")[:i]) for m in imported for i in range(1, m.count(".") + 2)}
        graph[name] = {m for m in runs if m in names} - own
    return graph


def import_circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules of each import circle (a strongly connected part of ``graph`` with more than one
    module), each sorted, by Tarjan's algorithm (iterative: no recursion limit to meet)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.append(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        circles.append(sorted(part))
    return sorted(circles)


def test_no_module_of_streamdp_imports_itself_back_through_others():
    assert import_circles(import_graph(PACKAGE)) == []


def _write_package(root: Path, files: dict[str, str]) -> Path:
    for rel, source in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(source)
    return root / "top"


def test_the_circle_check_sees_deferred_and_type_only_imports(tmp_path):
    package = _write_package(tmp_path, {
        "top/__init__.py": "",
        "top/a.py": "def f():\n    from . import b\n",
        "top/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
        "top/c.py": "from .a import f\n",
    })
    assert import_circles(import_graph(package)) == [["top.a", "top.b"]]


def test_the_circle_check_sees_a_circle_through_a_package_init(tmp_path):
    # reach imported a stages module at the top: importing it runs stages/__init__, whose features
    # module imports reach, not yet finished; an import of the package itself is no circle
    package = _write_package(tmp_path, {
        "top/__init__.py": "",
        "top/privacy/__init__.py": "",
        "top/privacy/reach.py": "from ..stages.schedule import SLACK\n",
        "top/stages/__init__.py": "from .features import Rows\n",
        "top/stages/features.py": "from ..privacy.reach import M\nfrom . import schedule\n",
        "top/stages/schedule.py": "SLACK = 0.05\n",
    })
    assert import_circles(import_graph(package)) == [["top.privacy.reach", "top.stages", "top.stages.features"]]


def test_no_module_is_over_400_lines():
    # one purpose a module: past 400 lines a module has more than one (issue #23)
    long = {
        str(path.relative_to(ROOT)): n
        for folder in ("streamdp", "plugins")
        for path in (ROOT / folder).rglob("*.py")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert not long, f"modules over 400 lines: {long}"
