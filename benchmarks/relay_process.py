"""A relay in a process of its own, importing only what ``streamdp relay`` imports, for the memory
benchmark (``python -m benchmarks.relay_process REMOTE``).

The default session (OS entropy, the CLI's publisher on a loopback port) runs :meth:`Relay.run`
in the main thread, as the CLI does. The process speaks JSON lines: on stdout one ``ready`` line
(pid, the publisher's endpoint, the modules loaded) once the session is built and connected, an
answer per command, and a ``stopped`` line (counters, modules loaded) at the end; on stdin the
commands ``trim`` (glibc's ``malloc_trim(0)``, to see whether freed heap goes back to the
system) and ``stop``.
"""

from __future__ import annotations

import ctypes
import json
import sys
import threading

from streamdp.config import SessionConfig
from streamdp.network.relay import Relay
from streamdp.network.sink import ReleasePublisher
from streamdp.session import Session

#: modules a relay must not load: a solver, the synthetic data's SciPy, the test machinery
FORBIDDEN = ("scipy.optimize", "scipy.signal", "streamdp.synthetic", "pytest")


def loaded() -> dict[str, object]:
    mods = sys.modules
    return {
        "forbidden": [m for m in FORBIDDEN if m in mods],
        "scipy": sorted(m for m in mods if m == "scipy" or m.startswith("scipy.")),
        "count": len(mods),
    }


def say(**message: object) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _commands(relay: Relay) -> None:
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "trim":
            say(event="trimmed", released_memory=bool(ctypes.CDLL("libc.so.6").malloc_trim(0)))
        elif cmd == "stop":
            break
    relay.stop()


def main(remote: str) -> None:
    sink = ReleasePublisher("tcp://127.0.0.1:0")
    relay = Relay(Session(SessionConfig(), sinks=[sink]), remote=remote)
    relay._connect()
    say(event="ready", endpoint=sink.endpoint, modules=loaded())
    threading.Thread(target=_commands, args=(relay,), daemon=True).start()
    try:
        c = relay.run()
    finally:
        sink.close()
    say(event="stopped", received=c.received, shed=c.shed, released=c.released, late=c.late, modules=loaded())


if __name__ == "__main__":
    main(sys.argv[1])
