"""What must hold (issue #8): the same gaze through every integration gives identical releases,
byte for byte, for the same :class:`SessionConfig` and seed.

The reference is one :class:`Session` run on the recording in memory (its releases as msgpack
payloads, and its unsanitized feature rows kept locally). Each path must give exactly those:

- ``replay``: :func:`replay_one` on the recording's folder (its ``.msgpack`` file);
- ``relay``: the simulated Capture plays the recording in Capture's wire format on loopback, the
  relay's session publishes on a ZeroMQ socket, a subscriber receives;
- ``plugin``: the Capture plugin in the Capture stand-in's world loop, fed the datums Capture
  would publish, grouped into 30 Hz world frames (what Capture's backbone carries);
- ``neon``: the Neon relay fed the realtime API's own ``EyestateGazeData`` and ``BlinkEventData``,
  built from the Neon recording's raw scene-camera pixels and nanosecond times;
- ``features``: ``streamdp features`` to an ``.npz``: its rows equal the feature rows the
  session kept (``keep_feature_rows``), as do those of every path that runs a session.

The live paths end the stream as a live source does (the plugin: Capture's clock is set anew; the
relays: they stop and the session is flushed), so that no path is compared on a prefix.

Sources, and the paths each is run through:

- ``synthetic``: generated 3d gaze (pupil diameters in mm), written as a Capture recording;
- ``capture-2d``: a 2D-detector Capture recording (``gaze.2d.*``, pupil diameters in px only),
  binocular and monocular; its pupil features must be non-zero and in px through every path;
- ``neon``: the Neon demo recording, blinks taken from the source, the scene camera named.
  ``neon-auto`` leaves the camera to the source: the paths that know it is a Neon (replay and
  features from the recording, the Neon relay from the device) must agree on its field of view.

The Neon path takes only the Neon recording: the realtime API carries no confidence (only
``worn``), so a Capture recording's confidence cannot go through it. With ``camera="auto"`` the
Capture relay and plugin are left out, since Capture does not tell them the scene camera.
"""

from __future__ import annotations

import gc
import threading
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.cli import main
from streamdp.cli.options import config_fields, option_name
from streamdp.config import SessionConfig
from streamdp.gaze import BINOCULAR, GazeBatch, Recording
from streamdp.network.relay import Relay
from streamdp.network.simulator import CaptureSimulator
from streamdp.network.sink import ReleasePublisher
from streamdp.network.subscriber import connect_subscriber
from streamdp.offline.replay import replay_one
from streamdp.pupil_wire import capture_datums
from streamdp.readers import read_recording
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.features import FeatureRows
from streamdp.synthetic import generate

from .conftest import shared
from .pupil_standin import capture_plugin_environment, world_frames
from .recording_files import write_capture_recording

SEED = 17
SHORT = SessionConfig(window=4.0, step=0.25, chunk_length=8, seed=SEED)
PUPIL_FEATURES = slice(21, 25)  # mean and variance of per-fixation pupil mean and variance


@dataclass
class Outcome:
    """What a path gave: release payloads (msgpack bytes) and unsanitized feature rows."""

    messages: list[bytes] | None
    rows: FeatureRows | None


def _pack(message: dict) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


def _rows(kept: list[FeatureRows]) -> FeatureRows:
    return FeatureRows.concat(kept)


# ---------------------------------------------------------------- sources


def _synthetic(tmp: Path) -> Path:
    return write_capture_recording(generate(duration=40.0, rate=200.0, seed=31).recording, tmp / "synthetic")


def _capture_2d(tmp: Path) -> Path:
    g = generate(duration=40.0, rate=200.0, seed=32).recording.gaze
    i = np.arange(len(g))
    eye = np.where(i % 7 == 3, 0, np.where(i % 11 == 5, 1, BINOCULAR))
    gaze = GazeBatch.from_arrays(
        t=g.t,
        x=g.x,
        y=g.y,
        confidence=g.confidence,
        diameter=g.diameter * 11.0,  # the 2d detector's pupil in eye-camera px
        eye_id=eye,
        valid=g.valid,
        diameter_unit="px",
        source="2d",
    )
    return write_capture_recording(Recording(gaze, None, "capture-2d"), tmp / "capture-2d")


def _neon(tmp: Path) -> Path:
    pytest.importorskip("pupil_labs.neon_recording")
    return shared("neon_demo_recording")


SOURCES = {"synthetic": _synthetic, "capture-2d": _capture_2d, "neon": _neon}

# the demo recording is short: chunks of 4 steps, so that two whole ones lie on the public grid
NEON_NAMED = replace(SHORT, blinks="given", camera="neon", chunk_length=4)
NEON_AUTO = replace(SHORT, blinks="given", chunk_length=4)
CAPTURE_PATHS = ("replay", "relay", "plugin", "features")
CASES = [
    *(("synthetic", SHORT, p) for p in CAPTURE_PATHS),
    *(("capture-2d", SHORT, p) for p in CAPTURE_PATHS),
    *(("neon", NEON_NAMED, p) for p in (*CAPTURE_PATHS, "neon")),
    *(("neon-auto", NEON_AUTO, p) for p in ("replay", "features", "neon")),
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        key = name.removesuffix("-auto")
        if key not in made:
            made[key] = SOURCES[key](tmp_path_factory.mktemp(key))
        return made[key]

    return get


@pytest.fixture(scope="module")
def references():
    cache: dict[tuple[Path, SessionConfig], Outcome] = {}

    def get(path: Path, config: SessionConfig) -> Outcome:
        if (path, config) not in cache:
            rec = read_recording(str(path))
            sink = CollectingSink()
            session = Session.for_recording(config, rec, sinks=[sink])
            kept = session.keep_feature_rows()
            session.run(rec)
            cache[path, config] = Outcome([_pack(r.to_message()) for r in sink.releases], _rows(kept))
        return cache[path, config]

    return get


# ---------------------------------------------------------------- paths


def through_replay(path: Path, config: SessionConfig, tmp: Path, want: int) -> Outcome:
    result = replay_one(str(path), "rec", config, SEED, str(tmp))
    assert not result.skipped, result.skipped
    data = (tmp / "rec.msgpack").read_bytes()
    unpacker = msgpack.Unpacker(raw=False)
    unpacker.feed(data)
    messages, start = [], 0
    for _ in unpacker:
        messages.append(data[start : unpacker.tell()])
        start = unpacker.tell()
    return Outcome(messages, None)


def through_relay(path: Path, config: SessionConfig, tmp: Path, want: int) -> Outcome:
    rec = read_recording(str(path))
    topics = ("gaze.", "blinks") if config.blinks == "given" else ("gaze.",)
    expected = sum(d["topic"].startswith(topics) for _, d in capture_datums(rec))
    publisher = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=100_000, publish_reproducible_noise_not_private=True)
    sub = connect_subscriber(publisher.endpoint, ("streamdp.features.",))
    payloads: list[bytes] = []
    try:
        assert publisher.wait_for_subscribers(1, timeout=5.0)
        session = Session(config, sinks=[publisher], source="simulated Capture")
        kept = session.keep_feature_rows()
        with CaptureSimulator(rec, speed=0, wait_for_subscriber=True, hwm=0) as sim:
            # flat out, far faster than a Capture: an input queue for the whole stream (lossless)
            relay = Relay(session, remote=sim.remote_address, heartbeat=0.2, timeout=0.3, max_backlog=1000.0)
            th = threading.Thread(target=relay.run, daemon=True)
            th.start()
            try:
                deadline = time.monotonic() + 60.0
                while session.counters.received < expected and time.monotonic() < deadline:
                    if sub.poll(50):
                        payloads.append(sub.recv_multipart()[1])
            finally:
                relay.stop()
                th.join(5)
        assert session.counters.received == expected
        session.flush()  # the stream ended: what the reorder window and the windows hold
        while len(payloads) < want and sub.poll(5000):
            payloads.append(sub.recv_multipart()[1])
        assert not sub.poll(100)
    finally:
        sub.close(linger=0)
        publisher.close()
    return Outcome(payloads, _rows(kept))


def through_plugin(path: Path, config: SessionConfig, tmp: Path, want: int) -> Outcome:
    rec = read_recording(str(path))
    settings = {k: v for k, v in config.describe().items() if k != "blinks"}
    settings["blinks_from_capture"] = config.blinks == "given"
    settings["bind"] = None  # the plugin's own endpoint is tested in test_plugin_endpoint.py
    backbone = zmq.Context.instance().socket(zmq.SUB)
    backbone.linger = 0
    port = backbone.bind_to_random_port("tcp://127.0.0.1")
    backbone.setsockopt(zmq.SUBSCRIBE, b"streamdp.")
    with capture_plugin_environment() as env:
        pub = env.world.IPCPublisher(f"tcp://127.0.0.1:{port}")
        try:
            while True:  # until the subscription has reached the publisher
                pub.send({"topic": "streamdp.probe"})
                if backbone.poll(50):
                    backbone.recv_multipart()
                    break
            g_pool = env.world.make_g_pool(pub)
            env.plugin.Plugin_List(g_pool, [(env.module.StreamDP, settings)])
            plugin = next(iter(g_pool.plugins))
            kept = plugin.session.keep_feature_rows()
            published = []
            for events in world_frames(rec):
                published += env.world.run_frame(g_pool, events).get("streamdp", [])
            # Capture's clock set anew (Pupil Remote's T) ends the segment; the next frame carries what it released
            env.world.set_clock(g_pool, g_pool.get_timestamp() - 1000.0)
            published += env.world.run_frame(g_pool, {"gaze": [], "blinks": []}).get("streamdp", [])
            on_backbone = []
            while len(on_backbone) < len(published) and backbone.poll(5000):
                topic, payload = backbone.recv_multipart()
                if topic != b"streamdp.probe":
                    on_backbone.append(msgpack.unpackb(payload, raw=False))
        finally:
            pub.close()
            backbone.close(linger=0)
    assert on_backbone == published
    for datum in published:
        assert datum.pop("timestamp") == datum["t"][-1]  # what Capture's recorder needs
    return Outcome([_pack(d) for d in published], _rows(kept))


class NeonDevice:
    """A realtime-API device replaying a Neon recording as the API's own datum types: gaze as
    ``EyestateGazeData`` (scene pixels, worn, both pupil diameters, Unix seconds), blinks as
    ``BlinkEventData`` (ns) once the gaze has passed their end. It calls ``on_done`` (the
    relay's ``stop``) when it has nothing more."""

    def __init__(self, path: Path):
        gaze_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.gaze")
        events_mod = pytest.importorskip("pupil_labs.realtime_api.streaming.eye_events")
        import pupil_labs.neon_recording as nr

        rec = read_recording(str(path))  # pupil diameters and worn as the reader pairs them with the gaze
        # pupil-labs-neon-recording leaves its files to the garbage collector (see readers/neon.py)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            raw = nr.load(str(path))
            try:
                point = np.asarray(raw.gaze.point, dtype=np.float64)
                starts = np.asarray(raw.blinks.data["start_time"], dtype=np.int64).tolist()
                ends = np.asarray(raw.blinks.data["stop_time"], dtype=np.int64).tolist()
            finally:
                raw.close()
                del raw
                gc.collect()
        g = rec.gaze
        zeros = [0.0] * 6
        self.gaze = [
            gaze_mod.EyestateGazeData(px, py, worn, d, *zeros, d, *zeros, t)
            for (px, py), worn, d, t in zip(
                point.tolist(), g.valid.tolist(), g.diameter.tolist(), g.t.tolist(), strict=True
            )
        ]
        self.events = [
            (e * 1e-9, events_mod.BlinkEventData(4, s, e, s * 1e-9)) for s, e in zip(starts, ends, strict=True)
        ]
        self._i = 0
        self.on_done = None
        self.closed = False

    def receive_gaze_datum(self, timeout_seconds=None):
        if self._i == len(self.gaze):
            self.on_done()
            return None
        self._i += 1
        return self.gaze[self._i - 1]

    def receive_eye_events(self, timeout_seconds=None):
        if self.events and self._i and self.gaze[self._i - 1].timestamp_unix_seconds >= self.events[0][0]:
            return self.events.pop(0)[1]
        return None

    def close(self):
        self.closed = True


def through_neon(path: Path, config: SessionConfig, tmp: Path, want: int) -> Outcome:
    from streamdp.network.neon import NeonRelay

    sink = CollectingSink()
    session = Session(config, sinks=[sink], camera="neon", source="Neon realtime API")
    kept = session.keep_feature_rows()
    device = NeonDevice(path)
    relay = NeonRelay(session, device)
    device.on_done = relay.stop
    relay.run()
    assert device.closed and session.counters.received == len(device.gaze)
    session.flush()
    return Outcome([_pack(r.to_message()) for r in sink.releases], _rows(kept))


def through_features(path: Path, config: SessionConfig, tmp: Path, want: int) -> Outcome:
    options = []
    for f in config_fields("features"):
        value = getattr(config, f.name)
        if value != f.default:
            options += [option_name(f.name), str(value)]
    out = tmp / "rows.npz"
    assert main(["features", str(path), "--out", str(out), *options]) == 0
    with np.load(out) as npz:
        return Outcome(None, FeatureRows(npz["t"], npz["values"]))


PATHS = {
    "replay": through_replay,
    "relay": through_relay,
    "plugin": through_plugin,
    "neon": through_neon,
    "features": through_features,
}


@pytest.mark.parametrize(
    ("source", "config", "path"), [pytest.param(s, c, p, id=f"{s}-{p}") for s, c, p in CASES]
)
def test_every_integration_gives_the_releases_of_the_session_core(sources, references, tmp_path, source, config, path):
    folder = sources(source)
    want = references(folder, config)
    assert len(want.messages) >= 2 and len(want.rows) >= 2 * config.chunk_length
    got = PATHS[path](folder, config, tmp_path, len(want.messages))
    if got.messages is not None:
        assert len(got.messages) == len(want.messages)
        for i, (a, b) in enumerate(zip(got.messages, want.messages, strict=True)):
            assert a == b, f"release {i} differs"
    if got.rows is not None:
        np.testing.assert_array_equal(got.rows.t, want.rows.t)
        np.testing.assert_array_equal(got.rows.values, want.rows.values)
    if source == "capture-2d":
        pupil = want.rows.values[:, PUPIL_FEATURES]
        assert np.all(np.isfinite(pupil)) and np.all(pupil[:, 0] > 20.0)  # px, not mm (and not zero)
    if source == "neon":
        blink_rate = want.rows.values[:, 27]
        assert blink_rate.max() > 0  # the source's blinks reached the windows


def test_a_camera_left_to_the_source_is_the_neon_for_a_neon_recording(sources, references):
    folder = sources("neon")
    auto, named = references(folder, NEON_AUTO), references(folder, NEON_NAMED)
    np.testing.assert_array_equal(auto.rows.values, named.rows.values)
    default = references(folder, replace(NEON_AUTO, camera="pupil_core_720p"))
    assert not np.array_equal(default.rows.values, auto.rows.values)  # the field of view matters
