"""The LSL outlet on loopback (issue #22, item 1): a pylsl inlet resolves each stream by type and
name and receives exactly the released values at the mapped timestamps; the description holds the
labels, units and the public ledger; nothing but a sealed release reaches an outlet.

Each test names its streams uniquely: LSL resolves across the machine (and its network), where
another run of these tests may publish at the same time.
"""

from __future__ import annotations

import time
import uuid
import xml.etree.ElementTree as ET

import numpy as np
import pytest

pylsl = pytest.importorskip("pylsl")

from streamdp.config import SessionConfig  # noqa: E402
from streamdp.network.gaze_client import TICK_NAMES  # noqa: E402
from streamdp.network.lsl_sink import GAZE_UNITS, LslOutlet, feature_units  # noqa: E402
from streamdp.privacy.release import PrivateRelease  # noqa: E402
from streamdp.schema import FEATURE_NAMES, SCHEMA_VERSION  # noqa: E402
from streamdp.session import Session  # noqa: E402
from streamdp.sinks import CollectingSink  # noqa: E402
from streamdp.status import SessionStatus  # noqa: E402
from streamdp.synthetic import generate  # noqa: E402

TIMEOUT = 10.0


@pytest.fixture(scope="module")
def released() -> CollectingSink:
    """Four feature chunks of 8 steps and the gaze channel's ticks, from seeded noise."""
    rec = generate(duration=48.0, seed=3).recording
    sink = CollectingSink(accepts_gaze=True)
    Session.for_recording(SessionConfig(chunk_length=8, seed=0, gaze_channel=True), rec, sinks=[sink]).run(rec)
    assert len(sink.releases) >= 3 and len(sink.ticks) >= 20
    return sink


def _outlet(**kwargs) -> LslOutlet:
    return LslOutlet(f"streamdp-test-{uuid.uuid4().hex[:12]}", publish_reproducible_noise_not_private=True, **kwargs)


def _inlet(outlet: LslOutlet, channel: str, stream_type: str):
    name = outlet.stream_names[channel]
    (info,) = pylsl.resolve_bypred(f"name='{name}' and type='{stream_type}'", 1, TIMEOUT)
    inlet = pylsl.StreamInlet(info, max_buflen=60, processing_flags=0)  # no clock correction: raw stamps
    inlet.open_stream(timeout=TIMEOUT)
    assert outlet.wait_for_consumers(TIMEOUT, channels=(channel,))
    return inlet


def _pull(inlet, rows: int) -> tuple[np.ndarray, np.ndarray]:
    samples: list[list[float]] = []
    stamps: list[float] = []
    deadline = time.monotonic() + TIMEOUT
    while len(samples) < rows and time.monotonic() < deadline:
        chunk, ts = inlet.pull_chunk(timeout=0.5)
        samples.extend(chunk)
        stamps.extend(ts)
    return np.array(samples, dtype=np.float64), np.array(stamps, dtype=np.float64)


def test_an_inlet_receives_exactly_the_released_features_at_the_mapped_timestamps(released):
    outlet = _outlet()
    first, *rest = released.releases
    try:
        # the stream appears with its first release: an inlet can connect only afterwards
        outlet.publish(first)
        assert outlet.clock_offset == pytest.approx(pylsl.local_clock() - first.t[-1], abs=5.0)
        inlet = _inlet(outlet, "features", "Features")
        assert inlet.info().channel_count() == len(FEATURE_NAMES)
        for rel in rest:
            outlet.publish(rel)
        values, stamps = _pull(inlet, sum(len(r.t) for r in rest))
    finally:
        outlet.close()
    np.testing.assert_array_equal(values, np.concatenate([r.values for r in rest]))
    np.testing.assert_array_equal(stamps, np.concatenate([r.t + outlet.clock_offset for r in rest]))


def test_the_gaze_channel_has_its_own_stream_on_the_same_clock_mapping(released):
    outlet = _outlet()
    ticks = released.ticks[:20]
    try:
        outlet.publish(released.releases[0])  # the offset is measured here, once
        offset = outlet.clock_offset
        outlet.publish(ticks[0])
        inlet = _inlet(outlet, "gaze", "Gaze")
        info = inlet.info(timeout=TIMEOUT)
        assert info.nominal_srate() == ticks[0].ledger["rate_hz"]
        for tick in ticks[1:]:
            outlet.publish(tick)
        values, stamps = _pull(inlet, len(ticks) - 1)
    finally:
        outlet.close()
    assert outlet.clock_offset == offset
    assert ticks[0].names == TICK_NAMES
    np.testing.assert_array_equal(values, np.concatenate([k.values for k in ticks[1:]]))
    np.testing.assert_array_equal(stamps, np.concatenate([k.t + offset for k in ticks[1:]]))


def test_the_description_holds_labels_units_and_the_public_ledger(released):
    first = released.releases[0]
    # Pupil time already on the LSL clock: the timestamps are the release's own
    outlet = _outlet(clock_offset=0.0, diameter_unit="px")
    try:
        outlet.publish(first)
        outlet.publish(released.ticks[0])
        feats = _inlet(outlet, "features", "Features")
        gaze = _inlet(outlet, "gaze", "Gaze")
        root = ET.fromstring(feats.info(timeout=TIMEOUT).as_xml())
        gaze_root = ET.fromstring(gaze.info(timeout=TIMEOUT).as_xml())
        outlet.publish(released.releases[1])
        values, stamps = _pull(feats, len(released.releases[1].t))
        assert values.shape == released.releases[1].values.shape
    finally:
        outlet.close()
    np.testing.assert_array_equal(stamps, released.releases[1].t)
    channels = root.findall("desc/channels/channel")
    assert [c.findtext("label") for c in channels] == list(FEATURE_NAMES)
    assert [c.findtext("unit") for c in channels] == list(feature_units("deg", "px").values())
    assert {c.findtext("type") for c in channels} == {"Feature"}
    gaze_channels = gaze_root.findall("desc/channels/channel")
    assert [(c.findtext("label"), c.findtext("unit")) for c in gaze_channels] == list(GAZE_UNITS.items())
    ours = root.find("desc/streamdp")
    assert ours is not None
    assert ours.findtext("schema_version") == str(SCHEMA_VERSION)
    assert ours.findtext("topic") == first.topic
    assert ours.findtext("guarantee") == first.ledger["guarantee"]
    assert float(ours.findtext("clock/offset") or "nan") == 0.0
    ledger = ours.find("ledger")
    assert ledger is not None
    public = first.to_message()["ledger"]
    assert {e.tag for e in ledger} - {"_note"} == set(public)
    assert ledger.findtext("mechanism") == "dcfpa" and ledger.findtext("epsilon") == str(public["epsilon"])
    # the clip rate is a raw function of the gaze: in the release's local ledger, never on a stream
    assert "clipped_fraction" in first.ledger
    assert "clipped" not in ET.tostring(root, encoding="unicode")
    assert gaze_root.findtext("desc/streamdp/ledger/rate_hz") == str(released.ticks[0].ledger["rate_hz"])


def test_announce_makes_the_stream_before_its_first_release_is_pushed(released):
    """What a replay needs: the stream exists (described by the first release, the offset measured
    from it) before an inlet connects, so that the inlet receives the first release too."""
    outlet = _outlet()
    first, second = released.releases[:2]
    try:
        assert outlet.announce(first) == outlet.stream_names["features"]
        assert outlet.clock_offset == pytest.approx(outlet.local_clock() - first.t[-1], abs=5.0)
        inlet = _inlet(outlet, "features", "Features")
        for rel in (first, second):
            outlet.publish(rel)
        values, stamps = _pull(inlet, len(first.t) + len(second.t))
        assert outlet.has_consumers()
        inlet.close_stream()
        deadline = time.monotonic() + TIMEOUT
        while outlet.has_consumers() and time.monotonic() < deadline:
            time.sleep(0.01)  # the outlet learns of the closed connection from its own thread
        assert not outlet.has_consumers()
    finally:
        outlet.close()
    np.testing.assert_array_equal(values, np.concatenate([first.values, second.values]))
    np.testing.assert_array_equal(stamps, np.concatenate([first.t, second.t]) + outlet.clock_offset)


def test_only_a_sealed_release_reaches_an_outlet(released):
    outlet = _outlet()
    try:
        for bad in ({"values": [[0.5] * 4], "t": [1.0]}, np.zeros((1, 52)), object.__new__(PrivateRelease)):
            with pytest.raises(TypeError):
                outlet.publish(bad)
        with pytest.raises(TypeError):
            outlet.publish_status({"released": 1})
        outlet.publish_status(SessionStatus(mechanism="dcfpa", invalid=3))  # checked, sent nowhere
        assert outlet.stream_names == {} and outlet.clock_offset is None  # nothing was made
    finally:
        outlet.close()
    with pytest.raises(RuntimeError, match="closed"):
        outlet.publish(released.releases[0])


def test_seeded_noise_is_refused_by_default(released):
    outlet = LslOutlet(f"streamdp-test-{uuid.uuid4().hex[:12]}")
    try:
        with pytest.raises(ValueError, match="reproducible"):
            outlet.publish(released.releases[0])
        assert outlet.stream_names == {}
    finally:
        outlet.close()


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"name": ""}, ValueError),
        ({"clock_offset": float("nan")}, ValueError),
        ({"clock_offset": True}, ValueError),
        ({"max_buffered": 0}, ValueError),
        ({"position_unit": ""}, ValueError),
        ({"publish_reproducible_noise_not_private": 1}, TypeError),
    ],
)
def test_bad_arguments_are_refused(kwargs, error):
    with pytest.raises(error):
        LslOutlet(**kwargs)


def test_the_relay_publishes_its_gaze_ticks_on_lsl_with_the_lsl_option(tmp_path):
    """``streamdp relay --lsl --gaze-channel`` against the simulated Capture: an inlet resolves the
    relay's Gaze stream and receives ticks on the 60 Hz grid, mapped to the LSL clock."""
    import signal
    import subprocess
    import sys

    from streamdp.network.simulator import CaptureSimulator
    from streamdp.synthetic import generate

    with CaptureSimulator(generate(duration=20.0, seed=1).recording, speed=1.0, loop=True) as sim:
        relay = subprocess.Popen(
            [sys.executable, "-m", "streamdp.cli", "relay", "--remote", sim.remote_address, "--lsl", "--gaze-channel",
             "--bind", "tcp://127.0.0.1:0", "--status-bind", "tcp://127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            infos = pylsl.resolve_bypred("name='streamdp-gaze' and type='Gaze'", 1, 20.0)
            assert infos, "the relay's Gaze stream was not found"
            inlet = pylsl.StreamInlet(infos[0], max_buflen=60, processing_flags=0)
            inlet.open_stream(timeout=TIMEOUT)
            values, stamps = _pull(inlet, 30)
            inlet.close_stream()
        finally:
            relay.send_signal(signal.SIGINT)
            out = relay.communicate(timeout=30)[0]
    assert relay.returncode == 0, out
    # a pull takes what has arrived: the last may bring more than the 30 asked for
    assert len(values) >= 30 and values.shape[1] == 4 and np.allclose(np.diff(stamps), 1 / 60, atol=1e-6)
    assert infos[0].channel_count() == 4
