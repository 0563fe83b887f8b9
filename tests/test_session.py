"""The session core and its configuration: what decides the output, and the rules every shell
inherits from them (diameter unit, sinks, counters, budget)."""

from __future__ import annotations

import dataclasses

import msgpack
import numpy as np
import pytest

from streamdp.config import EVENT_FIELDS, SessionConfig
from streamdp.gaze import GazeBatch, GazeColumns, Recording
from streamdp.pupil_wire import encode, recording_datums
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.stages.events import EventConfig
from streamdp.status import StatusEvent
from streamdp.synthetic import generate

SHORT = {"window": 4.0, "step": 0.25, "chunk_length": 8, "seed": 3}


def _messages(releases) -> list[bytes]:
    return [msgpack.packb(r.to_message(), use_bin_type=True) for r in releases]


# ------------------------------------------------------------------ configuration


def test_every_event_threshold_is_a_configuration_field_and_reaches_the_detector():
    fields = {f.name for f in dataclasses.fields(SessionConfig)}
    assert set(EVENT_FIELDS) <= fields
    assert {f.name for f in dataclasses.fields(EventConfig)} - set(EVENT_FIELDS) == {
        "fov_deg",
        "blink_source",
    }
    changed = {name: (0.123 if name != "units" else "norm") for name in EVENT_FIELDS}
    changed["max_fixation_duration"] = 0.5
    changed["min_confidence"] = 0.3
    changed["blink_onset"] = 0.4
    events = SessionConfig(**changed).event_config()
    for name, value in changed.items():
        assert getattr(events, name) == value, name


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"epsilon": "1"}, TypeError, "epsilon must be a number"),
        ({"epsilon": float("inf")}, ValueError, "epsilon must be finite"),
        ({"chunk_length": 32.0}, TypeError, "chunk_length must be an int"),
        ({"mechanism": "laplace"}, ValueError, "mechanism must be one of"),
        ({"camera": "gopro"}, ValueError, "camera must be one of"),
        ({"diameter_unit": "cm"}, ValueError, "diameter_unit must be one of"),
        ({"k": 2.5}, TypeError, "k must be an int or 'private'"),
        ({"window": -1.0}, ValueError, "window must be finite and > 0"),
        ({"max_dispersion": "wide"}, TypeError, "max_dispersion must be a number"),
        ({"reorder_window": -0.1}, ValueError, "reorder_window must be finite and ≥ 0"),
        ({"unit": "session"}, TypeError, "budget must be a number"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_configuration_is_refused_naming_the_field(changes, error, message):
    with pytest.raises(error, match=message):
        SessionConfig(**changes)


def test_a_parameter_the_mechanism_does_not_take_is_refused_not_dropped():
    with pytest.raises(TypeError, match="lpa does not take parameter 'k'"):
        SessionConfig(mechanism="lpa", k=3).check()
    with pytest.raises(TypeError, match="steil does not take parameter 'transform'"):
        Session(SessionConfig(mechanism="steil", transform="dct"))


# ------------------------------------------------------------------ diameter unit


def _mixed_detector_gaze() -> GazeColumns:
    """A 3d model that converges late: the first 15 s carry px only, then mm and px."""
    g = generate(duration=40.0, rate=100.0, seed=5).recording.gaze
    late = g.t >= g.t[0] + 15.0
    return GazeColumns(
        g.t, g.x, g.y, g.confidence, np.where(late, g.diameter, np.nan), g.diameter * 10.0, g.eye_id, g.valid
    )


def test_the_diameter_unit_never_depends_on_how_the_stream_was_split():
    cols = _mixed_detector_gaze()
    config = SessionConfig(**SHORT)
    whole = Session(config, reorder=False)
    rows_whole = whole.keep_feature_rows()
    out_whole = whole.update(cols) + whole.flush()
    split = Session(config, reorder=False)
    rows_split = split.keep_feature_rows()
    out_split = []
    for i in range(0, len(cols), 50):
        out_split += split.update(cols.take(slice(i, i + 50)))
    out_split += split.flush()
    assert whole._input.unit == split._input.unit == "px"  # the first sample with a diameter had px only
    assert _messages(out_whole) == _messages(out_split)
    assert np.array_equal(
        np.concatenate([r.values for r in rows_whole]), np.concatenate([r.values for r in rows_split])
    )


def test_pupil_gaze_takes_its_unit_from_the_detector_in_its_topic():
    g = generate(duration=12.0, rate=100.0, seed=5).recording
    for unit, expected in (("mm", "mm"), ("px", "px")):
        gaze = GazeBatch.from_arrays(
            t=g.gaze.t, x=g.gaze.x, y=g.gaze.y, diameter=g.gaze.diameter, diameter_unit=unit  # type: ignore[arg-type]
        )
        frames = [encode(d) for d in recording_datums(Recording(gaze, None, "r")) if d["topic"].startswith("gaze")]
        assert all(f[0].startswith(b"gaze.3d." if unit == "mm" else b"gaze.2d.") for f in frames)
        session = Session(SessionConfig(**SHORT))
        session.receive_frames(frames)
        assert session._input.unit == expected


def test_a_configured_diameter_unit_overrides_the_source():
    cols = _mixed_detector_gaze()
    session = Session(SessionConfig(diameter_unit="mm", **SHORT), reorder=False)
    rows = session.keep_feature_rows()
    session.update(cols)
    session.flush()
    assert session._input.unit == "mm"
    pupil = np.concatenate([r.values for r in rows])[:, 21]
    assert np.nanmax(pupil) < 10.0  # mm, not the px column (ten times larger here)


# ------------------------------------------------------------------ sinks, counters, budget


def test_a_session_refuses_a_sink_that_is_not_a_release_sink():
    with pytest.raises(TypeError, match="sinks must implement ReleaseSink"):
        Session(SessionConfig(**SHORT), sinks=[object()])  # type: ignore[list-item]


def test_dropped_steps_are_counted_across_a_reset():
    rec = generate(duration=21.0, rate=100.0, seed=2).recording  # 68 steps: 8 chunks of 8, 4 dropped
    session = Session.for_recording(SessionConfig(**SHORT), rec)
    session.run(rec)
    dropped = session.dropped_steps
    assert dropped == 4
    session.reset()
    assert session.status().dropped_steps == dropped


def test_an_exhausted_budget_is_said_once_and_nothing_more_is_released():
    rec = generate(duration=40.0, rate=100.0, seed=2).recording
    sink = CollectingSink()
    per_chunk = SessionConfig(**SHORT).mechanism_instance().epsilon_chunk
    config = SessionConfig(unit="session", budget=per_chunk * 3, **SHORT)
    session = Session.for_recording(config, rec, sinks=[sink])
    session.run(rec)
    assert len(sink.releases) == 3
    assert [s.event for s in sink.statuses] == [StatusEvent.BUDGET_EXHAUSTED]
    assert session.run(rec) == [] and len(sink.statuses) == 1
