"""The library's configuration keeps the command line's rules (issue #27 item 4): keyword-only,
validated, refusing. A value out of range or of the wrong type is refused naming the field and
the value; a configuration file's key that its reader does not read is refused naming the file
and the key, unless it holds the value the field has anyway (a whole configuration, as
:meth:`SessionConfig.to_toml` writes it, serves every command it applies to).
"""

from __future__ import annotations

import json

import pytest

from streamdp import InputError, SessionConfig
from streamdp.cli import build_parser
from streamdp.cli.options import config_from
from streamdp.config.toml_files import UnreadKey


def _toml(tmp_path, text, **kw):
    path = tmp_path / "s.toml"
    path.write_text(text)
    return SessionConfig.from_toml(path, **kw)


#: (id, call on the test's folder, exception, words the message must hold)
BAD = [
    ("positional field", lambda tp: SessionConfig("lpa"), TypeError, "takes 1 positional argument"),
    ("seed -1", lambda tp: SessionConfig(seed=-1), ValueError, "seed must be ≥ 0 (or None: OS entropy), got -1"),
    ("seed 1.5", lambda tp: SessionConfig(seed=1.5), TypeError, "seed must be an int, got 1.5"),
    ("chunk_length 48", lambda tp: SessionConfig(chunk_length=48), ValueError,
     "chunk_length must be a power of two ≥ 2, got 48"),
    ("chunk_length 2^21", lambda tp: SessionConfig(chunk_length=2**21), ValueError,
     "chunk_length must be at most 2^20 = 1048576, got 2097152"),
    ("blink_onset 0", lambda tp: SessionConfig(blink_onset=0.0), ValueError,
     "blink_onset must be strictly between 0 and 1, got 0.0"),
    ("blink_onset 1", lambda tp: SessionConfig(blink_onset=1.0), ValueError, "blink_onset must be strictly between"),
    ("blink_offset -0.25", lambda tp: SessionConfig(blink_offset=-0.25), ValueError,
     "blink_offset must be strictly between 0 and 1, got -0.25"),
    ("min_blink_duration -0.1", lambda tp: SessionConfig(min_blink_duration=-0.1), ValueError,
     "min_blink_duration must be ≥ 0 and at most max_blink_duration (2.0), got -0.1"),
    ("min_blink_duration above max", lambda tp: SessionConfig(min_blink_duration=3.0), ValueError,
     "at most max_blink_duration (2.0), got 3.0"),
    ("gaze_smoothing median4", lambda tp: SessionConfig(gaze_smoothing="median4"), ValueError,
     "gaze_smoothing must be none, median<k> or adaptive<k> with k odd"),
    ("gaze_smoothing 9", lambda tp: SessionConfig(gaze_smoothing=9), TypeError, "gaze_smoothing must be a str"),
    ("rng seed -1", lambda tp: SessionConfig().rng(-1), ValueError, "seed must be ≥ 0 (or None: OS entropy), got -1"),
    ("rng seed text", lambda tp: SessionConfig().rng("1"), TypeError, "seed must be an int or None, got '1'"),
    ("private_pipeline seed -1", lambda tp: SessionConfig().private_pipeline(seed=-1), ValueError, "seed must be ≥ 0"),
    ("gaze_channel_for seed -2, channel off", lambda tp: SessionConfig().gaze_channel_for(seed=-2), ValueError,
     "seed must be ≥ 0"),
    ("camera_for 5", lambda tp: SessionConfig().camera_for(5), TypeError,
     "source_camera must be a camera's name (str) or None, got 5"),
    ("event_config 5", lambda tp: SessionConfig().event_config(5), TypeError, "source_camera must be"),
    ("from_mapping reads a str", lambda tp: SessionConfig.from_mapping({"epsilon": 1.0}, reads="epsilon"), TypeError,
     "reads must be a collection of field names (str), got 'epsilon'"),
    ("from_mapping unread key", lambda tp: SessionConfig.from_mapping(
        {"epsilon": 0.5}, source="s.toml", reads=("window",), reader="streamdp x"), UnreadKey,
     "s.toml: epsilon = 0.5: streamdp x does not read epsilon"),
    ("from_mapping unread None", lambda tp: SessionConfig.from_mapping(
        {"epsilon_ceiling": None}, reads=("window",)), UnreadKey,
     "configuration: epsilon_ceiling = None: this command does not read epsilon_ceiling"),
    ("from_toml unread key", lambda tp: _toml(tp, 'mechanism = "lpa"\n', reads=("epsilon",), reader="streamdp y"),
     UnreadKey, 's.toml: mechanism = "lpa": streamdp y does not read mechanism'),
    ("from_toml unknown before unread", lambda tp: _toml(tp, "windw = 2.0\n", reads=("epsilon",)), InputError,
     "s.toml: unknown key 'windw' (did you mean 'window'?)"),
    ("from_toml path 5", lambda tp: SessionConfig.from_toml(5), TypeError,
     "path must be the path of a TOML file (str or Path), got 5"),
    ("from_toml seed -3", lambda tp: _toml(tp, "seed = -3\n"), ValueError,
     "s.toml: seed must be ≥ 0 (or None: OS entropy), got -3"),
    ("from_toml reads positional", lambda tp: SessionConfig.from_toml(tp / "s.toml", ("epsilon",)), TypeError,
     "positional"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "exc", "words"), [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_the_configuration_refuses_naming_the_field_and_the_value(call, exc, words, tmp_path):
    with pytest.raises(exc) as info:
        call(tmp_path)
    assert words in str(info.value)


def test_an_unread_key_is_an_input_error_naming_the_file_and_the_key(tmp_path):
    with pytest.raises(InputError) as info:  # UnreadKey is one: the command line ends it with exit status 2
        _toml(tmp_path, "window = 20.0\n", reads=("epsilon",), reader="streamdp z")
    assert (info.value.source, info.value.key) == (str(tmp_path / "s.toml"), "window")


def test_a_key_at_the_value_its_field_has_anyway_is_no_loss():
    values = {"window": 20.0, "gaze_w": 60, "epsilon_ceiling": 200.0}  # the last two: their defaults
    assert SessionConfig.from_mapping(values, reads=("window",)).window == 20.0


def test_an_unread_key_holding_what_the_signal_sets_is_no_loss():
    config = SessionConfig(signal="eye-camera-norm")
    assert config.max_dispersion != SessionConfig().max_dispersion  # the signal set it
    assert SessionConfig.from_mapping(config.describe(), reads=("signal",)) == config


@pytest.mark.parametrize("command", ["demo", "relay", "replay", "evaluate", "doctor"])
def test_a_whole_configuration_serves_every_command_it_applies_to(command, tmp_path):
    # to_toml writes every field: the ones a command does not read hold their defaults
    config = SessionConfig(unit="session", budget=50.0)
    path = tmp_path / "whole.toml"
    path.write_text(config.to_toml())
    required = {"replay": ["rec", "--out", "out"]}.get(command, [])
    got = config_from(build_parser().parse_args([command, *required, "--config", str(path)]))
    assert (got.unit, got.budget) == ("session", 50.0)


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_file_that_sets_what_the_command_does_not_read_is_refused(suffix, tmp_path):
    path = tmp_path / f"relay{suffix}"
    path.write_text('epsilon = 0.5\nbudget = 9.0\nunit = "session"\n' if suffix == ".toml" else
                    json.dumps({"config": {"epsilon": 0.5, "budget": 9.0, "unit": "session"}}))  # fmt: skip
    with pytest.raises(InputError) as info:
        config_from(build_parser().parse_args(["doctor", "--config", str(path)]))
    assert str(info.value) == (
        f"{path}: epsilon = 0.5: streamdp doctor does not read epsilon (read by streamdp demo, relay, replay, "
        "evaluate, fit-weights, audit)"
    )
