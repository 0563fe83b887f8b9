"""Every code block of README.md and of the site (docs/**/*.md) runs, or says in the Markdown why not.

A fenced block is run by language: ``python`` in a subprocess, ``bash`` when each of its commands is
a ``streamdp`` command; ``text``, ``toml``, ``json`` and ``mermaid`` blocks are shown, not run.
An HTML comment on the line before a block changes that, its parts separated by ``;``:

- ``<!-- not run: REASON -->``: not run here (needs a headset, Capture, a cluster, or runs for
  minutes); the reason must be given;
- ``<!-- run as: COMMAND -->``: run this shorter ``streamdp`` command instead of the block;
- ``<!-- run in background -->``: started (after its first line on stderr) and left running for the
  page's later blocks, stopped when the page is done (a simulator, a relay);
- ``<!-- run with a relay, until N lines -->``: a simulated Capture and a relay are started for the
  page's first such block and kept for its later ones; the block passes once it has printed N
  lines (an app that reads forever). ``with a relay --gaze-channel``: the relay also publishes the
  gaze channel.

A line ``<!-- stop background -->`` between blocks stops the processes started in the background
before the blocks after it run.

The blocks of one page run in order in one temporary folder, so a page can write a file and read
it back. The ports of the defaults (Pupil Remote 50020, the relay's 5570 and 5571) are replaced
by free ones, so that the examples never meet another process on this machine. The site itself is
built with ``mkdocs build --strict`` (skipped only where mkdocs is not installed: CI installs it).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from queue import Empty, Queue
from typing import IO

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
SHOWN = {"text", "toml", "json", "mermaid"}
RUN = {"python", "bash"}
DEFAULT_PORTS = ("50020", "5570", "5571")
#: seconds one block may take (the longest, `streamdp evaluate` on a small grid, takes ~15 s)
BLOCK_TIMEOUT = 120.0
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!--\s*(.*?)\s*-->$")
STOP = "<!-- stop background -->"
UNTIL = re.compile(r"^run with a relay( --gaze-channel)?, until (\d+) lines?$")


@dataclass
class Block:
    """One fenced code block, where it is, and what its marker asks."""

    page: Path
    line: int
    lang: str
    code: str
    skip: str | None = None
    run_as: str | None = None
    background: bool = False
    until_lines: int | None = None
    gaze_channel: bool = False
    unknown: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def _apply_marker(block: Block, marker: str) -> None:
    if marker.startswith("not run:"):  # the reason may hold semicolons
        block.skip = marker.removeprefix("not run:").strip()
        return
    for part in (p.strip() for p in marker.split(";")):
        if part.startswith("run as:"):
            block.run_as = part.removeprefix("run as:").strip()
        elif part == "run in background":
            block.background = True
        elif match := UNTIL.match(part):
            block.until_lines = int(match.group(2))
            block.gaze_channel = match.group(1) is not None
        else:
            block.unknown.append(part)


def blocks_of(page: Path) -> list[Block]:
    """The fenced blocks of one Markdown page, with the marker on the line before each."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("```")), len(lines))
        block = Block(page, i + 1, opening.group(1), "\n".join(lines[i + 1 : end]) + "\n")
        before = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        if marker := MARKER.match(before):
            _apply_marker(block, marker.group(1))
        found.append(block)
        i = end + 1
    return found


ALL = [b for page in PAGES for b in blocks_of(page)]


def commands(code: str) -> list[str]:
    """The commands of a shell block: continuation lines joined, comments and blank lines left out."""
    joined = code.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_the_pages_have_blocks() -> None:
    assert (ROOT / "docs" / "tutorial.md") in PAGES
    assert len([b for b in ALL if b.lang in RUN and b.skip is None]) >= 10


@pytest.mark.parametrize("block", ALL, ids=[b.where for b in ALL])
def test_every_block_is_run_or_says_why_not(block: Block) -> None:
    assert block.lang in RUN | SHOWN, f"{block.where}: label the block with one of {sorted(RUN | SHOWN)}"
    assert not block.unknown, f"{block.where}: unknown marker {block.unknown}"
    if block.skip is not None:
        assert len(block.skip) >= 10, f"{block.where}: 'not run' needs a reason"
        return
    if block.lang == "bash":
        for command in commands(block.run_as or block.code):
            assert command.startswith("streamdp "), f"{block.where}: not a streamdp command: {command!r}"


def _free_ports() -> dict[str, str]:
    ports = {}
    for default in DEFAULT_PORTS:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports[default] = str(s.getsockname()[1])
    return ports


def _substitute(code: str, ports: dict[str, str]) -> str:
    for default, port in ports.items():
        code = re.sub(rf"(?<![0-9]){default}(?![0-9])", port, code)
    return code


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("STREAMDP_LEDGER_DIR", None)
    return env


def _argv(block: Block, code: str, folder: Path) -> list[str]:
    if block.lang == "python":
        script = folder / f"block_{block.line}.py"
        script.write_text(code, encoding="utf-8")
        return [sys.executable, "-u", str(script)]
    return ["bash", "-euo", "pipefail", "-c", "\n".join(commands(code))]


def _reader(stream: IO[str] | None) -> Queue[str | None]:
    """A thread reading a pipe's lines into a queue, None at its end."""
    assert stream is not None
    queue: Queue[str | None] = Queue()

    def read() -> None:
        for line in stream:
            queue.put(line)
        queue.put(None)

    threading.Thread(target=read, daemon=True).start()
    return queue


def _close(proc: subprocess.Popen[str], *queues: Queue[str | None]) -> str:
    """What is left in the readers once the process ended (its pipes then closed)."""
    left = "".join(line for queue in queues for line in _take(queue, time.monotonic() + 10))
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()
    return left


def _take(queue: Queue[str | None], deadline: float) -> Iterator[str]:
    """Lines from a reader as they come, until the pipe's end or the deadline (no sleep)."""
    while True:
        try:
            line = queue.get(timeout=max(deadline - time.monotonic(), 0.0))
        except Empty:
            return
        if line is None:
            return
        yield line


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def _started(argv: list[str], folder: Path, what: str) -> Iterator[None]:
    """A background process, started once it printed its first line on stderr; stopped on exit."""
    proc = subprocess.Popen(argv, cwd=folder, env=_env(), text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = _reader(proc.stderr)
    try:
        first = next(_take(err, time.monotonic() + 60), None)
        assert first is not None and proc.poll() is None, f"{what} did not start: {first}"
        yield
    finally:
        _stop(proc)
        rest = _close(proc, err)
    assert "Traceback" not in rest, f"{what}:\n{rest}"


@contextmanager
def _relay(folder: Path, ports: dict[str, str], *, gaze_channel: bool) -> Iterator[None]:
    sim = ["streamdp", "simulate", "--speed", "10", "--loop", "--port", ports["50020"]]
    relay = ["streamdp", "relay", "--remote", f"tcp://127.0.0.1:{ports['50020']}"]
    relay += ["--bind", f"tcp://127.0.0.1:{ports['5570']}", "--status-bind", f"tcp://127.0.0.1:{ports['5571']}"]
    relay += ["--gaze-channel"] if gaze_channel else []
    with _started(sim, folder, "simulate"), _started(relay, folder, "relay"):
        yield


def _run_until(block: Block, argv: list[str], folder: Path, lines: int) -> None:
    proc = subprocess.Popen(argv, cwd=folder, env=_env(), text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = _reader(proc.stdout), _reader(proc.stderr)
    try:
        got = list(islice(_take(out, time.monotonic() + BLOCK_TIMEOUT), lines))
    finally:
        _stop(proc)
        "".join(_take(out, time.monotonic() + 10))  # to the pipe's end, before it is closed
        said = _close(proc, err)
    assert len(got) == lines, f"{block.where}: {len(got)} of {lines} lines; stderr:\n{said}"
    assert "Traceback" not in said, f"{block.where}:\n{said}"


def _run(block: Block, argv: list[str], folder: Path) -> None:
    try:
        done = subprocess.run(argv, cwd=folder, env=_env(), text=True, capture_output=True, timeout=BLOCK_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: still running after {BLOCK_TIMEOUT:g} s")
    assert done.returncode == 0, f"{block.where}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"


RUNNABLE = {page: [b for b in blocks_of(page) if b.lang in RUN and b.skip is None] for page in PAGES}


def stop_lines(page: Path) -> list[int]:
    """The lines (1-based) of the page that stop its background processes."""
    return [i for i, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1) if line.strip() == STOP]


@pytest.mark.parametrize("page", [p for p, b in RUNNABLE.items() if b], ids=lambda p: str(p.relative_to(ROOT)))
def test_the_examples_of_a_page_run(page: Path, tmp_path: Path) -> None:
    ports = _free_ports()
    stops = stop_lines(page)
    gaze_channel = any(b.gaze_channel for b in RUNNABLE[page])
    relay = False  # one simulated Capture and relay for the page's "with a relay" blocks
    with ExitStack() as background:
        for block in RUNNABLE[page]:
            if any(line < block.line for line in stops):
                background.close()
            code = _substitute(block.run_as or block.code, ports)
            argv = _argv(block, code, tmp_path)
            if block.background:
                background.enter_context(_started(argv, tmp_path, block.where))
            elif block.until_lines is not None:
                if not relay:
                    background.enter_context(_relay(tmp_path, ports, gaze_channel=gaze_channel))
                    relay = True
                _run_until(block, argv, tmp_path, block.until_lines)
            else:
                _run(block, argv, tmp_path)


def test_the_readme_is_short_and_links_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 150
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links, "the README links into the site"
    for link in links:
        assert (ROOT / link).is_file(), f"README.md links to {link}, which does not exist"


def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the site needs the docs extra: pip install 'streamdp[docs]'")
    pytest.importorskip("mkdocstrings")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**_env(), "NO_MKDOCS_2_WARNING": "1"},
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "site" / "reference" / "mechanisms" / "index.html").is_file()
