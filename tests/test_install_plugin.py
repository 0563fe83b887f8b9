"""``streamdp install-plugin``: exactly the files the plugin needs, checked against the target's
Python and numpy, loadable by a Capture that has only numpy, scipy, msgpack and pyzmq."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from streamdp.cli import install_plugin as ip
from streamdp.errors import InputError

LOADER = Path(__file__).resolve().parent / "pupil_standin" / "load_installed.py"
#: what bundled Capture v3.6 does not carry (sklearn it does, but the plugin must not need it)
NOT_IN_CAPTURE = ("sklearn", "matplotlib", "tqdm", "pandas", "randomgen")
CURRENT = ip.Target(tuple(sys.version_info[:2]), tuple(int(p) for p in np.__version__.split(".")[:2]), "test")


@pytest.fixture
def installed(tmp_path):
    written = ip.install(tmp_path, CURRENT)
    return tmp_path, written


def _load(python: str, plugins_dir: Path, *blocked: str) -> dict:
    out = subprocess.run(
        [python, str(LOADER), str(plugins_dir), *blocked], capture_output=True, text=True, timeout=300, cwd=plugins_dir
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_exactly_the_plugin_and_one_streamdp_folder_of_the_modules_it_imports(installed):
    plugins_dir, written = installed
    assert sorted(p.name for p in plugins_dir.iterdir()) == ["streamdp", "streamdp_capture.py"]
    files = {p.relative_to(plugins_dir) for p in plugins_dir.rglob("*") if p.is_file()}
    assert files == {*written, Path("streamdp") / ip.MANIFEST}
    names = {str(p) for p in written}
    for absent in ("cli", "offline", "evaluation", "synthetic.py", "network/relay.py", "network/neon.py"):
        assert not any(n.startswith(f"streamdp/{absent}") for n in names), absent
    for present in (
        "session.py",
        "pupil_wire/decode.py",
        "privacy/noise.py",
        "stages/reorder.py",
        "capture/endpoint.py",
        "network/sink.py",
        "network/doctor.py",
        "network/listening.py",
    ):
        assert f"streamdp/{present}" in names
    size = sum((plugins_dir / p).stat().st_size for p in files)
    # source files only, about a MB (680 kB with the endpoint's sink and the doctor, 840 kB with
    # streamdp's Pupil Remote, 1.00 MB with the clock's hold of stray timestamps), against 391 MB from
    # pip install --target: the bound catches a heavy module or a data file pulled in, not growth
    assert 100_000 < size < 1_500_000
    assert not any(n.startswith("streamdp/network/client") for n in names)  # imported only for type checking


def test_installing_again_leaves_the_same_files(installed):
    plugins_dir, written = installed
    before = {p: p.read_bytes() for p in plugins_dir.rglob("*") if p.is_file()}
    (plugins_dir / "streamdp" / "stale_module.py").write_text("raise ImportError\n")
    assert ip.install(plugins_dir, CURRENT) == written
    assert {p: p.read_bytes() for p in plugins_dir.rglob("*") if p.is_file()} == before


def test_a_streamdp_folder_it_did_not_write_is_left_alone(tmp_path):
    (tmp_path / "streamdp").mkdir()
    (tmp_path / "streamdp" / "__init__.py").write_text("")
    with pytest.raises(InputError, match="not written by install-plugin"):
        ip.install(tmp_path, CURRENT)
    assert [p.name for p in (tmp_path / "streamdp").iterdir()] == ["__init__.py"]


def test_the_requirements_are_the_plugins_and_match_the_package():
    from importlib.metadata import requires

    python, numpy = ip.requirements(ip.plugin_source())
    declared = next(r for r in requires("streamdp") or [] if r.startswith("numpy"))
    assert declared == "numpy>=" + ".".join(map(str, numpy)) and python == (3, 10)


def _bundle(folder: Path, python: tuple[int, int], numpy: str | None) -> Path:
    """A bundled Capture as PyInstaller lays it out: the compiled standard library in
    base_library.zip (its .pyc magic says the Python), numpy's metadata when collected."""
    magic = {v: k for k, v in ip.PYC_MAGIC.items()}[python]
    with zipfile.ZipFile(folder / "base_library.zip", "w") as zf:
        zf.writestr("abc.pyc", magic.to_bytes(2, "little") + b"\r\n" + bytes(12))
    if numpy:
        (folder / f"numpy-{numpy}.dist-info").mkdir()
    return folder


@pytest.mark.parametrize(
    ("python", "numpy", "message"),
    [
        ((3, 6), "1.19.5", r"Python 3\.6, the plugin needs 3\.10\+ .*streamdp relay"),
        ((3, 11), "1.21.6", r"numpy 1\.21, the plugin needs 1\.23\+.*streamdp relay"),
    ],
)
def test_an_older_capture_is_refused_naming_what_is_too_old(tmp_path, python, numpy, message):
    (tmp_path / "capture").mkdir()
    bundle = _bundle(tmp_path / "capture", python, numpy)
    plugins_dir = tmp_path / "plugins"
    plugins_dir.mkdir()
    with pytest.raises(InputError, match=message):
        ip.install(plugins_dir, ip.probe_bundle(bundle))
    assert list(plugins_dir.iterdir()) == []


def test_a_bundle_is_read_for_its_python_and_numpy(tmp_path):
    target = ip.probe_bundle(_bundle(tmp_path, (3, 11), "1.26.4"))
    assert (target.python, target.numpy) == ((3, 11), (1, 26))
    # the table is right at least for the Python running the tests
    assert ip.PYC_MAGIC[int.from_bytes(importlib.util.MAGIC_NUMBER[:2], "little")] == tuple(sys.version_info[:2])


def test_a_python_running_capture_from_source_is_asked(tmp_path):
    assert ip.probe_python(sys.executable) == ip.Target(CURRENT.python, CURRENT.numpy, f"--python {sys.executable}")


def test_the_command_line(tmp_path):
    from streamdp.cli import COMMANDS, main

    if ip not in COMMANDS:
        pytest.skip("install-plugin is not wired into streamdp.cli yet")
    assert main(["install-plugin", str(tmp_path), "--python", sys.executable]) == 0
    assert (tmp_path / "streamdp_capture.py").is_file()
    assert main(["install-plugin", str(tmp_path / "nowhere"), "--python", sys.executable]) == 2


@pytest.mark.parametrize("module", NOT_IN_CAPTURE)
def test_the_installed_folder_loads_and_releases_without(installed, module):
    plugins_dir, _ = installed
    report = _load(sys.executable, plugins_dir, module)
    assert report["load_failures"] == []  # Capture would log "Failed to load" in every process
    assert report["streamdp"] == str(plugins_dir / "streamdp" / "__init__.py")
    assert report["topics"] == ["streamdp.features.dcfpa"] and len(report["timestamps"]) >= 20
    assert np.all(np.diff(report["timestamps"]) > 0)
    # the installed copy serves its own endpoint and runs the privacy check
    assert report["received"] == len(report["timestamps"])
    assert report["privacy"].startswith("private")


@pytest.fixture(scope="module")
def capture_like_python(tmp_path_factory):
    """A fresh venv holding only numpy, scipy, msgpack and pyzmq (from pip's configured index)."""
    venv = tmp_path_factory.mktemp("capture-python")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "numpy", "scipy", "msgpack", "pyzmq"],
        capture_output=True, text=True, timeout=600,
    )
    if pip.returncode != 0:
        pytest.skip(f"pip cannot install numpy, scipy, msgpack, pyzmq here: {pip.stderr.strip()[-300:]}")
    return python


@pytest.mark.slow
def test_a_fresh_venv_with_only_capture_s_packages_loads_the_folder_and_releases(installed, capture_like_python):
    plugins_dir, _ = installed
    listed = subprocess.run(
        [str(capture_like_python), "-m", "pip", "list", "--format=json"], capture_output=True, text=True, check=True
    ).stdout
    allowed = {"numpy", "scipy", "msgpack", "pyzmq", "pip", "setuptools"}
    assert {p["name"].lower() for p in json.loads(listed)} <= allowed
    report = _load(str(capture_like_python), plugins_dir, *NOT_IN_CAPTURE)
    assert report["topics"] == ["streamdp.features.dcfpa"] and len(report["timestamps"]) >= 20
