"""The simulator's Pupil Remote answers and acts as Capture's (network_api/controller/
pupil_remote_controller.py): replies, notifications on the backbone, a clock that runs."""

from __future__ import annotations

import msgpack
import pytest
import zmq

from streamdp.network.simulator import CaptureSimulator
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
