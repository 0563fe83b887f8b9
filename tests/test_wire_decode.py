"""The backbone decoder's fast path (Capture's own datums, decoded as bytes) gives exactly what
the checked path gives for the same datum, and hands anything unusual to the checked path."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from streamdp.pupil_wire import GazeDecoder


def _columns(dec: GazeDecoder) -> np.ndarray:
    cols, _ = dec.take()
    return np.column_stack([cols.t, cols.x, cols.y, cols.confidence, cols.diameter_mm, cols.diameter_px, cols.eye_id])


def _both(datum: dict, topic: str) -> tuple[np.ndarray, np.ndarray, GazeDecoder, GazeDecoder]:
    wire, direct = GazeDecoder(), GazeDecoder()
    wire.add_frames([topic.encode(), msgpack.packb(datum, use_bin_type=True)])
    direct.add_gaze({**datum, "topic": topic}, "datum")
    return _columns(wire), _columns(direct), wire, direct


numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-5, 5),
    st.none(),
    st.booleans(),
    st.text(max_size=2),
)
#: mostly well-formed values, so that the fast path is taken as often as it is left
plausible = st.one_of(st.floats(0.0, 1.0), st.floats(0.0, 1.0), numbers)
pupil = st.fixed_dictionaries({}, optional={"diameter_3d": plausible, "diameter": plausible, "id": st.integers(0, 1)})
base = st.one_of(st.lists(st.one_of(pupil, st.integers(-9, 9)), max_size=3), pupil, st.none(), st.text(max_size=2))


@settings(max_examples=300, deadline=None)
@given(
    t=plausible,
    conf=plausible,
    x=plausible,
    y=plausible,
    base_data=base,
    topic=st.sampled_from(["gaze.3d.01.", "gaze.3d.0.", "gaze.3d.1.", "gaze.2d.01.", "gaze.2d.1.", "gaze.other"]),
)
def test_fast_path_equals_checked_path(t, conf, x, y, base_data, topic):
    datum = {"timestamp": t, "confidence": conf, "norm_pos": [x, y], "topic": topic}
    if base_data is not None:
        datum["base_data"] = base_data
    wire, direct, dw, dd = _both(datum, topic)
    np.testing.assert_array_equal(wire, direct)  # NaN == NaN here
    assert (dw.invalid, dw.malformed, dw.detector_unit) == (dd.invalid, 0, dd.detector_unit)


def _datum(**fields: object) -> bytes:
    return msgpack.packb({"timestamp": 1.0, "confidence": 0.5, "norm_pos": [0.0, 0.0], **fields})


@pytest.mark.parametrize(
    "payload, counter",
    [
        pytest.param(b"\xc1", "malformed", id="not-msgpack"),
        pytest.param(msgpack.packb([1, 2]), "malformed", id="not-a-dict"),
        pytest.param(msgpack.packb({"timestamp": 1.0, "confidence": 0.5}), "invalid", id="no-norm_pos"),
        pytest.param(_datum(timestamp=math.nan), "invalid", id="nan-time"),
        pytest.param(_datum(confidence=1.5), "invalid", id="confidence-above-1"),
    ],
)
def test_bad_frames_are_counted_not_kept(payload, counter):
    dec = GazeDecoder()
    dec.add_frames([b"gaze.3d.01.", payload])
    dec.add_frames([b"gaze.3d.01.", msgpack.packb({"timestamp": 2.0, "confidence": 0.9, "norm_pos": [0.5, 0.5]})])
    assert getattr(dec, counter) == 1
    np.testing.assert_array_equal(dec.take()[0].t, [2.0])


def test_capture_datum_with_pupils_reads_their_diameters():
    pupils = [{"id": e, "diameter_3d": 3.0 + e, "diameter": 40.0 + e} for e in (0, 1)]
    datum = {"timestamp": 5.0, "confidence": 0.8, "norm_pos": [0.1, 0.2], "base_data": pupils}
    wire, direct, dec, _ = _both(datum, "gaze.3d.01.")
    np.testing.assert_array_equal(wire, direct)
    assert wire[0, 4] == 3.5 and wire[0, 5] == 40.5 and dec.detector_unit == "mm"
