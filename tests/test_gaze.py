from __future__ import annotations

import numpy as np
import pytest

from streamdp import GazeBatch, InputError

GOOD = dict(t=[0.0, 0.01, 0.02], x=[0.5, 0.5, 0.5], y=[0.5, 0.5, 0.5])


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param({"t": [0.0, np.nan, 0.02]}, "row 1 is nan", id="nan-timestamp"),
        pytest.param({"t": [0.0, np.inf, 0.02]}, "not a finite number", id="inf-timestamp"),
        pytest.param({"t": [0.0, 0.02, 0.01]}, "backwards at row 2", id="timestamps-backwards"),
        pytest.param({"confidence": [1.0, 1.5, 1.0]}, "confidence at row 1", id="confidence-above-1"),
        pytest.param({"confidence": [1.0, np.nan, 1.0]}, "confidence at row 1", id="confidence-nan"),
        pytest.param({"confidence": [-0.1, 1.0, 1.0]}, "outside [0, 1]", id="confidence-negative"),
        pytest.param(
            {"x": [0.5, np.nan, 0.5], "valid": [True, True, True]},
            "marked valid",
            id="nan-position-valid",
        ),
        pytest.param({"diameter": [3.0, -1.0, 3.0]}, "negative", id="negative-diameter"),
        pytest.param({"diameter": [3.0, np.inf, 3.0]}, "infinite", id="infinite-diameter"),
        pytest.param({"x": [0.5, 0.5]}, "length 2 differs", id="length-mismatch"),
        pytest.param({"t": [[0.0], [1.0], [2.0]]}, "1-D", id="two-dimensional"),
    ],
)
def test_bad_batches_are_refused_with_the_row_and_the_problem(change, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        GazeBatch.from_arrays(**{**GOOD, **change}, source="test")


def test_nan_position_is_accepted_on_invalid_samples():
    b = GazeBatch.from_arrays(t=[0.0, 0.1], x=[np.nan, 0.5], y=[np.nan, 0.5])
    assert b.valid.tolist() == [False, True]


def test_batch_arrays_are_read_only():
    b = GazeBatch.from_arrays(**GOOD)
    with pytest.raises(ValueError):
        b.x[0] = 1.0


def test_split_and_concat_round_trip():
    b = GazeBatch.from_arrays(t=np.arange(10.0), x=np.linspace(0, 1, 10), y=np.zeros(10))
    parts = b.split([3, 7])
    assert [len(p) for p in parts] == [3, 4, 3]
    joined = GazeBatch.concat(parts)
    assert np.array_equal(joined.t, b.t) and np.array_equal(joined.x, b.x)


def test_concat_refuses_mixed_diameter_units():
    a = GazeBatch.from_arrays(t=[0.0], x=[0.5], y=[0.5], diameter_unit="mm")
    b = GazeBatch.from_arrays(t=[1.0], x=[0.5], y=[0.5], diameter_unit="px")
    with pytest.raises(InputError, match="diameter units"):
        GazeBatch.concat([a, b])


def test_a_slice_is_a_read_only_view_with_every_field_and_the_unit():
    b = GazeBatch.from_arrays(
        t=np.arange(10.0), x=np.linspace(0, 1, 10), y=np.zeros(10), diameter=np.full(10, 3.0),
        eye_id=np.arange(10) % 2, diameter_unit="mm", source="test",
    )  # fmt: skip
    part = b.slice(2, 7)
    assert isinstance(part, GazeBatch) and len(part) == 5
    for name in ("t", "x", "y", "confidence", "diameter", "eye_id", "valid"):
        whole, sliced = getattr(b, name), getattr(part, name)
        assert np.array_equal(sliced, whole[2:7]) and np.shares_memory(sliced, whole)
        with pytest.raises(ValueError):
            sliced[0] = sliced[1]
    assert (part.diameter_unit, part.source) == ("mm", "test")
    assert len(b.slice(5, 5)) == 0
