from __future__ import annotations

import json

import numpy as np
import pytest

from streamdp import FEATURE_NAMES, InputError
from streamdp.privacy import BoundsProfile, default_profile
from streamdp.privacy.bounds import DEFAULT_BOUNDS


def test_default_profile_covers_the_schema_with_a_reason_per_line():
    p = default_profile()
    assert p.names == FEATURE_NAMES
    assert all(len(reason) > 5 for *_, reason in DEFAULT_BOUNDS)
    assert np.all(p.lo < p.hi) and np.all(p.r > 0)
    assert len(p.digest()) == 16 and p.digest() == default_profile().digest()


def test_default_profile_holds_the_features_of_synthetic_gaze():
    from streamdp import FeaturePipeline
    from streamdp.synthetic import generate

    rows = FeaturePipeline().run(generate(duration=200.0, seed=1).recording).values
    p = default_profile()
    inside = (rows >= p.lo) & (rows <= p.hi)
    assert inside.mean() > 0.99
    steps = np.abs(np.diff(rows, axis=0))
    assert (steps <= p.r).mean() > 0.97


def _write(tmp_path, suffix, data):
    path = tmp_path / f"profile{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(data))
    else:
        lines = ["[features]"]
        for name, e in data.items():
            lines.append(f"{name} = {{ lo = {e['lo']!r}, hi = {e['hi']!r}, r = {e['r']!r} }}")
        path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_user_profile_round_trip(tmp_path, suffix):
    data = default_profile().to_dict()
    data["fixation_rate"] = {"lo": 0.0, "hi": 4.0, "r": 0.1}
    p = BoundsProfile.load(_write(tmp_path, suffix, data))
    assert p.hi[0] == 4.0 and p.r[0] == 0.1
    assert p.digest() != default_profile().digest()


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(lambda d: d.pop("blink_rate"), "missing feature\\(s\\) blink_rate", id="missing-feature"),
        pytest.param(
            lambda d: d.update(extra={"lo": 0, "hi": 1, "r": 1}), "unknown feature\\(s\\) extra", id="unknown-feature"
        ),
        pytest.param(
            lambda d: d.update(fixation_rate={"lo": 5.0, "hi": 5.0, "r": 1.0}),
            "lo \\(5.0\\) must be below hi",
            id="lo-not-below-hi",
        ),
        pytest.param(
            lambda d: d.update(fixation_rate={"lo": 0.0, "hi": 5.0, "r": 0.0}), "r \\(0.0\\) must be > 0", id="r-zero"
        ),
        pytest.param(
            lambda d: d.update(fixation_rate={"lo": 0.0, "hi": "x", "r": 1.0}),
            "hi is 'x', not a number",
            id="not-a-number",
        ),
        pytest.param(
            lambda d: d.update(fixation_rate={"lo": 0.0, "hi": 5.0}), "fixation_rate has no r", id="missing-key"
        ),
        pytest.param(lambda d: d.update(fixation_rate={"lo": 0.0, "hi": True, "r": 1.0}), "not a number", id="bool"),
    ],
)
def test_bad_user_profile_is_refused_naming_the_feature(tmp_path, edit, message):
    data = default_profile().to_dict()
    edit(data)
    with pytest.raises(InputError, match=message):
        BoundsProfile.load(_write(tmp_path, ".json", data))


def test_nan_bound_and_bad_files(tmp_path):
    bad = tmp_path / "p.json"
    bad.write_text('{"fixation_rate": {"lo": NaN, "hi": 1, "r": 1}}')
    with pytest.raises(InputError, match=r"not a finite number|missing"):
        BoundsProfile.load(bad)
    broken = tmp_path / "p.toml"
    broken.write_text("[features\n")
    with pytest.raises(InputError, match="not valid TOML"):
        BoundsProfile.load(broken)
    with pytest.raises(InputError, match="cannot read"):
        BoundsProfile.load(tmp_path / "none.json")


def test_bound_arrays_can_never_be_made_writeable():
    b = default_profile()
    for arr in (b.lo, b.hi, b.r):
        with pytest.raises(ValueError, match="WRITEABLE"):
            arr.setflags(write=True)
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 0.0
