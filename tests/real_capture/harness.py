"""The real Pupil Capture v3.6, run headless for tests: installed, played synthetic eyes, stopped.

Everything here runs inside the network namespace that ``python -m tests.real_capture`` makes
(loopback and a veth pair, both ends inside): Capture binds Pupil Remote and its backbone on every
interface, and nothing it binds must be reachable from outside. Capture runs from a git-tagged
copy of ``../shared/pupil-capture/v3.6`` with its own venv (``install.sh``), under an Xvfb of its
own (``--hide-ui`` still opens GLFW windows), in a process group of its own that :meth:`stop`
ends. Each eye process and the world process get frames from a synthetic camera (``camera.py``)
through Capture's ``HMD_Streaming_Source``, stamped with Capture's clock, and ``Gazer3D`` maps with
fixed parameters, as a calibration would have left them.

Facts this follows (``../shared/pupil-capture/README.md`` and Capture's source): Pupil Remote
answers ``v`` some seconds after launch; a notification sent to an eye process before it runs is
lost, so sources start only after each process has answered ``meta.should_doc``; a source run's
user folder is ``<checkout>/capture_settings``; a bare SIGINT has left eye processes behind, so
Capture is stopped with ``launcher_process.should_stop`` and then its process group is ended.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import zmq

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SHARED_CAPTURE = Path(os.environ.get("STREAMDP_SHARED_CAPTURE", REPO.parent / "shared" / "pupil-capture"))
HOME = Path(os.environ.get("STREAMDP_CAPTURE_HOME", Path.home() / ".cache" / "streamdp-capture"))
#: the eye cameras' rate (Pupil Core's eye cameras run at 120 or 200 Hz)
EYE_RATE = int(os.environ.get("STREAMDP_CAPTURE_EYE_RATE", "120"))


@dataclass(frozen=True)
class Installation:
    python: Path
    checkout: Path

    @property
    def pupil_src(self) -> Path:
        return self.checkout / "pupil_src"

    @property
    def settings(self) -> Path:
        return self.checkout / "capture_settings"


def install() -> Installation:
    """Run ``install.sh`` (idempotent: seconds once installed) and return what it installed."""
    out = subprocess.run(
        ["bash", str(HERE / "install.sh"), str(SHARED_CAPTURE)],
        capture_output=True, text=True, timeout=1200,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(f"installing the real Capture failed:\n{out.stderr[-3000:]}")
    paths = dict(line.split("=", 1) for line in out.stdout.splitlines() if "=" in line)
    return Installation(Path(paths["python"]), Path(paths["checkout"]))


def _params() -> dict[str, Any]:
    """Gazer3D's parameters as a calibration leaves them: each eye camera faces its eye (turned
    180° about y from the world camera), 30 mm either side of it, 15 mm below, 20 mm behind."""

    def pose(x: float) -> list[list[float]]:
        m = np.eye(4)
        m[:3, :3] = [[-1, 0, 0], [0, 1, 0], [0, 0, -1]]
        m[:3, 3] = [x, 15.0, -20.0]
        return m.tolist()

    return {
        "right_model": {"eye_camera_to_world_matrix": pose(-30.0), "gaze_distance": 500.0},
        "left_model": {"eye_camera_to_world_matrix": pose(30.0), "gaze_distance": 500.0},
        "binocular_model": {"eye_camera_to_world_matrix0": pose(-30.0), "eye_camera_to_world_matrix1": pose(30.0)},
    }


def start_xvfb(timeout: float = 30.0) -> tuple[subprocess.Popen[bytes], int]:
    """An Xvfb on a display it chose itself, returned once it accepts clients: Xvfb writes the
    display number to ``-displayfd`` only when it is ready, so Capture never meets a display that
    is not there yet (its world process then dies while the launcher lives on, and Pupil Remote
    never answers)."""
    read_end, write_end = os.pipe()
    try:
        xvfb = subprocess.Popen(
            ["Xvfb", "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "1280x1024x24"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=(write_end,),
        )  # fmt: skip
        os.close(write_end)
        write_end = -1
        text = b""
        deadline = time.monotonic() + timeout
        while not text.endswith(b"\n"):
            ready, _, _ = select.select([read_end], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(read_end, 64) if ready else b""
            if not chunk:  # Xvfb exited, or the deadline passed
                end_group(xvfb)
                raise RuntimeError(f"Xvfb gave no display within {timeout:g} s (exit code {xvfb.poll()})")
            text += chunk
        return xvfb, int(text)
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


def _tail(path: Path, lines: int = 15) -> str:
    if not path.exists():
        return f"  ({path.name}: none)"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join([f"  {path.name}, its last {len(text)} lines:"] + [f"    {line}" for line in text])


class Remote:
    """A Pupil Remote client as pupil-helpers write one: REQ, every answer awaited with a poller."""

    def __init__(self, address: str, context: zmq.Context, timeout: float = 10.0) -> None:
        self.address, self._ctx, self.timeout = address, context, timeout
        self._req = self._socket()

    def _socket(self) -> zmq.Socket:
        req = self._ctx.socket(zmq.REQ)
        req.linger = 0
        req.connect(self.address)
        return req

    def _answer(self, what: str) -> str:
        if not self._req.poll(int(self.timeout * 1000)):
            self._req.close(linger=0)
            self._req = self._socket()  # a REQ that got no answer cannot send again
            raise TimeoutError(f"Pupil Remote at {self.address} did not answer {what!r} in {self.timeout:g} s")
        return self._req.recv_string()

    def ask(self, command: str) -> str:
        self._req.send_string(command)
        return self._answer(command)

    def notify(self, notification: dict[str, Any]) -> str:
        self._req.send_string(f"notify.{notification['subject']}", zmq.SNDMORE)
        self._req.send(msgpack.packb(notification, use_bin_type=True))
        return self._answer(notification["subject"])

    def close(self) -> None:
        self._req.close(linger=0)


@dataclass
class GazeCount:
    """What Capture's backbone carried: gaze and pupil datums per topic, and how far each gaze
    datum arrived behind the newest gaze already published (seconds)."""

    topics: Counter[str] = field(default_factory=Counter)
    behind: list[float] = field(default_factory=list)
    newest: float = -np.inf

    @property
    def total(self) -> int:
        """Gaze datums."""
        return sum(n for topic, n in self.topics.items() if topic.startswith("gaze."))

    def late_share(self, seconds: float = 0.15) -> float:
        return float(np.mean(np.asarray(self.behind) > seconds)) if self.behind else 0.0

    @property
    def max_behind(self) -> float:
        return float(np.max(self.behind)) if self.behind else 0.0


class BackboneGaze:
    """Counts the gaze on Capture's backbone in a thread of its own (from :meth:`start` to
    :meth:`stop`), as a third subscriber beside the relay and the plugin."""

    def __init__(self, sub_port: int, context: zmq.Context) -> None:
        self.count = GazeCount()
        self._sub = context.socket(zmq.SUB)
        self._sub.linger = 0
        self._sub.rcvhwm = 0  # count everything Capture published, however late it is read
        self._sub.connect(f"tcp://127.0.0.1:{sub_port}")
        self._sub.subscribe(b"gaze.")
        self._sub.subscribe(b"pupil.")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> BackboneGaze:
        self._thread.start()
        return self

    def _run(self) -> None:
        count, poller = self.count, zmq.Poller()
        poller.register(self._sub, zmq.POLLIN)
        while not self._stop.is_set():
            if not poller.poll(200):
                continue
            while True:
                try:
                    frames = self._sub.recv_multipart(zmq.NOBLOCK)
                except zmq.Again:
                    break
                topic = frames[0].decode()
                count.topics[topic] += 1
                if not topic.startswith("gaze."):
                    continue
                t = float(msgpack.unpackb(frames[1], raw=False)["timestamp"])
                count.behind.append(max(0.0, count.newest - t))
                count.newest = max(count.newest, t)

    def stop(self) -> GazeCount:
        self._stop.set()
        self._thread.join(10)
        self._sub.close(linger=0)
        return self.count


class RealCapture:
    """Pupil Capture v3.6 running headless, its eyes playing, gaze mapped.

    Parameters
    ----------
    installation : Installation
        From :func:`install`.
    port : int
        Pupil Remote's port (inside the namespace: nothing else listens there).
    log : Path
        Where Capture's console output goes.
    """

    def __init__(self, installation: Installation, *, port: int = 50020, log: Path) -> None:
        self.installation, self.port, self.console = installation, port, log
        self.context = zmq.Context()
        self._processes: list[subprocess.Popen[bytes]] = []
        self.remote: Remote | None = None
        self.camera: subprocess.Popen[bytes] | None = None

    # ------------------------------------------------------------------ where things are

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    @property
    def plugins_dir(self) -> Path:
        return self.installation.settings / "plugins"

    @property
    def capture_log(self) -> Path:
        return self.installation.settings / "capture.log"

    @property
    def recordings(self) -> Path:
        return self.installation.settings.parent / "recordings"

    # ------------------------------------------------------------------ lifecycle

    def fresh_settings(self) -> None:
        """A fresh session: no user settings of an earlier run, no runtime plugins, no log."""
        settings = self.installation.settings
        for old in settings.glob("user_settings_*"):
            old.unlink()
        shutil.rmtree(self.plugins_dir, ignore_errors=True)
        self.plugins_dir.mkdir(parents=True, exist_ok=True)
        self.capture_log.unlink(missing_ok=True)

    def launch(self, timeout: float = 90.0, attempts: int = 3) -> None:
        """Start Xvfb and Capture, and wait until Pupil Remote answers and every process is up.

        Capture's world process sometimes hangs at its start ("ndsi.network: Starting network…",
        ``../shared/pupil-capture/README.md``) and then never binds Pupil Remote: a start that gives
        no answer within ``timeout`` is ended and made again, up to ``attempts`` in all; the error
        names each attempt and ends with Capture's console and log.
        """
        failures: list[str] = []
        logs = ""
        for attempt in range(1, attempts + 1):
            try:
                self._launch_once(timeout)
                if failures:
                    print(f"Capture started at attempt {attempt}: " + "; ".join(failures), file=sys.stderr)
                return
            except (TimeoutError, RuntimeError) as error:
                failures.append(f"attempt {attempt}: {error}")
                logs = "\n".join((_tail(self.console), _tail(self.capture_log)))
                self._end_processes(timeout=5.0)
                if self.capture_log.exists():
                    self.capture_log.replace(self.capture_log.with_suffix(f".log.failed{attempt}"))
        raise TimeoutError("Capture did not start: " + "; ".join(failures) + "\n" + logs)

    def _launch_once(self, timeout: float) -> None:
        xvfb, display = start_xvfb()
        self._processes.append(xvfb)
        env = {**os.environ, "DISPLAY": f":{display}"}
        env.pop("PYTHONPATH", None)
        with self.console.open("ab") as out:
            capture = subprocess.Popen(
                [str(self.installation.python), "main.py", "capture", "--hide-ui", "--port", str(self.port)],
                cwd=self.installation.pupil_src, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self._processes.append(capture)
        self.remote = Remote(self.address, self.context, timeout=5.0)
        deadline = time.monotonic() + timeout
        version = ""
        while version != "3.6.0":
            if capture.poll() is not None:
                raise RuntimeError(f"Capture exited with {capture.returncode}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"Pupil Remote did not answer 'v' with 3.6.0 within {timeout:g} s ({version!r})")
            try:
                version = self.remote.ask("v")
            except TimeoutError:
                continue
        self.remote.timeout = 10.0
        self.wait_for_processes(("eye0", "eye1", "capture"), max(30.0, deadline - time.monotonic()))

    def wait_for_processes(self, actors: tuple[str, ...], timeout: float) -> None:
        """Ask for ``meta.should_doc`` until each of ``actors`` has answered ``meta.doc``."""
        assert self.remote is not None
        sub = self.subscribe("notify.meta.doc")
        seen: set[str] = set()
        deadline = time.monotonic() + timeout
        try:
            while not set(actors) <= seen:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"Capture's processes {sorted(set(actors) - seen)} did not start")
                self.remote.notify({"subject": "meta.should_doc"})
                end = time.monotonic() + 2.0
                while sub.poll(200) or time.monotonic() < end:
                    if sub.poll(0):
                        seen.add(msgpack.unpackb(sub.recv_multipart()[1], raw=False).get("actor", ""))
                    if set(actors) <= seen:
                        break
        finally:
            sub.close(linger=0)

    def play(self, rate: int = EYE_RATE, eye_lag: float = 0.0) -> None:
        """Each eye camera streams its synthetic eye at ``rate`` Hz, the world camera at 30 Hz, on
        Capture's clock (``camera.py``); with ``eye_lag``, one eye process at a time falls behind
        by up to that many seconds. Gazer3D maps."""
        assert self.remote is not None
        self.camera = subprocess.Popen(
            [str(self.installation.python), str(HERE / "camera.py"), self.address, str(rate), str(eye_lag)],
            stdout=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self._processes.insert(0, self.camera)
        for eye in (0, 1):
            self.remote.notify({
                "subject": "start_eye_plugin", "target": f"eye{eye}", "name": "HMD_Streaming_Source",
                "args": {"topics": [f"hmd_streaming.eye{eye}"]},
            })  # fmt: skip
        self.remote.notify({
            "subject": "start_plugin", "name": "HMD_Streaming_Source", "args": {"topics": ["hmd_streaming.world"]},
        })  # fmt: skip
        self.remote.notify({"subject": "start_plugin", "name": "Gazer3D", "args": {"params": _params()}})

    def stop_eyes(self) -> None:
        """The eye cameras stop: no gaze from now on; the world camera goes on (world frames keep
        Capture's plugins, streamdp's among them, running)."""
        if self.camera is not None:
            self.camera.send_signal(signal.SIGUSR1)

    def restart(self) -> None:
        """Capture stops and starts again (its cameras with it): new backbone ports, the same
        user settings. The earlier run's log is kept as ``capture.log.1``."""
        self._end_processes()
        if self.capture_log.exists():
            self.capture_log.replace(self.capture_log.with_suffix(".log.1"))
        self.launch()

    def stop(self, timeout: float = 30.0) -> None:
        """``launcher_process.should_stop``, then end every process group started here."""
        self._end_processes(timeout)
        self.context.destroy(linger=0)  # whatever a failed test left open

    def _end_processes(self, timeout: float = 30.0) -> None:
        if self.remote is not None:
            try:
                self.remote.notify({"subject": "launcher_process.should_stop"})
            except TimeoutError:
                pass
            self.remote.close()
            self.remote = None
        capture = self._processes[-1] if self._processes else None
        if capture is not None:
            try:
                capture.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        for p in reversed(self._processes):
            end_group(p)
        self._processes.clear()
        self.camera = None

    def __enter__(self) -> RealCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ the backbone

    @property
    def sub_port(self) -> int:
        assert self.remote is not None
        return int(self.remote.ask("SUB_PORT"))

    def subscribe(self, *topics: str) -> zmq.Socket:
        sub = self.context.socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"tcp://127.0.0.1:{self.sub_port}")
        for topic in topics:
            sub.subscribe(topic.encode())
        return sub

    def count_gaze(self) -> BackboneGaze:
        return BackboneGaze(self.sub_port, self.context).start()

    def log_problems(self, name: str = "streamdp") -> list[str]:
        """Capture's log lines at WARNING or above that name ``name``."""
        text = self.capture_log.read_text(errors="replace") if self.capture_log.exists() else ""
        return [line for line in text.splitlines() if name in line and ("[WARNING]" in line or "[ERROR]" in line)]


def end_group(process: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """SIGTERM to the process group, then SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout)
            try:
                os.killpg(process.pid, 0)  # children of the group may outlive its leader
            except ProcessLookupError:
                return
        except subprocess.TimeoutExpired:
            pass


class StreamdpListener:
    """Collects what a streamdp endpoint publishes (its chunks) and its owner's status socket
    says (counters), in a thread of its own, as an app and the device owner would."""

    def __init__(self, endpoint: str, status: str, context: zmq.Context) -> None:
        self.chunks: list[dict[str, Any]] = []
        self.statuses: list[dict[str, Any]] = []
        self._subs = []
        for address, topic in ((endpoint, b"streamdp.features."), (status, b"streamdp.status")):
            sub = context.socket(zmq.SUB)
            sub.linger = 0
            sub.connect(address)
            sub.subscribe(topic)
            self._subs.append(sub)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        poller = zmq.Poller()
        for sub in self._subs:
            poller.register(sub, zmq.POLLIN)
        while not self._stop.is_set():
            for sub, _ in poller.poll(200):
                topic, payload = sub.recv_multipart()[:2]
                message = msgpack.unpackb(payload, raw=False)
                (self.statuses if topic.startswith(b"streamdp.status") else self.chunks).append(message)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        for sub in self._subs:
            sub.close(linger=0)

    @property
    def last_status(self) -> dict[str, Any]:
        return self.statuses[-1] if self.statuses else {}


def doctor(capture: RealCapture, *options: str) -> tuple[int, dict[str, Any]]:
    """``streamdp doctor --json`` on this Capture: its exit code and report."""
    out = subprocess.run(
        [sys.executable, "-m", "streamdp.cli", "doctor", "--remote", capture.address, "--timeout", "5", "--json",
         *options],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return out.returncode, json.loads(out.stdout)


def _answers(remote: Remote, tries: int) -> bool:
    """Whether Pupil Remote answers ``v`` within ``tries`` requests (a request that reaches the old
    server as it stops is never answered: each timeout opens a new REQ socket)."""
    for _ in range(tries):
        try:
            if remote.ask("v") == "3.6.0":
                return True
        except TimeoutError:
            continue
    return False


def _listening(port: int) -> set[str]:
    """The addresses ``port`` listens on in this namespace."""
    from streamdp.network.listening import listening_sockets

    return {s.address for s in listening_sockets() if s.port == port}


def _pupil_remote_elsewhere(capture: RealCapture, exclude: set[int]) -> str | None:
    """The address where a Pupil Remote answers ``v`` among this namespace's listening ports
    (only Capture listens here), ``exclude`` aside; None if none does."""
    from streamdp.network.listening import listening_sockets

    for port in sorted({s.port for s in listening_sockets()} - exclude):
        probe = Remote(f"tcp://127.0.0.1:{port}", capture.context, timeout=1.0)
        try:
            if _answers(probe, tries=1):
                return probe.address
        finally:
            probe.close()
    return None


def make_private(capture: RealCapture) -> None:
    """The documented private setup (docs/threat-model.md): Pupil Remote restarted on loopback as
    the plugin's button has Capture do it, then the backbone closed with the nftables commands
    the doctor prints (this namespace's firewall; ``nft delete table inet streamdp_capture``
    undoes it)."""
    from streamdp.capture.watch import pupil_remote_to_loopback

    assert capture.remote is not None
    backbone = {int(capture.remote.ask("SUB_PORT")), int(capture.remote.ask("PUB_PORT"))}
    pressed = []
    for _ in range(3):  # as a user presses the plugin's button again when the verdict stays red
        capture.remote.notify(pupil_remote_to_loopback([]))
        capture.remote.close()
        capture.remote = Remote(capture.address, capture.context, timeout=3.0)
        # done when the table of listening sockets shows the port on loopback only (the old server
        # answers until Capture has ended it), or Pupil Remote answers on another port: Capture's
        # rebind to the same port can find the old socket still bound (ZeroMQ closes it later, on
        # its own thread), logs "Address already in use" and binds Pupil Remote to a random port
        # on every interface (pupil_remote_controller.py, __start_server)
        deadline, fallback = time.monotonic() + 30.0, None
        while (where := _listening(capture.port)) != {"127.0.0.1"} and time.monotonic() < deadline:
            if not where and (fallback := _pupil_remote_elsewhere(capture, exclude=backbone | {capture.port})):
                break
            time.sleep(0.2)
        if where == {"127.0.0.1"} and _answers(capture.remote, tries=5):
            capture.remote.timeout = 10.0
            break
        pressed.append(f"Pupil Remote on {fallback or sorted(where) or 'no port found'}")
        if fallback is None:
            raise RuntimeError(f"Pupil Remote did not come back: {'; '.join(pressed)}")
        capture.remote.close()
        capture.remote = Remote(fallback, capture.context, timeout=10.0)
    else:
        raise RuntimeError(f"Pupil Remote did not come back on loopback: {'; '.join(pressed)}")
    if pressed:
        print(f"make_private: pressed again after {'; '.join(pressed)}", file=sys.stderr)
    _, report = doctor(capture)
    commands = [c.removeprefix("sudo ") for c in report["firewall_commands"] if c.startswith("sudo nft ")]
    if not commands:
        raise RuntimeError(f"the doctor printed no nftables commands: {report['firewall_commands']}")
    subprocess.run(["nft", "delete", "table", "inet", "streamdp_capture"], capture_output=True)
    for command in commands:
        subprocess.run(["bash", "-c", command], check=True, timeout=30)
