"""The live path on real sockets on loopback: simulated Capture → relay → subscriber.

Sockets bind to 127.0.0.1 on random ports with linger 0; every receive goes through a poller
with a timeout; nothing sleeps to wait for a message.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.config import SessionConfig
from streamdp.gaze import Recording
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.pipeline import FeaturePipeline
from streamdp.pupil_wire.encode import capture_datums, encode
from streamdp.readers import read_recording
from streamdp.session import Session
from streamdp.stages.schedule import ReleaseSchedule
from streamdp.synthetic import generate

from .conftest import shared
from .live_harness import LOSSLESS, live
from .stderr_lines import read_lines

SYN = generate(duration=110.0, rate=200.0, seed=4).recording  # 160 steps: 5 chunks of 32


def _config(seed: int = 7, n: int = 32, **changes) -> SessionConfig:
    return SessionConfig(mechanism="dcfpa", epsilon=1.0, chunk_length=n, seed=seed, **changes)


def _session(sink: ReleasePublisher, **config) -> Session:
    return Session(_config(**config), sinks=[sink])


def _receive(sub: zmq.Socket, n_chunks: int, timeout: float = 10.0) -> tuple[list[dict], list[list[bytes]]]:
    chunks, frames = [], []
    while len(chunks) < n_chunks and sub.poll(int(timeout * 1000)):
        f = sub.recv_multipart()
        frames.append(f)
        msg = msgpack.unpackb(f[1], raw=False, strict_map_key=False)
        if f[0].startswith(b"streamdp.features."):
            chunks.append(msg)
    return chunks, frames


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _offline(recording: Recording, seed: int = 7, n: int = 32, **changes):
    return Session.for_recording(_config(seed, n, **changes), recording).run(recording)


def test_simulate_relay_subscriber_equals_the_offline_pipeline_on_synthetic_gaze():
    want = _offline(SYN)
    with live(SYN, _config()) as (_, relay, sub):
        got, _ = _receive(sub, len(want) - 1)
    # the relay holds the last 50 ms for reordering, so the offline run may finish one more chunk
    assert len(got) >= len(want) - 1 >= 3
    for msg, rel in zip(got, want, strict=False):
        np.testing.assert_array_equal(np.array(msg["values"]), rel.values)
        np.testing.assert_array_equal(np.array(msg["t"]), rel.t)
        assert msg["ledger"]["chunk_index"] == rel.ledger["chunk_index"]
    assert relay.counters.malformed == relay.counters.invalid == relay.counters.late == 0


def test_simulate_relay_subscriber_equals_the_offline_pipeline_on_a_real_recording():
    rec = read_recording(shared("cateyes_119hz", "test_data_full.csv"))
    want = _offline(rec, n=64)
    with live(rec, _config(n=64)) as (_, _relay, sub):
        got, _ = _receive(sub, len(want) - 1)
    assert len(got) >= len(want) - 1 >= 7
    for msg, rel in zip(got, want, strict=False):
        np.testing.assert_array_equal(np.array(msg["values"]), rel.values)


def test_no_raw_gaze_pupil_or_unsanitized_feature_leaves_the_relay():
    rows = FeaturePipeline().run(SYN)
    g = SYN.gaze
    raw = {float(v) for arr in (g.x, g.y, g.confidence, g.diameter) for v in arr.tolist() if np.isfinite(v)}
    with live(SYN, _config()) as (_, relay, sub):
        chunks, frames = _receive(sub, 4)
        relay.session.publish_status()  # the counters go to the owner's socket, if any: never here
        while sub.poll(200):
            frames.append(sub.recv_multipart())
    assert len(chunks) == 4
    for topic, payload in frames:
        assert topic == b"streamdp.features.dcfpa"  # no status, no raw topic
        msg = msgpack.unpackb(payload, raw=False, strict_map_key=False)
        # no clip rate either: it is a raw function of the gaze
        assert set(msg) == {"topic", "schema_version", "names", "t", "values", "ledger"}
        values = np.array(msg["values"])
        assert values.shape == (32, 52)
        # nothing published equals a raw gaze, confidence or pupil value
        assert not raw & {float(v) for v in values.ravel()}
        # and no chunk is the unsanitized features: the released ones are noised, the others
        # (weight 0) are the profile's public midpoints
        i = int(np.searchsorted(rows.t, msg["t"][0]))
        profile = _config().bounds_profile()
        kept = profile.released
        assert 0 < kept.sum() < 52
        assert not np.any(np.isclose(values[:, kept], rows.values[i : i + 32][:, kept], rtol=1e-9, atol=0))
        constants = np.broadcast_to(profile.midpoint[~kept], (32, int((~kept).sum())))
        np.testing.assert_array_equal(values[:, ~kept], constants)
        ledger_numbers = [v for v in msg["ledger"].values() if isinstance(v, float)]
        assert not raw & set(ledger_numbers)


def test_garbage_on_the_backbone_is_counted_and_skipped_without_changing_the_output():
    want = _offline(SYN)
    with live(SYN, _config(), wait_for_subscriber=True) as (sim, relay, sub):
        pub = zmq.Context.instance().socket(zmq.PUB)
        pub.linger = 0
        pub.connect(f"tcp://127.0.0.1:{sim.ports.pub}")
        # garbage goes in as a real app would publish it, before and during the stream
        garbage = [
            [b"gaze.3d.01.", b"\xc1\xc1 not msgpack"],
            [b"gaze.3d.01.", msgpack.packb([1, 2, 3])],
            [b"gaze.3d.01.", msgpack.packb({"timestamp": "soon", "norm_pos": [0.5, 0.5], "confidence": 1.0})],
            [b"gaze.3d.01.", msgpack.packb({"timestamp": 1e3, "norm_pos": "middle", "confidence": 1.0})],
            [b"gaze.3d.01.", msgpack.packb({"timestamp": 1e3, "norm_pos": [0.5, 0.5], "confidence": 3.0})],
            [b"gaze.3d.01."],
        ]
        while relay.counters.malformed + relay.counters.invalid < 1:
            for g in garbage:
                pub.send_multipart(g)
            sub.poll(20)
        got, _ = _receive(sub, len(want) - 1)
        pub.close(linger=0)
    assert relay.counters.malformed >= 1 and relay.counters.invalid >= 1
    for msg, rel in zip(got, want, strict=False):
        np.testing.assert_array_equal(np.array(msg["values"]), rel.values)


def test_capture_restart_starts_a_new_segment_and_nothing_spans_it():
    first = generate(duration=80.0, rate=200.0, seed=1, start_time=5000.0).recording  # 100 steps
    second = generate(duration=80.0, rate=200.0, seed=2, start_time=10.0).recording  # clock reset
    sink = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=100_000, publish_reproducible_noise_not_private=True)
    sub = connect_subscriber(sink.endpoint)
    assert sink.wait_for_subscribers(1, timeout=5.0)
    port = _free_port()
    sim = CaptureSimulator(first, speed=0, remote_port=port, **LOSSLESS)
    sim.start()
    relay = Relay(_session(sink), remote=sim.remote_address, heartbeat=0.2, timeout=0.3, max_backlog=3600.0)
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        before, _ = _receive(sub, 2)
        assert sim.wait_until_finished(10)
        sim.stop()  # Capture quits ...
        sim2 = CaptureSimulator(second, speed=0, remote_port=port, **LOSSLESS)  # ... and comes back, clock reset
        sim2.start()
        after: list[dict] = []
        while sum(m["t"][-1] < 100 for m in after) < 2:
            got, _ = _receive(sub, 1)
            assert got, "no chunk from the restarted Capture"
            after += got
        sim2.stop()
    finally:
        relay.stop()
        th.join(5)
        sub.close(linger=0)
        sink.close()
    assert [m["t"][0] > 5000 for m in before] == [True, True]
    old = [m for m in after if m["t"][0] > 5000]  # the old session's last whole chunk, flushed at the restart
    new = [m for m in after if m["t"][-1] < 100]
    assert len(old) + len(new) == len(after) and len(old) <= 1 and len(new) == 2
    assert all(np.allclose(np.diff(m["t"]), 0.5) for m in before + after)  # no chunk spans the restart
    assert relay.counters.reconnects + relay.counters.restarts >= 1
    # the segment after the restart starts with the first chunk slot of the public grid whose
    # steps all have a full 30 s window of the new segment
    cfg = _config()
    schedule = ReleaseSchedule(cfg.window, cfg.step, cfg.chunk_length)
    slot = schedule.chunk_times(schedule.first_chunk(float(second.gaze.t[0])))
    assert slot[0] >= float(second.gaze.t[0]) + cfg.window
    assert new[0]["t"] == slot.tolist()


def test_a_subscriber_that_vanishes_costs_nothing_and_others_keep_receiving():
    with live(SYN, _config()) as (_, relay, sub):
        ghost = connect_subscriber(relay.session.sinks[0].endpoint)
        ghost.close(linger=0)  # connects and vanishes without reading anything
        got, _ = _receive(sub, 3)
    assert len(got) == 3


def test_budget_cap_reached_mid_session_stops_releases_and_says_so():
    # ε is the total per chunk: a budget of two chunks' ε
    with live(SYN, _config(unit="session", budget=2.0), status=True) as (_, relay, sub):
        chunks, _frames = [], []
        status = None
        while sub.poll(5000):
            f = sub.recv_multipart()
            msg = msgpack.unpackb(f[1], raw=False, strict_map_key=False)
            if f[0] == b"streamdp.status":
                status = msg
                break
            chunks.append(msg)
    assert len(chunks) == 2
    assert status is not None and status["budget_exhausted"] is True
    assert status["event"] == "budget_exhausted"
    assert relay.counters.released == 2


def test_relay_refuses_a_non_loopback_bind_without_curve():
    from streamdp import InputError

    with pytest.raises(InputError, match="refusing to publish sanitized features beyond this machine"):
        ReleasePublisher("tcp://0.0.0.0:0")


def test_curve_lets_only_allowed_clients_in(tmp_path):
    import zmq.auth

    server_dir, clients_dir, other_dir = (tmp_path / d for d in ("server", "clients", "other"))
    for d in (server_dir, clients_dir, other_dir):
        d.mkdir()
    server_pub, server_sec = zmq.auth.create_certificates(str(server_dir), "server")
    _client_pub, client_sec = zmq.auth.create_certificates(str(clients_dir), "client")
    _, stranger_sec = zmq.auth.create_certificates(str(other_dir), "stranger")
    from streamdp.network.sink import CurveServer

    sink = ReleasePublisher(
        "tcp://127.0.0.1:0", curve=CurveServer(server_sec, clients_dir), publish_reproducible_noise_not_private=True
    )
    try:
        good = connect_subscriber(
            sink.endpoint, ("streamdp.features.",), server_public_key=server_pub, client_certificate=client_sec
        )
        bad = connect_subscriber(
            sink.endpoint, ("streamdp.features.",), server_public_key=server_pub, client_certificate=stranger_sec
        )
        plain = connect_subscriber(sink.endpoint, ("streamdp.features.",))
        assert sink.wait_for_subscribers(1, timeout=5.0)
        release = Session.for_recording(_config(), SYN).run(SYN)[0]
        sink.publish(release)
        assert good.poll(3000)
        topic, payload = good.recv_multipart()
        assert topic == release.topic.encode()
        assert msgpack.unpackb(payload, raw=False) == release.to_message()
        assert not bad.poll(300) and not plain.poll(300)
        assert sink.subscriptions == 1  # only the allowed client got in
    finally:
        for s in (good, bad, plain):
            s.close(linger=0)
        sink.close()


def test_pupil_remote_commands_answer_as_capture_does():
    with CaptureSimulator(SYN, speed=0, wait_for_subscriber=True) as sim:  # nothing plays: the clock stands
        req = zmq.Context.instance().socket(zmq.REQ)
        req.linger = 0
        req.connect(sim.remote_address)

        def ask(*frames: bytes) -> str:
            req.send_multipart(list(frames))
            assert req.poll(2000)
            return req.recv_string()

        assert int(ask(b"SUB_PORT")) == sim.ports.sub
        assert int(ask(b"PUB_PORT")) == sim.ports.pub
        assert float(ask(b"t")) == pytest.approx(float(SYN.gaze.t[0]))
        assert ask(b"T 123.5") == "Timesync successful."
        assert float(ask(b"t")) == pytest.approx(123.5)
        assert ask(b"R") == "OK" and sim.recording_active
        assert ask(b"r") == "OK" and not sim.recording_active
        assert ask(b"v") == "3.5.1"
        assert ask(b"nonsense") == "Unknown command."
        # a notification is forwarded onto the backbone
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
        sub.setsockopt(zmq.SUBSCRIBE, b"notify.")
        note = msgpack.packb({"subject": "recording.should_start"}, use_bin_type=True)
        while True:  # resend until the subscription has reached the backbone
            assert ask(b"notify.recording.should_start", note) == "Message forwarded."
            if sub.poll(100):
                break
        topic, payload = sub.recv_multipart()
        assert topic == b"notify.recording.should_start"
        assert msgpack.unpackb(payload)["subject"] == "recording.should_start"
        req.close(linger=0)
        sub.close(linger=0)


def test_simulator_publishes_capture_datums_with_their_field_names_and_types():
    with CaptureSimulator(SYN, speed=0, **LOSSLESS) as sim:  # waits for this subscriber
        sub = zmq.Context.instance().socket(zmq.SUB)
        sub.linger = 0
        sub.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
        for t in ("gaze.", "pupil."):
            sub.setsockopt_string(zmq.SUBSCRIBE, t)
        seen: dict[bytes, dict] = {}
        while len(seen) < 3 and sub.poll(3000):
            topic, payload = sub.recv_multipart()
            seen.setdefault(topic, msgpack.unpackb(payload, raw=False, strict_map_key=False))
        sub.close(linger=0)
    gaze = seen[b"gaze.3d.01."]
    assert gaze["topic"] == "gaze.3d.01."
    assert isinstance(gaze["timestamp"], float) and isinstance(gaze["confidence"], float)
    assert len(gaze["norm_pos"]) == 2 and len(gaze["base_data"]) == 2
    assert set(gaze["eye_centers_3d"]) == {"0", "1"}  # string keys, as Capture sends them
    pupil = seen[b"pupil.0.3d"]
    assert pupil["id"] == 0 and "diameter_3d" in pupil and pupil["method"].startswith("pye3d")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_mid_chunk_stops_the_relay_cleanly_without_a_partial_chunk(tmp_path):
    rec = generate(duration=400.0, rate=200.0, seed=5).recording
    with CaptureSimulator(rec, speed=40.0) as sim:  # ~10 s of playback: the relay is mid-stream
        # port 0: the relay names the ports it bound in its first line (no port picked here and
        # bound there later, which another socket can take in between)
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "streamdp.cli", "relay", "--remote", sim.remote_address),
                *("--bind", "tcp://127.0.0.1:0", "--chunk-length", "32", "--status-bind", "tcp://127.0.0.1:0"),
            ],
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        sub: zmq.Socket | None = None
        try:
            assert proc.stderr is not None
            started = read_lines(proc.stderr.fileno(), 1, timeout=20.0)
            bound = re.search(r"→ (tcp://\S+) ", started[0]) if started else None
            if bound is None:
                proc.kill()
                pytest.fail(f"the relay did not announce its endpoint: {started!r}, {proc.communicate()[1]!r}")
            sub = connect_subscriber(bound.group(1))
            if not sub.poll(20_000):
                proc.kill()
                pytest.fail(f"no chunk within 20 s; the relay's stderr: {proc.communicate(timeout=15)[1]!r}")
            received = [msgpack.unpackb(sub.recv_multipart()[1], raw=False)]
            proc.send_signal(signal.SIGTERM)
            err = proc.communicate(timeout=15)[1].decode()
            while sub.poll(200):
                f = sub.recv_multipart()
                if f[0].startswith(b"streamdp.features."):
                    received.append(msgpack.unpackb(f[1], raw=False))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate(timeout=15)
            if sub is not None:
                sub.close(linger=0)
    assert proc.returncode == 0
    assert "streamdp relay: stopped (" in err
    assert all(len(m["t"]) == 32 and len(m["values"]) == 32 for m in received)


def test_to_backbone_publishes_releases_onto_captures_backbone_for_its_recorder():
    sink = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    sim = CaptureSimulator(SYN, speed=0, **LOSSLESS)
    sim.start()
    backbone = zmq.Context.instance().socket(zmq.SUB)
    backbone.linger = 0
    backbone.connect(f"tcp://127.0.0.1:{sim.ports.sub}")
    backbone.setsockopt(zmq.SUBSCRIBE, b"streamdp.")
    relay = Relay(
        _session(sink), remote=sim.remote_address, to_backbone=True, heartbeat=0.2, timeout=0.3, max_backlog=3600.0
    )
    th = threading.Thread(target=relay.run, daemon=True)
    th.start()
    try:
        assert backbone.poll(10_000)
        topic, payload = backbone.recv_multipart()
    finally:
        relay.stop()
        th.join(5)
        sim.stop()
        backbone.close(linger=0)
        sink.close()
    assert topic == b"streamdp.features.dcfpa"
    assert np.array(msgpack.unpackb(payload, raw=False)["values"]).shape == (32, 52)


def test_relay_with_captures_blinks_equals_the_offline_pipeline_with_the_recordings_blinks():
    assert SYN.blinks is not None and len(SYN.blinks.start) > 5
    want = _offline(SYN, blinks="given")
    with live(SYN, _config(blinks="given")) as (_, relay, sub):
        got, _ = _receive(sub, len(want) - 1)
    assert len(got) >= len(want) - 1 >= 3
    for msg, rel in zip(got, want, strict=False):
        np.testing.assert_array_equal(np.array(msg["values"]), rel.values)
    assert relay.counters.invalid == 0


def test_a_relay_behind_captures_clock_sheds_the_queued_backlog_and_counts_it():
    # a flood: Capture's clock is already 10 s past the gaze queued for the relay
    gaze = [encode(d) for _, d in capture_datums(SYN) if d["topic"].startswith("gaze.")][:3000]
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.PUB)
    pub.linger = 0
    pub.sndhwm = 0
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    sub = ctx.socket(zmq.SUB)
    sub.linger = 0
    sub.rcvhwm = 0
    sub.connect(f"tcp://127.0.0.1:{port}")
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    relay = Relay(Session(_config(), sinks=[]), max_backlog=2.0)
    try:
        while not sub.poll(50):  # until the subscription has reached the publisher
            pub.send_multipart([b"probe", b""])
        pub.send_multipart([b"last probe", b""])
        while sub.poll(5000) and sub.recv_multipart()[0] != b"last probe":
            pass  # in order: every probe is read once the last one is
        relay._sub = sub
        first_time = msgpack.unpackb(gaze[0][1])["timestamp"]
        relay._clock.offset = first_time + 10.0 - time.monotonic()
        for frames in gaze:
            pub.send_multipart(frames)
        c = relay.counters
        while c.received + c.shed < len(gaze) and sub.poll(5000):
            relay._drain(limit=100)  # each drain reads 100, then finds itself behind and sheds
        c = relay.counters
        assert c.shed > 0 and c.received + c.shed == len(gaze) and c.received < len(gaze) / 2
        assert relay.status().shed == c.shed  # counted on the owner's status, never published
    finally:
        sub.close(linger=0)
        pub.close(linger=0)


BAD_TIMING = [
    ("backlog-zero", {"max_backlog": 0.0}, ValueError, r"max_backlog must be a finite number of seconds > 0, got 0.0"),
    ("backlog-inf", {"max_backlog": float("inf")}, ValueError, r"max_backlog must be .* got inf"),
    ("backlog-text", {"max_backlog": "2"}, TypeError, r"max_backlog must be a number of seconds, got '2'"),
    ("interval-negative", {"read_interval": -0.1}, ValueError, r"read_interval must be .* ≥ 0, got -0.1"),
    ("interval-none", {"read_interval": None}, TypeError, r"read_interval must be a number of seconds, got None"),
    # the default backlog is the chunk reorder window (2 s) + 2 s
    ("interval-past-backlog", {"read_interval": 4.0}, ValueError,
     r"read_interval \(4.0 s\) must be below max_backlog \(4 s\)"),  # before: "(None s)"
]


@pytest.mark.parametrize(("options", "error", "match"), [pytest.param(*c[1:], id=c[0]) for c in BAD_TIMING])
def test_bad_relay_timing_options_are_refused_by_name(options, error, match):
    with pytest.raises(error, match=match):
        Relay(Session(_config(), sinks=[]), **options)
