"""``python -m tests.real_capture [PYTEST ARGS]``: the real-Capture checks, in one command.

Installs the real Capture v3.6 (``install.sh``: Debian packages, its venv, a tagged copy of
``../shared/pupil-capture/v3.6``), makes a network namespace of its own (loopback and a veth
pair, both ends inside it: Capture binds on every interface, and its NDSI beacon needs a
device beyond loopback), runs ``pytest -m real_capture`` inside it and removes the namespace
(and anything still running in it) whatever happened. Where ``../shared/pupil-capture`` is
absent or no namespace can be made (not root, no ``ip``), it says so in one line and exits 0
(with ``--require-namespace``, as CI runs it: 1 when no namespace can be made).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .harness import REPO, SHARED_CAPTURE, install


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


def make_namespace(name: str) -> str | None:
    """Make the namespace; None when it can be made, else why not."""
    if shutil.which("ip") is None:
        return "no `ip` command (Debian's iproute2)"
    try:
        _ip("netns", "add", name)
        _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", name, "link", "add", "cap0", "type", "veth", "peer", "name", "cap1")
        _ip("-n", name, "link", "set", "cap0", "up")
        _ip("-n", name, "link", "set", "cap1", "up")
    except subprocess.CalledProcessError as exc:
        remove_namespace(name)
        return f"`ip {' '.join(exc.cmd[1:])}` failed: {exc.stderr.strip()}"
    return None


def remove_namespace(name: str) -> None:
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True).stdout.split()
    for pid in pids:
        try:
            os.kill(int(pid), 9)
        except (ProcessLookupError, ValueError):
            pass
    subprocess.run(["ip", "netns", "delete", name], capture_output=True)


def main() -> int:
    if not (SHARED_CAPTURE / "v3.6" / "pupil_src").is_dir():
        print(f"real-Capture checks skipped: no Capture source at {SHARED_CAPTURE}/v3.6")
        return 0
    args = sys.argv[1:]
    required = "--require-namespace" in args  # CI: a namespace that cannot be made is a failure
    args = [a for a in args if a != "--require-namespace"]
    name = f"streamdp-capture-{os.getpid()}"
    problem = make_namespace(name)
    if problem is not None:
        print(f"real-Capture checks {'FAILED' if required else 'skipped'}: no network namespace here ({problem})")
        return 1 if required else 0
    try:
        install()  # once, outside the tests' time
        env = {**os.environ, "STREAMDP_CAPTURE_NETNS": name}
        command = ["ip", "netns", "exec", name, sys.executable, "-m", "pytest", "-m", "real_capture",
                   "-p", "no:cacheprovider", "tests/real_capture", *args]  # fmt: skip
        return subprocess.run(command, env=env, cwd=REPO).returncode
    finally:
        remove_namespace(name)


if __name__ == "__main__":
    sys.exit(main())
