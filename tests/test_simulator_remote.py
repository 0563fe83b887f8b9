"""The simulator's Pupil Remote answers and acts as Capture's (network_api/controller/
pupil_remote_controller.py): replies, notifications on the backbone, a clock that runs."""

from __future__ import annotations

import sys

import msgpack
import pytest
import zmq

from streamdp.network.listening import listening_sockets
from streamdp.network.remote_watch import REMOTE_LOGGER
from streamdp.network.simulator import PUPIL_VERSION, CaptureSimulator
from streamdp.synthetic import generate

REC = generate(duration=2.0, seed=1).recording


@pytest.fixture
def remote():
    ctx = zmq.Context.instance()
    with CaptureSimulator(REC, speed=0, wait_for_subscriber=False) as sim:
        req = ctx.socket(zmq.REQ)
        req.linger = 0
        req.connect(sim.remote_address)
        sub = ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
        sub.setsockopt(zmq.SUBSCRIBE, b"notify.")

        def ask(*frames: bytes) -> str:
            req.send_multipart(list(frames))
            assert req.poll(5000)
            return req.recv_string()

        # the subscription reaches the broker before the first command (no slow-joiner loss)
        for _ in range(50):
            ask(b"notify.probe", msgpack.packb({"subject": "probe"}))
            if sub.poll(100):
                sub.recv_multipart()
                break
        try:
            yield sim, ask, sub
        finally:
            req.close(linger=0)
            sub.close(linger=0)


def _notification(sub: zmq.Socket) -> dict:
    assert sub.poll(5000)
    topic, payload = sub.recv_multipart()
    note = msgpack.unpackb(payload, raw=False)
    assert topic.decode() == note["topic"] == "notify." + note["subject"]
    return note


def test_a_forwarded_message_is_answered_as_capture_does(remote):
    _, ask, sub = remote
    note = {"topic": "notify.custom", "subject": "custom", "x": 1}
    assert ask(b"notify.custom", msgpack.packb(note)) == "Message forwarded."
    assert _notification(sub)["x"] == 1


@pytest.mark.parametrize(
    ("command", "subject", "extra"),
    [
        ("R session_7", "recording.should_start", {"session_name": "session_7"}),
        ("r", "recording.should_stop", {}),
        ("C", "calibration.should_start", {}),
        ("c", "calibration.should_stop", {}),
    ],
)
def test_commands_notify_the_backbone_and_answer_ok(remote, command, subject, extra):
    _, ask, sub = remote
    assert ask(command.encode()) == "OK"
    note = _notification(sub)
    assert note["subject"] == subject and {k: note[k] for k in extra} == extra


def test_t_runs_on_after_the_stream_and_T_moves_it_forward_and_back(remote):
    sim, ask, _ = remote
    assert sim.wait_until_finished(10)
    first = float(ask(b"t"))
    second = float(ask(b"t"))
    assert second > first  # Capture's clock runs; it is not frozen at the last datum
    assert ask(b"T 1000000.0") == "Timesync successful."
    assert 1e6 <= float(ask(b"t")) < 1e6 + 5
    assert ask(b"T -20") == "Timesync successful."
    assert -20 <= float(ask(b"t")) < -15
    assert ask(b"T soon") == "'soon' cannot be converted to float."


def _ask(req: zmq.Socket, command: bytes) -> str:
    req.send(command)
    assert req.poll(5000)
    return req.recv_string()


def test_t_is_the_datas_clock_standing_until_playback_and_running_after():
    rec = generate(duration=3.0, seed=2).recording
    ctx = zmq.Context.instance()
    with CaptureSimulator(rec, speed=0, wait_for_subscriber=True, hwm=0) as sim:
        req = ctx.socket(zmq.REQ)
        req.linger = 0
        req.connect(sim.remote_address)
        sub = ctx.socket(zmq.SUB)
        sub.linger = 0
        try:
            # nothing plays before someone subscribes to gaze: the clock stands at the first datum,
            # never ahead of data still to come
            assert float(_ask(req, b"t")) == float(_ask(req, b"t")) == float(rec.gaze.t[0])
            sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
            sub.setsockopt(zmq.SUBSCRIBE, b"gaze.")
            newest, clock = -float("inf"), [float(_ask(req, b"t"))]
            while not (sim.finished.is_set() and not sub.poll(200)):
                if sub.poll(100):
                    newest = max(newest, msgpack.unpackb(sub.recv_multipart()[1])["timestamp"])
                    clock.append(float(_ask(req, b"t")))
            assert newest == float(rec.gaze.t[rec.gaze.valid][-1])
            assert clock == sorted(clock)  # Pupil time never runs back on its own
            assert float(_ask(req, b"t")) > newest  # and runs on after the stream
        finally:
            req.close(linger=0)
            sub.close(linger=0)


def test_by_default_it_plays_at_once_and_a_stalled_subscriber_loses_messages_as_with_capture():
    # long enough that what the queues and the kernel's socket buffers hold (~17k small messages
    # on loopback) is well under half of it
    rec = generate(duration=180.0, rate=200.0, seed=3).recording
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.rcvhwm = 1000  # ZeroMQ's default, as an app's
    try:
        with CaptureSimulator(rec, speed=0) as sim:
            assert sim.hwm == 1000 and not sim.wait_for_subscriber
            sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
            sub.setsockopt(zmq.SUBSCRIBE, b"")
            assert sim.wait_until_finished(30.0)  # nobody had to subscribe first
            published = sim.published
        received = 0
        while sub.poll(200):  # only now does the subscriber read
            sub.recv_multipart()
            received += 1
    finally:
        sub.close(linger=0)
    assert published > 3 * len(rec.gaze) * 0.9  # gaze and two pupil datums per sample
    assert received < published / 2  # the backbone dropped what the stalled subscriber had no room for


# ------------------------------------------------------------------ binding and restarts, as Capture's
# (network_api/controller/pupil_remote_controller.py, network_api_plugin.py, launchables/world.py, main.py)

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux's /proc/net/tcp")


def _bound(port: int) -> set[str]:
    return {s.address for s in listening_sockets() if s.port == port}


@pytest.fixture
def capture_like():
    """The simulator bound as Capture binds (every interface), a REQ on Pupil Remote and a SUB on
    the backbone's notifications and log records, joined before the test starts."""
    ctx = zmq.Context.instance()
    with CaptureSimulator(REC, speed=0, remote_host="*", backbone_host="*") as sim:
        req = ctx.socket(zmq.REQ)
        req.linger = 0
        req.connect(sim.remote_address)
        sub = ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
        for topic in (b"notify.", b"logging."):
            sub.setsockopt(zmq.SUBSCRIBE, topic)
        for _ in range(50):
            assert _ask_multi(req, b"notify.probe", msgpack.packb({"subject": "probe"})) == "Message forwarded."
            if sub.poll(100):
                sub.recv_multipart()
                break
        try:
            yield sim, req, sub
        finally:
            req.close(linger=0)
            sub.close(linger=0)


def _ask_multi(req: zmq.Socket, *frames: bytes) -> str:
    req.send_multipart(list(frames))
    assert req.poll(5000)
    return req.recv_string()


def _events(sub: zmq.Socket, count: int) -> list[tuple[str, str]]:
    """The next ``count`` notifications and log records as (topic, subject or message)."""
    out = []
    for _ in range(count):
        assert sub.poll(5000), out
        topic, payload = sub.recv_multipart()
        body = msgpack.unpackb(payload, raw=False)
        if topic.startswith(b"logging."):
            assert body["name"] == REMOTE_LOGGER and body["levelname"] == topic.decode().split(".")[1].upper()
        out.append((topic.decode(), body.get("subject") or body["msg"]))
    return out


@LINUX
def test_by_default_everything_listens_on_loopback_only():
    with CaptureSimulator(REC, speed=0) as sim:
        for port in (sim.ports.remote, sim.ports.sub, sim.ports.pub):
            assert _bound(port) == {"127.0.0.1"}


@LINUX
def test_bound_as_capture_pupil_remote_and_the_backbone_listen_on_every_interface(capture_like):
    sim, req, _ = capture_like
    for port in (sim.ports.remote, sim.ports.sub, sim.ports.pub):
        assert _bound(port) == {"0.0.0.0"}
    assert sim.remote_address == f"tcp://127.0.0.1:{sim.ports.remote}"  # Capture's "Connect locally"
    assert _ask_multi(req, b"SUB_PORT") == str(sim.ports.sub)


@LINUX
def test_a_restart_from_the_menu_rebinds_and_is_announced_only_by_log_records(capture_like):
    sim, req, sub = capture_like
    port = sim.ports.remote
    sim.restart_remote(host="127.0.0.1")
    assert _events(sub, 2) == [
        ("logging.debug", "on_pupil_remote_server_did_stop"),
        ("logging.debug", f"on_pupil_remote_server_did_start(127.0.0.1:{port})"),
    ]
    assert sim.ports.remote == port and _bound(port) == {"127.0.0.1"}
    assert _ask_multi(req, b"PUB_PORT") == str(sim.ports.pub)  # the same REQ reconnects to the new socket
    assert _bound(sim.ports.sub) == {"0.0.0.0"}  # the backbone stays where main.py bound it


@LINUX
def test_a_bind_that_fails_falls_back_to_every_interface_and_a_random_port(capture_like):
    sim, _, sub = capture_like
    port = sim.ports.remote
    sim.restart_remote(host="192.0.2.1")  # TEST-NET-1: no interface here has it
    (stopped, failed) = _events(sub, 2)
    assert stopped == ("logging.debug", "on_pupil_remote_server_did_stop")
    assert failed[0] == "logging.error" and failed[1].startswith("Could not bind to Socket: tcp://192.0.2.1:")
    assert sim.ports.remote != port and _bound(sim.ports.remote) == {"0.0.0.0"}
    req = zmq.Context.instance().socket(zmq.REQ)
    req.linger = 0
    req.connect(sim.remote_address)
    try:
        assert _ask_multi(req, b"SUB_PORT") == str(sim.ports.sub)
    finally:
        req.close(linger=0)


@LINUX
def test_start_plugin_naming_the_network_api_restarts_pupil_remote_with_its_args(capture_like):
    sim, req, sub = capture_like
    port = sim.ports.remote
    note = {"subject": "start_plugin", "name": "NetworkApiPlugin", "topic": "notify.start_plugin"}
    note["args"] = {"host": "127.0.0.1", "use_primary_interface": False, "format": "bgr"}
    assert _ask_multi(req, b"notify.start_plugin", msgpack.packb(note)) == "Message forwarded."
    assert _events(sub, 5) == [
        ("notify.start_plugin", "start_plugin"),
        ("notify.frame_publishing.stopped", "frame_publishing.stopped"),
        ("logging.debug", "on_pupil_remote_server_did_stop"),
        ("notify.frame_publishing.started", "frame_publishing.started"),
        ("logging.debug", f"on_pupil_remote_server_did_start(127.0.0.1:{port})"),
    ]
    assert _bound(port) == {"127.0.0.1"} and _ask_multi(req, b"v") == PUPIL_VERSION


def test_stop_plugin_naming_the_network_api_stops_pupil_remote(capture_like):
    _, req, sub = capture_like
    note = {"subject": "stop_plugin", "name": "NetworkApiPlugin", "topic": "notify.stop_plugin"}
    assert _ask_multi(req, b"notify.stop_plugin", msgpack.packb(note)) == "Message forwarded."
    assert _events(sub, 3)[-1] == ("logging.debug", "on_pupil_remote_server_did_stop")
    req.send(b"t")
    assert not req.poll(300)  # nobody answers any more


def test_start_plugin_naming_another_plugin_leaves_pupil_remote_alone(capture_like):
    sim, req, sub = capture_like
    note = {"subject": "start_plugin", "name": "Fixation_Detector", "args": {}, "topic": "notify.start_plugin"}
    assert _ask_multi(req, b"notify.start_plugin", msgpack.packb(note)) == "Message forwarded."
    assert _events(sub, 1) == [("notify.start_plugin", "start_plugin")]
    assert not sub.poll(200) and _ask_multi(req, b"SUB_PORT") == str(sim.ports.sub)
