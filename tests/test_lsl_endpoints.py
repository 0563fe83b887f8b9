"""LSL beyond the relay (issue #22, item 1): the Capture plugin's ``lsl`` setting opens an outlet
beside its endpoint, in the stand-in of Capture's world loop, and its privacy check lists it;
``streamdp doctor`` lists the LSL streams of the network, streamdp's as sanitized and another
gaze stream on this machine (Pupil's LSL relay, say) as raw gaze exposed.

Streams are named uniquely: LSL resolves across the machine, where other tests may publish.
"""

from __future__ import annotations

import time
import uuid

import numpy as np
import pytest

pylsl = pytest.importorskip("pylsl")

from streamdp.capture.endpoint import EndpointSettings  # noqa: E402
from streamdp.cli import main  # noqa: E402
from streamdp.network.doctor import EXIT_PRIVATE, EXIT_RAW_REACHABLE, check_deployment  # noqa: E402
from streamdp.network.lsl_sink import LslOutlet  # noqa: E402
from streamdp.network.lsl_streams import LslStream, LslSurvey, lsl_findings  # noqa: E402
from streamdp.network.simulator import CaptureSimulator  # noqa: E402
from streamdp.synthetic import generate  # noqa: E402

from .pupil_standin import world_frames  # noqa: E402
from .test_plugin_endpoint import LOOPBACK, SMALL, capture, start  # noqa: E402, F401

TIMEOUT = 10.0


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def test_the_plugin_s_lsl_setting_opens_an_outlet_that_carries_its_chunks(capture):  # noqa: F811
    env, pub = capture
    name = _unique("streamdp-plugin")
    settings = {**SMALL, **LOOPBACK, "lsl": name, "seed": 0, "publish_reproducible_noise_not_private": True}
    g_pool, plugin = start(env, pub, settings)
    outlet = plugin.endpoint.lsl
    assert isinstance(outlet, LslOutlet) and outlet in plugin.session.sinks
    assert f"LSL streams {name}-*" in plugin.endpoint_text
    frames = world_frames(generate(duration=70.0, rate=120.0, seed=4).recording)
    published: list[dict] = []
    for events in frames:  # the stream appears with the plugin's first chunk
        published += env.world.run_frame(g_pool, events).get("streamdp", [])
        if published:
            break
    (info,) = pylsl.resolve_bypred(f"name='{name}-features' and type='Features'", 1, TIMEOUT)
    inlet = pylsl.StreamInlet(info, max_buflen=60, processing_flags=0)
    inlet.open_stream(timeout=TIMEOUT)
    assert outlet.wait_for_consumers(TIMEOUT)
    after: list[dict] = []
    for events in frames:
        after += env.world.run_frame(g_pool, events).get("streamdp", [])
    assert len(after) >= 5
    rows = 8 * len(after)
    values: list = []
    stamps: list = []
    deadline = time.monotonic() + TIMEOUT
    while len(values) < rows and time.monotonic() < deadline:
        chunk, ts = inlet.pull_chunk(timeout=0.5)
        values += chunk
        stamps += ts
    inlet.close_stream()
    # the chunks Capture's events got, value for value, at Pupil time + the outlet's one offset
    np.testing.assert_array_equal(np.array(values), np.concatenate([d["values"] for d in after]))
    np.testing.assert_array_equal(np.array(stamps), np.concatenate([d["t"] for d in after]) + outlet.clock_offset)
    assert any(line.startswith(f"warning  LSL streams {name}-*: streamdp's outlet: sanitized") for line in
               [str(f) for f in _report(g_pool, plugin).findings])  # fmt: skip
    plugin.cleanup()
    assert outlet.closed


def _report(g_pool, plugin):
    from streamdp.capture.check import check_capture

    return check_capture(g_pool, plugin.endpoint, plugin.session.config)


def test_a_plugin_lsl_setting_that_cannot_work_is_refused_in_one_line(capture):  # noqa: F811
    env, pub = capture
    _, plugin = start(env, pub, {**SMALL, **LOOPBACK})
    assert plugin.endpoint.lsl is None
    assert not plugin.update_settings(lsl="")
    assert "lsl must not be empty" in plugin.error
    assert not plugin.update_settings(lsl=1)
    assert "lsl must be a bool or a stream name" in plugin.error
    assert not plugin.update_settings(bind=None, lsl=True)
    assert "lsl publishes beside the endpoint: it needs bind" in plugin.error
    assert plugin.endpoint is not None and plugin.endpoint.lsl is None  # still serving, unchanged
    assert plugin.update_settings(lsl=True) and plugin.endpoint.lsl.name == "streamdp"
    with pytest.raises(ValueError, match="needs bind"):
        EndpointSettings(bind=None, lsl="x")


@pytest.fixture
def streams():
    """streamdp's outlet with a stream made, and a raw gaze stream as Pupil's LSL relay makes one."""
    from streamdp.config import SessionConfig
    from streamdp.session import Session
    from streamdp.sinks import CollectingSink

    rec = generate(duration=40.0, seed=3).recording
    sink = CollectingSink()
    Session.for_recording(SessionConfig(chunk_length=8, seed=0), rec, sinks=[sink]).run(rec)
    ours = LslOutlet(_unique("streamdp-doctor"), publish_reproducible_noise_not_private=True)
    ours.announce(sink.releases[0])
    raw_name = _unique("pupil_capture")
    info = pylsl.StreamInfo(raw_name, "Gaze", 3, 120.0, "double64", _unique("pupil_capture_lsl_relay"))
    raw = pylsl.StreamOutlet(info)
    try:
        yield ours.stream_names["features"], raw_name
    finally:
        ours.close()
        del raw


def test_the_doctor_lists_lsl_streams_streamdp_s_sanitized_and_raw_gaze_exposed(streams, capsys):
    ours, raw = streams
    with CaptureSimulator(generate(duration=2.0, seed=1).recording, speed=0) as sim:
        report = check_deployment(remote=sim.remote_address, lsl_timeout=1.0)
        quiet = check_deployment(remote=sim.remote_address, lsl_timeout=None)
        code = main(["doctor", "--remote", sim.remote_address])
    found = {f.subject: f for f in report.findings}
    assert found[f"LSL stream {ours}"].status == "warning"
    assert "streamdp's (Features, on this machine): sanitized releases only" in found[f"LSL stream {ours}"].text
    assert found[f"LSL stream {raw}"].status == "exposed" and "likely raw gaze" in found[f"LSL stream {raw}"].text
    assert report.exit_code == EXIT_RAW_REACHABLE and f"LSL stream {raw}" in report.verdict
    assert not any(f.subject.startswith("LSL") for f in quiet.findings) and quiet.exit_code == EXIT_PRIVATE
    out = capsys.readouterr().out
    assert code == EXIT_RAW_REACHABLE and f"exposed  LSL stream {raw}: not streamdp's" in out


def test_lsl_findings_tell_streamdp_s_streams_from_other_gaze_streams():
    ours = LslStream("streamdp-rec-features", "Features", "streamdp-replay/rec/features/dcfpa", "lab1")
    elsewhere = LslStream("pupil_capture", "Gaze", "pupil_capture_lsl_relay_1", "lab2")
    eeg = LslStream("EEG", "EEG", "amp-1", "lab1")
    mimic = LslStream("fake", "EEG", "x/features/dcfpa", "lab1")  # the source id alone is not enough
    findings = lsl_findings(LslSurvey((ours, elsewhere, eeg, mimic), host="lab1"))
    assert [(f.subject, f.status) for f in findings] == [
        ("LSL stream streamdp-rec-features", "warning"),
        ("LSL stream pupil_capture", "warning"),  # another host's raw gaze: not this deployment's
    ]
    assert "host lab2" in findings[1].text
    assert [f.status for f in lsl_findings(LslSurvey(problem="not looked for: no pylsl"))] == ["note"]
    assert lsl_findings(LslSurvey((eeg,), host="lab1"))[0].status == "ok"
    with pytest.raises(ValueError, match="lsl_timeout"):
        check_deployment(remote="tcp://127.0.0.1:1", lsl_timeout=0)
