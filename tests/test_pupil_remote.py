"""streamdp's own Pupil Remote (issue #28): Capture's commands and answers, the notification policy
subject by subject, bad requests, and where it may listen. The facade runs against the simulated
Capture on loopback; what reaches Capture is read off Capture's own backbone."""

from __future__ import annotations

from collections.abc import Iterator

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.errors import InputError
from streamdp.network.capture_link import NO_ANSWER
from streamdp.network.notification_policy import FORWARD, INBOUND, OUTBOUND, PLUGINS, REFUSE, inbound, outbound
from streamdp.network.pupil_remote import FORWARDED, UNKNOWN, StreamdpPupilRemote
from streamdp.network.simulator import PUPIL_VERSION, CaptureSimulator
from streamdp.session_output import SessionCounters
from streamdp.synthetic import generate

TIMEOUT_MS = 3000


@pytest.fixture(scope="module")
def capture() -> Iterator[CaptureSimulator]:
    sim = CaptureSimulator(generate(duration=5.0, seed=2).recording, speed=1.0, wait_for_subscriber=True)
    sim.start()
    yield sim
    sim.stop()


@pytest.fixture
def facade(capture) -> Iterator[StreamdpPupilRemote]:
    remote = StreamdpPupilRemote("tcp://127.0.0.1:0", capture_remote=capture.remote_address, counters=SessionCounters())
    yield remote
    remote.close()


@pytest.fixture
def req(facade) -> Iterator[zmq.Socket]:
    sock = zmq.Context.instance().socket(zmq.REQ)
    sock.linger = 0
    sock.connect(facade.address)
    yield sock
    sock.close(linger=0)


@pytest.fixture
def backbone(capture) -> Iterator[zmq.Socket]:
    """Capture's side: everything notified or annotated on its backbone."""
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.connect(f"tcp://127.0.0.1:{capture.ports.sub}")
    for topic in (b"notify.", b"annotation"):
        sub.setsockopt(zmq.SUBSCRIBE, topic)
    yield sub
    sub.close(linger=0)


def ask(req: zmq.Socket, *frames: bytes | str) -> str:
    req.send_multipart([f.encode() if isinstance(f, str) else f for f in frames])
    assert req.poll(TIMEOUT_MS), f"no answer to {frames[0]!r}"
    return req.recv_string()


def note(subject: str, **fields: object) -> tuple[str, bytes]:
    return "notify." + subject, msgpack.packb({"subject": subject, **fields}, use_bin_type=True)


def seen_on_capture(sub: zmq.Socket, topic: str, *, marker: str = "") -> bool:
    """Whether ``topic`` reached Capture's backbone before ``marker`` (a notification sent after it,
    always forwarded): messages are in order, so no waiting on an absence."""
    found = False
    while sub.poll(TIMEOUT_MS):
        got = sub.recv_multipart()[0].decode()
        found = found or got == topic
        if got == marker:
            return found
    raise AssertionError(f"the marker {marker!r} never reached Capture")


MARKER = "eye_process.should_start.0"


def send_then_marker(req: zmq.Socket, backbone: zmq.Socket, topic: str, payload: bytes) -> bool:
    assert ask(req, topic, payload) == FORWARDED  # Capture's answer to any multi-frame message
    assert ask(req, *note(MARKER, eye_id=0)) == FORWARDED
    return seen_on_capture(backbone, topic, marker="notify." + MARKER)


# -- commands: Capture's answers


def test_ports_are_streamdps_own_and_the_rest_is_capture_s_answer(capture, facade, req):
    assert int(ask(req, "SUB_PORT")) == facade.sub_port != capture.ports.sub
    assert int(ask(req, "PUB_PORT")) == facade.pub_port != capture.ports.pub
    assert ask(req, "v") == PUPIL_VERSION
    assert abs(float(ask(req, "t")) - capture.pupil_time()) < 1.0
    assert ask(req, "R streamdp-test") == "OK" and capture.recording_active
    assert ask(req, "r") == "OK" and not capture.recording_active
    assert ask(req, "T not-a-number") == "'not-a-number' cannot be converted to float."


@pytest.mark.parametrize(
    "frame",
    [b"", b"HELLO", b"\xff\xfe", b"SUB_PORTS", b"c2"],
    ids=["empty", "unknown word", "not UTF-8", "SUB_PORT with a tail", "c with a tail"],
)
def test_an_unknown_command_gets_capture_s_answer_and_the_socket_keeps_working(facade, req, frame):
    assert ask(req, frame) == UNKNOWN
    assert int(ask(req, "SUB_PORT")) == facade.sub_port


def test_a_request_capture_does_not_answer_is_answered_and_the_next_one_works(facade, req, capture):
    silent = StreamdpPupilRemote("tcp://127.0.0.1:0", capture_remote="tcp://127.0.0.1:9", timeout=0.1)
    other = zmq.Context.instance().socket(zmq.REQ)
    other.linger = 0
    other.connect(silent.address)
    try:
        assert ask(other, "t") == NO_ANSWER
        assert int(ask(other, "SUB_PORT")) == silent.sub_port
    finally:
        other.close(linger=0)
        silent.close()


# -- the notification policy, subject by subject (unit and through the facade)

FORWARDED_SUBJECTS = [s for s, action, _ in INBOUND if action == FORWARD and s not in ("start_plugin", "stop_plugin")]
REFUSED_SUBJECTS = [s + "x" if s.endswith(".") else s for s, action, _ in INBOUND if action == REFUSE]
REFUSED_SUBJECTS += ["calibration.setup.v2", "calibration.result.v2", "frame_publishing.started", "no.such.subject"]


@pytest.mark.parametrize("subject", FORWARDED_SUBJECTS)
def test_a_notification_an_app_needs_reaches_capture(req, backbone, facade, subject):
    assert send_then_marker(req, backbone, *note(subject, record=True))
    assert facade.counters.refused == 0


@pytest.mark.parametrize("subject", REFUSED_SUBJECTS)
def test_a_refused_notification_never_reaches_capture_and_is_counted(req, backbone, facade, subject):
    assert inbound(f"notify.{subject}".encode(), {"subject": subject}).action == REFUSE
    assert not send_then_marker(req, backbone, *note(subject))
    assert facade.counters.refused == 1


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_start_plugin_follows_the_plugin_table(req, backbone, facade, plugin):
    forwarded = PLUGINS[plugin][0] == FORWARD
    assert send_then_marker(req, backbone, *note("start_plugin", name=plugin, args={})) is forwarded
    assert facade.counters.refused == (0 if forwarded else 1)


def test_a_plugin_not_in_the_table_is_refused(req, backbone, facade):
    assert not send_then_marker(req, backbone, *note("start_plugin", name="Some_Other_Plugin"))
    assert facade.counters.refused == 1


@pytest.mark.parametrize(
    ("topic", "payload", "reason"),
    [
        ("notify.recording.should_start", b"\xc1not msgpack", "not a msgpack map"),
        ("notify.recording.should_start", msgpack.packb([1, 2]), "not a msgpack map"),
        ("notify.recording.should_start", msgpack.packb({"subject": "recording.should_stop"}), "is not the topic's"),
        ("pupil.0.3d", msgpack.packb({"topic": "pupil.0.3d"}), "only notifications and annotations"),
        ("gaze.3d.01.", msgpack.packb({"topic": "gaze.3d.01."}), "only notifications and annotations"),
    ],
    ids=["malformed msgpack", "not a map", "subject not the topic's", "pupil datum", "gaze datum"],
)
def test_a_malformed_or_foreign_message_gets_capture_s_answer_and_changes_nothing(
    req, backbone, facade, topic, payload, reason
):
    assert reason in inbound(topic.encode(), msgpack.unpackb(payload) if payload[:1] != b"\xc1" else None).reason
    assert not send_then_marker(req, backbone, topic, payload)
    assert facade.counters.refused == 1
    assert int(ask(req, "SUB_PORT")) == facade.sub_port


def test_what_apps_publish_into_pub_port_follows_the_same_policy(facade, req, backbone):
    pub = zmq.Context.instance().socket(zmq.PUB)
    pub.linger = 0
    pub.connect(f"tcp://127.0.0.1:{facade.pub_port}")
    try:
        # a PUB socket's first messages are lost until it is connected: send until one arrives
        annotation = msgpack.packb({"topic": "annotation", "label": "start", "timestamp": 1.0, "duration": 0.0})
        for _ in range(50):
            pub.send_multipart([b"annotation", annotation])
            if backbone.poll(100):
                break
        assert backbone.recv_multipart()[0] == b"annotation"
        pub.send_multipart([b"notify.frame_publishing.started", note("frame_publishing.started")[1]])
        pub.send_multipart([b"notify.calibration.add_ref_data", note("calibration.add_ref_data", ref_data=[])[1]])
        refused = "notify.frame_publishing.started"
        assert not seen_on_capture(backbone, refused, marker="notify.calibration.add_ref_data")
        assert facade.counters.refused == 1
    finally:
        pub.close(linger=0)


def test_a_flood_of_notifications_is_answered_one_by_one_and_changes_nothing(req, backbone, facade):
    for i in range(500):
        assert ask(req, *note("no.such.subject" if i % 2 else "recording.should_stop")) == FORWARDED
    assert facade.counters.refused == 250
    assert send_then_marker(req, backbone, *note("recording.should_start", session_name="after"))
    assert int(ask(req, "SUB_PORT")) == facade.sub_port


# -- Capture's notifications to apps


@pytest.mark.parametrize("subject", ["calibration.setup.v2", "calibration.result.v2", "frame_publishing.started",
                                     "start_plugin", "logging.info"])  # fmt: skip
def test_capture_s_notifications_that_carry_raw_data_never_reach_an_app(subject):
    assert outbound({"subject": subject, "calib_data": {"pupil_list": [{"norm_pos": [0.5, 0.5]}]}}) is None


@pytest.mark.parametrize("subject", sorted(OUTBOUND))
def test_capture_s_notifications_an_app_waits_for_keep_only_their_public_fields(subject):
    kept = outbound({"subject": subject, "params": {"eye_camera_to_world_matrix0": [[1.0]]}, "record": True,
                     "timestamp": 2.0, "gazer_class_name": "GazerHMD3D", "reason": "x", "session_name": "s",
                     "rec_path": "/home/wearer/recordings/001"})  # fmt: skip
    assert kept is not None and set(kept) == {"subject", "topic", *OUTBOUND[subject]}
    assert kept["topic"] == "notify." + subject


# -- where it may listen, and bad parameters


@pytest.mark.parametrize(
    ("kwargs", "error", "fragment"),
    [
        ({"address": "tcp://0.0.0.0:0"}, InputError, "without CURVE"),
        ({"address": "tcp://127.0.0.1:50020", "capture_remote": "tcp://127.0.0.1:50020"}, ValueError, "cannot be"),
        ({"gaze_mode": "4d"}, ValueError, "gaze_mode"),
        ({"address": "tcp://127.0.0.1:notaport"}, InputError, "cannot listen there"),
    ],
    ids=["LAN without CURVE", "Capture's own address", "bad gaze mode", "bad address"],
)
def test_bad_parameters_are_refused_naming_them(kwargs, error, fragment):
    with pytest.raises(error, match=fragment):
        StreamdpPupilRemote(**{"address": "tcp://127.0.0.1:0", **kwargs}).close()


def test_beyond_loopback_with_insecure_it_binds_every_port_on_that_host():
    remote = StreamdpPupilRemote("tcp://0.0.0.0:0", insecure=True)
    try:
        assert remote.address.startswith("tcp://0.0.0.0:") and remote.sub_port and remote.pub_port
    finally:
        remote.close()


def test_only_sealed_releases_with_private_noise_are_published(facade):
    with pytest.raises(TypeError, match="PrivateRelease"):
        facade.publish({"topic": "gaze.3d.01.", "norm_pos": [0.5, 0.5]})  # type: ignore[arg-type]


# -- the doctor


def test_the_doctor_says_private_for_streamdps_pupil_remote_and_not_for_capture_s_own(capture, facade):
    from streamdp.network.doctor import check_deployment

    ours = check_deployment(remote=capture.remote_address, pupil_remote=facade.address)
    line = next(f for f in ours.findings if f.subject.startswith("streamdp's Pupil Remote"))
    assert line.status == "ok" and f"SUB_PORT {facade.sub_port}" in line.text
    assert ours.verdict.startswith("private")
    theirs = check_deployment(remote=capture.remote_address, pupil_remote=capture.remote_address)
    line = next(f for f in theirs.findings if f.subject.startswith("streamdp's Pupil Remote"))
    assert "Capture's Pupil Remote, serving raw gaze" in line.text


def test_the_docs_list_every_row_of_the_policy_and_every_field():
    from pathlib import Path

    from streamdp.network.capture_gaze import GAZE_DATUM_FIELDS
    from streamdp.network.pupil_remote import COMMANDS

    doc = (Path(__file__).parents[1] / "docs" / "pupil-remote.md").read_text()
    rows = [*(s for s, _, _ in INBOUND), *PLUGINS, *OUTBOUND, *GAZE_DATUM_FIELDS, *COMMANDS]
    assert [r for r in rows if f"| `{r}` |" not in doc] == []


def test_a_2d_source_gets_gaze_2d_datums_with_the_2d_fields_only():
    from streamdp.config import SessionConfig
    from streamdp.network.capture_gaze import GAZE_DATUM_FIELDS, capture_gaze_frames
    from streamdp.session import Session
    from streamdp.sinks import CollectingSink

    rec = generate(duration=40.0, seed=1).recording
    sink = CollectingSink(accepts_gaze=True)
    Session.for_recording(SessionConfig(seed=0, gaze_channel=True, chunk_length=16), rec, sinks=[sink]).run(rec)
    (topic, payload), = capture_gaze_frames(sink.ticks[0], "2d")
    datum = msgpack.unpackb(payload, raw=False)
    assert topic == b"gaze.2d.01." and set(datum) == {"topic", "norm_pos", "confidence", "timestamp", "base_data"}
    assert set(datum) < set(GAZE_DATUM_FIELDS) and datum["norm_pos"] == sink.ticks[0].values[0, 2:].tolist()
    with pytest.raises(ValueError, match="not a tick of the gaze channel"):
        capture_gaze_frames(sink.releases[0], "3d")  # a chunk of features
    with pytest.raises(ValueError, match="mode must be"):
        capture_gaze_frames(sink.ticks[0], "4d")


def test_a_gaze_datum_is_msgpacks_own_bytes_and_its_geometry_follows_the_sanitized_angles():
    """The datum is built as one struct.pack of a fixed layout: the bytes must be exactly what
    msgpack packs for the same map, and the 3d fields the ray through the published angles."""
    from streamdp.config import SessionConfig
    from streamdp.network.capture_gaze import EYE_CENTERS_MM, GAZE_DISTANCE_MM, capture_gaze_frames
    from streamdp.session import Session
    from streamdp.sinks import CollectingSink

    rec = generate(duration=40.0, seed=3).recording
    sink = CollectingSink(accepts_gaze=True)
    Session.for_recording(SessionConfig(seed=0, gaze_channel=True, chunk_length=16), rec, sinks=[sink]).run(rec)
    names = sink.ticks[0].names
    for tick in sink.ticks[::25]:
        for mode in ("3d", "2d"):
            ((_, payload),) = capture_gaze_frames(tick, mode)
            datum = msgpack.unpackb(payload, raw=False)
            assert msgpack.packb(datum, use_bin_type=True) == payload
        ax, ay = (np.radians(tick.values[0, names.index(n)]) for n in ("x_deg", "y_deg"))
        ray = np.array([np.tan(ax), -np.tan(ay), 1.0])
        datum_3d = msgpack.unpackb(capture_gaze_frames(tick)[0][1])
        point = np.asarray(datum_3d["gaze_point_3d"])
        np.testing.assert_allclose(point, GAZE_DISTANCE_MM * ray / np.linalg.norm(ray), rtol=1e-12)
        for eye, centre in EYE_CENTERS_MM.items():
            normal = np.asarray(datum_3d["gaze_normals_3d"][eye])
            np.testing.assert_allclose(normal, (point - centre) / np.linalg.norm(point - centre), rtol=1e-12)
        assert datum_3d["timestamp"] == tick.t[0] and datum_3d["norm_pos"] == tick.values[0, 2:].tolist()


def test_a_tick_no_app_subscribed_to_is_not_built_and_a_new_app_hears_the_next_one(capture, monkeypatch):
    """hmd-eyes subscribes to gaze.3d.0., gaze.3d.1. and gaze.3d.01.: only the last matches the
    binocular topic. Until an app's subscription matches, no datum is built."""
    from streamdp.config import SessionConfig
    from streamdp.network import capture_gaze
    from streamdp.session import Session
    from streamdp.sinks import CollectingSink

    rec = generate(duration=40.0, seed=4).recording
    sink = CollectingSink(accepts_gaze=True)
    Session.for_recording(SessionConfig(seed=0, gaze_channel=True, chunk_length=16), rec, sinks=[sink]).run(rec)
    built: list[float] = []
    datums = capture_gaze.gaze_datums
    monkeypatch.setattr("streamdp.network.pupil_remote.gaze_datums",
                        lambda release, *a, **k: built.append(release.t[0]) or datums(release, *a, **k))  # fmt: skip
    remote = StreamdpPupilRemote("tcp://127.0.0.1:0", capture_remote=capture.remote_address,
                                 publish_reproducible_noise_not_private=True)  # fmt: skip
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    try:
        ticks = iter(sink.ticks)
        remote.publish(next(ticks))
        sub.connect(f"tcp://127.0.0.1:{remote.sub_port}")
        for prefix in (b"gaze.3d.0.", b"gaze.3d.1."):  # eye by eye: never the binocular topic
            sub.subscribe(prefix)
        for _ in range(20):
            remote.publish(next(ticks))
            assert sub.poll(20) == 0
        assert built == []
        sub.subscribe(b"gaze.3d.01.")
        heard: list[float] = []
        for tick in ticks:  # until the subscription reaches the facade: then each datum built arrives
            count = len(built)
            remote.publish(tick)
            if len(built) == count:
                assert sub.poll(20) == 0  # nothing built, nothing sent (and a pause for the subscription)
            elif sub.poll(TIMEOUT_MS):
                heard.append(msgpack.unpackb(sub.recv_multipart()[1])["timestamp"])
            if len(heard) == 3:
                break
        assert heard == built  # each datum built was heard: none before the app subscribed
    finally:
        sub.close(linger=0)
        remote.close()
