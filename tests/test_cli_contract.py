"""Every option honoured or refused (issue #27 item 1): each command × each configuration field.

A command reads the configuration fields of its table (``READS``, beside it): each is an option
in its ``--help`` and changes the configuration the command builds. Any other field's option is
refused with exit status 2, naming the option and the command. Options that contradict each other
(the command's ``CONFLICTS``) are refused naming both; an abbreviation is no option.
"""

from __future__ import annotations

import argparse
import dataclasses
import re

import pytest

from streamdp.cli import build_parser, main, readers
from streamdp.cli.options import config_from, option_name
from streamdp.config import SessionConfig

#: options a command has of its own that share a configuration field's name (not the field), and a
#: value of each other than its default
OWN_OPTIONS = {
    ("features", "seed"): "3",  # the synthetic gaze's
    ("simulate", "seed"): "3",
    ("heatmap", "seed"): "3",  # the heatmap's noise, its own mechanism and ε per observer
    ("heatmap", "mechanism"): "laplace",
    ("heatmap", "epsilon"): "2",
    ("budget", "ledger_dir"): "ledgers",  # the folder it shows (budget show --ledger-dir)
}

#: what each command needs on its command line besides the option under test
REQUIRED = {
    "features": ["--out", "x.csv"],
    "replay": ["rec", "--out", "out"],
    "heatmap": ["rec", "--out", "m.npy"],
    "subscribe": ["tcp://127.0.0.1:5"],
    "budget": ["show"],
    "install-plugin": ["plugins"],
}

#: a value other than the default, with the options it needs beside it, where the generic one fails
VALUES = {
    "epsilon": ["2"],
    "epsilon_per_feature": ["0.5"],
    "epsilon_ceiling": ["100"],
    "chunk_length": ["32"],
    "k": ["private"],
    "level_share": ["0.5"],
    "bounds": ["b.toml"],
    "unit": ["session", "--budget", "9"],
    "budget": ["9", "--unit", "session"],
    "w": ["3", "--unit", "w-event", "--budget", "9"],
    "seed": ["5"],
    "identity": ["alice@headset1", "--unit", "session", "--budget", "9"],
    "ledger_dir": ["ledgers", "--identity", "alice@headset1", "--unit", "session", "--budget", "9"],
    "min_confidence": ["0.3"],
    "gaze_smoothing": ["median3"],
    "max_fixation_duration": ["2"],
    "blink_onset": ["0.7"],  # twice the default is 1, which the filter's response never exceeds
    "reorder_window": ["0.3"],
    "deadline_slack": ["0.7"],
}

COMMANDS = sorted(readers())
FIELDS = [f.name for f in dataclasses.fields(SessionConfig)]


def _given(name: str) -> list[str]:
    """The option of field ``name`` with a value other than its default."""
    f = next(f for f in dataclasses.fields(SessionConfig) if f.name == name)
    option = option_name(name)
    if name in VALUES:
        return [option, *VALUES[name]]
    if isinstance(f.default, bool):
        return [option]
    choices = f.metadata.get("choices")
    if choices:
        return [option, next(str(c) for c in choices if c != f.default)]
    return [option, repr(type(f.default)(f.default * 2))]


def _sub(command: str) -> argparse.ArgumentParser:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    if command == "budget":  # its options are its actions'
        sub = next(a for a in sub._actions if isinstance(a, argparse._SubParsersAction)).choices["show"]
    return sub


def _options_in_help(command: str) -> set[str]:
    return set(re.findall(r"--[a-z0-9-]+", _sub(command).format_help()))


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("field", FIELDS)
def test_every_option_is_used_or_refused(command, field, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    option = option_name(field)
    argv = [command, *REQUIRED.get(command, []), *_given(field)]
    shown = option in _options_in_help(command)
    if field in readers()[command]:
        assert shown, f"{command} reads {field} but its --help has no {option}"
        cfg = config_from(build_parser().parse_args(argv))
        assert getattr(cfg, field) != getattr(SessionConfig(), field), f"{command} {option} changes nothing"
    elif (command, field) in OWN_OPTIONS:
        assert shown
        args = build_parser().parse_args([command, *REQUIRED.get(command, []), option, OWN_OPTIONS[command, field]])
        assert getattr(args, field) != _sub(command).get_default(field)
    else:
        assert not shown, f"{command} --help lists {option}, which it does not read"
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"streamdp {command}: error: {option}: ") and "Traceback" not in err, err
        assert f"does not read {field}" in err


def test_every_field_is_read_by_some_command():
    read = {name for table in readers().values() for name in table}
    assert read == set(FIELDS)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["features", "rec", "--synthetic", "40", "--out", "x.csv"], "PATH and --synthetic contradict each other"),
        (["features", "rec", "--seed", "3", "--out", "x.csv"], "PATH and --seed contradict each other"),
        (["simulate", "rec", "--synthetic", "5"], "PATH and --synthetic contradict each other"),
        (["relay", "--invisible"], "--invisible needs --neon"),
        (["relay", "--pupil-remote-gaze", "3d"], "--pupil-remote-gaze needs --pupil-remote"),
        (["relay", "--neon", "--remote", "tcp://127.0.0.1:50020"], "--neon and --remote contradict each other"),
        (["relay", "--neon", "h", "--to-backbone"], "--neon and --to-backbone contradict each other"),
        (["relay", "--neon", "--blinks", "confidence"], "--neon and --blinks confidence contradict each other"),
        (["relay", "--pupil-remote", "tcp://127.0.0.1:50029", "--no-gaze-channel"],
         "--pupil-remote and --no-gaze-channel contradict each other"),
        (["demo", "--offline", "--speed", "1"], "--offline and --speed contradict each other"),
        (["demo", "--offline", "--reorder-window", "0.5"], "--offline and --reorder-window contradict each other"),
        (["doctor", "--neon", "--timeout", "3"], "--neon and --timeout contradict each other"),
        (["heatmap", "rec", "--out", "m.npy", "--mechanism", "laplace", "--delta", "0.01"],
         "--mechanism laplace and --delta contradict each other"),
        (["replay", "rec", "--out", "o", "--scheduler", "tcp://h:1"], "--scheduler needs --executor dask"),
    ],
)  # fmt: skip
def test_options_that_contradict_each_other_are_refused_naming_both(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"streamdp {argv[0]}: error: {message}: "), err
    assert err.count("\n") == 1 and list(tmp_path.iterdir()) == []


def test_what_the_conflicts_allow_still_runs(tmp_path, capsys):
    # the option each rule guards, without what it contradicts: honoured
    assert main(["features", "--synthetic", "40", "--seed", "3", "--out", str(tmp_path / "f.csv"), "-q"]) == 0
    assert main(["demo", "--offline", "--seconds", "100", "--seed", "1", "-q"]) == 0
    args = build_parser().parse_args(["relay", "--neon", "--blinks", "given", "--invisible"])
    from streamdp.cli.contract import refuse_conflicts

    refuse_conflicts(args)  # nothing to refuse


def test_an_abbreviated_option_is_no_option(capsys):
    # --w would otherwise be --weights in a command without --w
    assert main(["audit", "--w", "3"]) == 2
    assert capsys.readouterr().err.startswith("streamdp audit: error: --w: streamdp audit does not read w (read by")
    assert main(["demo", "--offl"]) == 2
    assert capsys.readouterr().err.startswith("streamdp demo: error: --offl: no option of streamdp demo")
