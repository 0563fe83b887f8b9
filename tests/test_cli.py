from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from streamdp.cli import COMMANDS, build_parser, main, readers
from streamdp.cli.format import format_chunk, format_status
from streamdp.cli.options import add_config_options, config_fields, config_from, option_name
from streamdp.config import SessionConfig
from streamdp.kernels.geometry import CAMERA_FOV_DEG
from streamdp.schema import FEATURE_NAMES
from streamdp.synthetic import generate

from .conftest import shared
from .recording_files import write_capture_recording
from .test_cli_contract import OWN_OPTIONS


def test_features_of_synthetic_gaze_to_csv(tmp_path, capsys):
    out = tmp_path / "f.csv"
    assert main(["features", "--synthetic", "45", "--out", str(out)]) == 0
    data = np.loadtxt(out, delimiter=",", skiprows=1)
    assert data.shape == (30, 53)
    assert out.read_text().splitlines()[0] == ",".join(("t", *FEATURE_NAMES))
    assert "UNSANITIZED" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.partial"))


def test_features_of_a_real_recording_to_npz(tmp_path):
    out = tmp_path / "f.npz"
    assert (
        main(
            [
                "features",
                str(shared("cateyes_119hz", "test_data_full.csv")),
                "--out",
                str(out),
                "--step",
                "1",
            ]
        )
        == 0
    )
    with np.load(out) as z:
        assert z["values"].shape[1] == 52 and z["values"].shape[0] == 268
        assert list(z["names"]) == list(FEATURE_NAMES)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["features", "/no/such/recording", "--out", "x.csv"],
            "no such file or folder",
            id="missing-recording",
        ),
        pytest.param(
            ["features", "--synthetic", "40", "--window", "-1", "--out", "x.csv"],
            "window must be finite and > 0",
            id="bad-window",
        ),
        pytest.param(
            ["features", "--synthetic", "40", "--blinks", "given", "--step", "0", "--out", "x.csv"],
            "step must be finite",
            id="bad-step",
        ),
    ],
)
def test_bad_input_exits_2_with_a_message_and_no_traceback(tmp_path, capsys, argv, message):
    assert main([*argv[:-1], str(tmp_path / argv[-1])]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "x.csv").exists()


def test_demo_prints_sanitized_chunks_with_their_ledger(capsys):
    assert main(["demo", "--seed", "3", "--seconds", "150"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("chunk 0: streamdp.features.dcfpa")
    # the public grid from 1030 s (the first full window): slots of 64 steps end at 1087.5 and 1119.5 s
    chunks = [i for i, line in enumerate(lines) if line.startswith("chunk ")]
    assert len(chunks) == 2
    first, second = lines[chunks[0] : chunks[1]], lines[chunks[1] :]
    assert first[0].endswith(
        ", t 1056.0–1087.5 s (64 steps): ε 10 for this whole chunk (10 per feature × 1 feature; 51 features "
        "released as public constants; allocation task@k=1 for ε 10)"
    )
    # the ledger as sentences a non-expert reads, once per release: what is protected, for which
    # unit, the total so far, what raw gaze costs, the noise's origin; then what stays local
    assert first[1] == (
        "  protected: chunk unit — each chunk is protected on its own; over a longer stretch the ε of its "
        "chunks add up (ε 10 spent so far, with no cap)"
    )
    assert "(ε 20 spent so far, with no cap)" in second[1]
    assert first[2].startswith("  raw gaze: one sample changes at most 2 chunks (ε ≤ 20)")
    assert first[3].startswith("  noise: reproducible, not private")
    # the means are of released features: at ε 10 the task allocation funds one (task@k=1) and gives
    # fixation_rate, pupil_mean_mean, … no ε, so they are public constants (the same in every chunk)
    # and not shown as if they were data
    means = first[4].split(" (")[0]  # no name=value pairs (the note names the task@k=1 allocation)
    assert means.startswith("  noised means over the chunk: wordbook1_distinct ") and "=" not in means
    assert "(noise can put a mean outside its range, even below 0; " in first[4]
    assert first[4].endswith("; 51 public constants not shown: the task@k=1 weights give them no ε)")
    assert first[5] == "  on this device only: 0.0% of the values were clipped to the bounds"
    assert len(first) == len(second) == 6


def _means(line: str) -> dict[str, float]:
    shown = line.removeprefix("  noised means over the chunk: ").split(" (")[0]
    return {name: float(value.rstrip("/s°")) for name, value, *_unit in (part.split(" ") for part in shown.split(", "))}


def test_demo_shows_no_public_constant_as_a_mean(capsys):
    from streamdp.config import SessionConfig
    from streamdp.synthetic import generate

    # ε 200: the task allocation's 26 features (at the default ε 10 it funds one: one mean to show)
    release = SessionConfig(seed=3, epsilon=200.0).private_pipeline().run(generate(duration=100.0, seed=0).recording)[0]
    constants = set(release.to_message()["ledger"]["dropped_features"])
    assert len(constants) == 26 and {"fixation_rate", "pupil_mean_mean", "blink_rate"} <= constants
    assert main(["demo", "--offline", "--seed", "3", "--seconds", "150", "--epsilon", "200"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "means over the chunk" in line]
    assert len(lines) == 2
    for line in lines:
        assert len(_means(line)) == 4 and not set(_means(line)) & constants
    # the means differ from chunk to chunk: they are noised data, not constants
    assert _means(lines[0]) != _means(lines[1])
    # under equal weights every feature has ε: the first four preferred are shown, nothing skipped
    assert main(["demo", "--offline", "--seed", "3", "--seconds", "100", "--weights", "equal"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "means over the chunk" in line]
    assert list(_means(line)) == ["fixation_rate", "fixation_duration_mean", "pupil_mean_mean", "blink_rate"]
    assert "not shown" not in line


def test_demo_without_a_seed_says_nothing_about_reproducible_noise(capsys):
    assert main(["demo", "--offline", "--seconds", "100"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("chunk 0: ") and "noise:" not in out and "reproducible" not in out


def test_demo_prints_the_same_chunks_offline_as_over_the_network(capsys):
    # one session and one formatter: the simulated Capture's wire, the relay and the subscriber
    # change nothing in what is released or how it is shown (the local clip rate included)
    assert main(["demo", "--seed", "3", "--seconds", "150"]) == 0
    networked = capsys.readouterr().out
    assert main(["demo", "--offline", "--seed", "3", "--seconds", "150"]) == 0
    assert capsys.readouterr().out == networked
    assert networked.count("on this device only: ") == 2


@pytest.mark.parametrize("where", ["--offline", "--networked"])
def test_demo_with_a_session_budget_reports_exhaustion_once(capsys, where):
    argv = ["demo", "--seed", "1", "--chunk-length", "32", "--unit", "session", "--budget", "20"]
    assert main([*argv, *([where] if where == "--offline" else [])]) == 0
    captured = capsys.readouterr()
    chunks = [line for line in captured.out.splitlines() if line.startswith("chunk ")]
    protected = [line for line in captured.out.splitlines() if line.startswith("  protected: ")]
    assert len(chunks) == 2 and "ε 20 of the budget 20 spent so far, 0 left" in protected[1]
    assert "session unit — everything released about this person adds up" in protected[0]
    assert captured.err.count("nothing more is released") == 1, captured.err
    assert "streamdp: warning: session budget ε = 20 is used up: ε 20 spent by 2 chunks leaves 0" in captured.err


def test_demo_json_prints_each_chunk_as_published(capsys):
    import json

    assert main(["demo", "--offline", "--seed", "3", "--seconds", "150", "--json"]) == 0
    lines = capsys.readouterr().out.splitlines()
    messages = [json.loads(line) for line in lines]
    assert len(messages) == 2 and [m["ledger"]["chunk_index"] for m in messages] == [0, 1]
    assert messages[0]["topic"] == "streamdp.features.dcfpa" and len(messages[0]["values"]) == 64
    assert all("clipped_fraction" not in m and "clipped_fraction" not in m["ledger"] for m in messages)
    pipe = SessionConfig(seed=3).private_pipeline(source_camera="pupil_core_720p")
    want = pipe.run(generate(duration=150.0, rate=200.0, seed=0).recording)[0].to_message()
    assert messages[0]["values"] == np.asarray(want["values"]).tolist()
    assert messages[0]["ledger"] == json.loads(json.dumps(want["ledger"]))


def test_demo_too_short_for_one_chunk_says_how_long_it_must_be(capsys):
    assert main(["demo", "--offline", "--seconds", "80"]) == 2
    err = capsys.readouterr().err
    assert "--seconds 80 gives no whole chunk" in err and "give --seconds 88 or more" in err
    assert main(["demo", "--offline", "--seconds", "88", "-q"]) == 0


def test_demo_refuses_bad_privacy_options(capsys):
    assert main(["demo", "--epsilon", "0"]) == 2
    assert "epsilon must be finite and > 0, got 0.0" in capsys.readouterr().err
    assert main(["demo", "--chunk-length", "48"]) == 2
    assert "chunk_length must be a power of two" in capsys.readouterr().err
    assert main(["demo", "--k", "many"]) == 2
    assert "--k must be an integer or 'private'" in capsys.readouterr().err
    assert main(["demo", "--mechanism", "lpa", "--k", "3"]) == 2
    assert "lpa does not take parameter 'k'" in capsys.readouterr().err


def test_audit_command_passes_for_correct_mechanisms(capsys):
    argv = [
        "audit",
        "--mechanisms",
        "dcfpa",
        "lpa",
        "--transforms",
        "dft",
        "--sensitivities",
        "bound",
        "--runs",
        "2000",
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "dcfpa" in out and "lpa" in out
    verdicts = [line.rsplit(None, 1)[-1] for line in out.splitlines()[2:] if not line.startswith("    ")]
    assert verdicts and set(verdicts) == {"pass"}


def test_heatmap_command_writes_npy_and_png(tmp_path, capsys):
    out = tmp_path / "map.npy"
    rec = str(shared("cateyes_119hz", "test_data_full.csv"))
    assert (
        main(["heatmap", rec, rec, "--out", str(out), "--mechanism", "laplace", "--shape", "12x16", "--seed", "0"]) == 0
    )
    assert np.load(out).shape == (12, 16)
    assert (tmp_path / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    err = capsys.readouterr().err
    assert "-DP per observer" in err
    # two observers at ε 1: the noise is far above the map's mean, and the user is told so
    assert "streamdp: warning: the heatmap is mostly noise" in err and "with 2 observers" in err
    assert not list(tmp_path.glob("*.partial"))


def test_heatmap_picture_names_its_axes_units_and_privacy(tmp_path, monkeypatch):
    import matplotlib.figure

    from streamdp.cli import heatmap

    seen = {}
    savefig = matplotlib.figure.Figure.savefig

    def spy(fig, *args, **kwargs):
        ax, bar = fig.axes
        seen.update(title=ax.get_title(), x=ax.get_xlabel(), y=ax.get_ylabel(), bar=bar.get_ylabel())
        return savefig(fig, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", spy)
    rec = write_capture_recording(generate(duration=40.0, seed=2).recording, tmp_path / "rec")
    assert main(["heatmap", str(rec), "--out", str(tmp_path / "m.npy"), "--shape", "6x8", "--seed", "0"]) == 0
    assert seen["title"] == "heatmap-gaussian: ε 1, δ 1e-05, cap m = 1, 1 observer"
    assert seen["x"].startswith("scene x (normalized") and seen["y"].startswith("scene y (normalized")
    assert seen["bar"] == "fixations per observer (noisy: may be negative)"
    assert heatmap.parse_shape("48X64") == (48, 64)


# ---------------------------------------------------------------- options from one configuration

#: what each command's table (READS) must hold at least, and must not: the groups of the pipeline
#: it builds, and what it has no use for
TABLES = {
    "features": (("features",), ("mechanism", "epsilon", "reorder_window", "gaze_channel")),
    "demo": (("privacy", "features", "gaze", "live"), ()),
    "relay": (("privacy", "features", "gaze", "live"), ()),
    "replay": (("privacy", "features", "gaze"), ("reorder_window", "deadline_slack")),
    "evaluate": (("features",), ("identity", "ledger_dir", "reorder_window", "gaze_channel")),
    "audit": (("gaze",), ("unit", "budget", "w", "identity", "ledger_dir", "gaze_channel", "window")),
    "heatmap": ((), ("window", "step", "chunk_length", "diameter_unit", "mechanism", "epsilon", "seed")),
    "doctor": ((), ("epsilon", "window", "reorder_window", "gaze_channel")),
}


def _help(command: str, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", sorted(TABLES))
def test_each_command_offers_the_fields_of_its_table_and_no_other(command, capsys):
    table = readers()[command]
    groups, never = TABLES[command]
    for group in groups:
        for f in config_fields(group):
            if command != "audit" or f.name != "gaze_channel":
                assert f.name in table, f"{command} does not read {f.name} ({group})"
    assert not set(never) & set(table), set(never) & set(table)
    text = set(re.findall(r"--[a-z0-9-]+", _help(command, capsys)))
    for f in dataclasses.fields(SessionConfig):
        own = (command, f.name) in OWN_OPTIONS
        assert (option_name(f.name) in text) == (f.name in table or own), f"{command} {option_name(f.name)}"


@pytest.mark.parametrize("command", ["features", "demo", "relay", "replay"])
def test_the_options_of_a_pipeline_command_build_the_configuration(command):
    required = {"features": ["--out", "x.csv"], "replay": ["rec", "--out", "out"]}.get(command, [])
    parser = build_parser()
    assert config_from(parser.parse_args([command, *required])) == SessionConfig()
    given = ["--max-dispersion", "1.5", "--diameter-unit", "px", "--camera", "neon", "--max-fixation-duration", "2"]
    want = {"max_dispersion": 1.5, "diameter_unit": "px", "camera": "neon", "max_fixation_duration": 2.0}
    if command != "features":
        given += ["--k", "private", "--chunk-length", "32", "--bounds", "b.toml"]
        want |= {"k": "private", "chunk_length": 32, "bounds": "b.toml"}
    assert config_from(parser.parse_args([command, *required, *given])) == SessionConfig(**want)


@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_evaluate_and_audit_take_their_options_from_the_configuration(command):
    parser = build_parser()
    given = ["--bounds", "b.toml", "--transform", "dct", "--k", "private"]
    want = {"bounds": "b.toml", "transform": "dct", "k": "private", "seed": 0}
    if command == "audit":
        want["chunk_length"] = 32  # the audit's own default, as before
    else:
        given += ["--max-dispersion", "1.5", "--camera", "neon", "--unit", "session", "--budget", "9"]
        want |= {"max_dispersion": 1.5, "camera": "neon", "unit": "session", "budget": 9.0}
    assert config_from(parser.parse_args([command, *given, "--seed", "4"])) == SessionConfig(**{**want, "seed": 4})
    assert config_from(parser.parse_args([command, *given])) == SessionConfig(**want)


def test_audit_gives_each_mechanism_the_parameters_it_takes():
    from streamdp.cli.audit import audited_configs

    args = build_parser().parse_args(["audit", "--mechanisms", "lpa", "dcfpa", "--k", "2", "--transform", "dct"])
    configs = audited_configs(config_from(args), args)
    got = [(c.mechanism, c.transform, c.k, c.sensitivity) for c in configs]
    assert got == [("lpa", None, None, None)] + [("dcfpa", "dct", 2, s) for s in ("bound", "tight", "reachable")]
    assert all(c.chunk_length == 32 and c.seed == 0 for c in configs)
    # without --k: the public default and a privately chosen k are both audited
    args = build_parser().parse_args(["audit", "--mechanisms", "cfpa", "--transforms", "dft", "--sensitivity", "bound"])
    assert [c.k for c in audited_configs(config_from(args), args)] == [None, "private"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--mechanisms", "lpa", "steil", "--k", "2"], "--k applies to none of the audited", id="k"),
        pytest.param(["--mechanism", "lpa", "--mechanisms", "cfpa"], "give --mechanism or --mechanisms", id="both"),
        pytest.param(["--mechanisms", "lpa", "--bounds", "missing.toml"], "missing.toml", id="bounds"),
        pytest.param(["--mechanisms", "lpa", "--sensitivities", "tight"], "--sensitivity applies to none", id="sens"),
    ],
)
def test_audit_refuses_options_that_do_not_fit(argv, message, capsys):
    assert main(["audit", "--runs", "200", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_field_added_to_the_configuration_becomes_an_option_with_no_cli_edit():
    @dataclasses.dataclass(frozen=True)
    class Extended(SessionConfig):
        smoothing: float | None = dataclasses.field(
            default=None, metadata={"help": "gaze smoothing in s", "group": "features"}
        )
        merge_blinks: bool = dataclasses.field(default=False, metadata={"help": "merge", "group": "features"})

    parser = argparse.ArgumentParser()
    add_config_options(parser, ["features"], config_type=Extended)
    cfg = config_from(parser.parse_args(["--smoothing", "0.02", "--merge-blinks", "--window", "20"]))
    assert cfg == Extended(smoothing=0.02, merge_blinks=True, window=20.0)
    assert config_from(parser.parse_args([])) == Extended()


def _neon_cloud_export(folder: Path, seconds: float = 75.0) -> Path:
    """Synthetic gaze written as a Pupil Cloud export of a Neon (scene camera 1600 × 1200 px)."""
    gaze = generate(duration=seconds, rate=200.0, seed=4, fov_deg=CAMERA_FOV_DEG["neon"]).recording.gaze
    folder.mkdir()
    lines = ["section id,recording id,timestamp [ns],gaze x [px],gaze y [px],worn"]
    px, py = gaze.x * 1600.0, (1.0 - gaze.y) * 1200.0
    for t, x, y in zip(gaze.t.tolist(), px.tolist(), py.tolist(), strict=True):
        lines.append(f"s,r,{round(t * 1e9)},{x!r},{y!r},1".replace("nan", ""))  # a missing sample: empty cells
    (folder / "gaze.csv").write_text("\n".join(lines) + "\n")
    return folder


def test_features_of_a_neon_recording_use_its_camera_unless_camera_is_given(tmp_path):
    from streamdp.readers import read_recording

    folder = _neon_cloud_export(tmp_path / "neon_export")
    rec = read_recording(folder)
    assert rec.camera == "neon"
    for extra, camera in (([], "neon"), (["--camera", "pupil_core_720p"], "pupil_core_720p")):
        out = tmp_path / f"{camera}.npz"
        assert main(["features", str(folder), "--out", str(out), *extra]) == 0
        want = SessionConfig(camera=camera).feature_pipeline().run(rec)
        with np.load(out) as z:
            np.testing.assert_array_equal(z["values"], want.values)
    with np.load(tmp_path / "neon.npz") as neon, np.load(tmp_path / "pupil_core_720p.npz") as core:
        amplitude = FEATURE_NAMES.index("saccade_amplitude_mean")
        assert not np.allclose(neon["values"][:, amplitude], core["values"][:, amplitude])


# ---------------------------------------------------------------- one formatter, extras by use


@pytest.mark.parametrize("as_json", [False, True], ids=["sentences", "json"])
def test_subscribe_prints_a_published_chunk_as_the_in_process_formatter_does_and_no_status(capsys, as_json):
    import json

    from streamdp.network.sink import ReleasePublisher, StatusPublisher
    from streamdp.session import Session

    publisher = ReleasePublisher("tcp://127.0.0.1:0", publish_reproducible_noise_not_private=True)
    status_socket = StatusPublisher("tcp://127.0.0.1:0")
    codes: list[int] = []
    argv = ["subscribe", publisher.endpoint, "--count", "1", "--timeout", "10", *(["--json"] if as_json else [])]
    reader = threading.Thread(target=lambda: codes.append(main(argv)))
    reader.start()
    try:
        assert publisher.wait_for_subscribers(2, timeout=10.0)
        session = Session(SessionConfig(chunk_length=32, seed=2), sinks=[publisher, status_socket])
        # the status goes to the owner's socket only: had it reached the sanitized one, the
        # subscriber would print it first and stop there (--count 1)
        session.publish_status()
        releases = session.run(generate(duration=60.0, seed=1).recording)
        reader.join(15)
    finally:
        publisher.close()
        status_socket.close()
    assert codes == [0] and len(releases) == 1
    out = capsys.readouterr().out
    if as_json:  # one object per line: the message as published
        (got,) = [json.loads(line) for line in out.splitlines()]
        message = releases[0].to_message()
        assert got["ledger"] == message["ledger"] and got["values"] == np.asarray(message["values"]).tolist()
    else:
        assert out.splitlines() == format_chunk(releases[0].to_message()).splitlines()


def test_subscribe_prints_the_owners_status_socket_as_the_in_process_formatter_does(capsys):
    from streamdp.network.sink import StatusPublisher
    from streamdp.status import SessionStatus, StatusEvent

    status_socket = StatusPublisher("tcp://127.0.0.1:0")
    status = SessionStatus(mechanism="dcfpa", received=10, invalid=2, released=1, epsilon_spent=10.0,
                           clipped_fraction=0.25, event=StatusEvent.RUNNING)  # fmt: skip
    codes: list[int] = []
    argv = ["subscribe", status_socket.endpoint, "--count", "1", "--timeout", "10"]
    reader = threading.Thread(target=lambda: codes.append(main(argv)))
    reader.start()
    try:
        # a PUB socket drops what it sends before the subscription arrives: send until one lands
        for _ in range(200):
            status_socket.publish_status(status)
            reader.join(0.05)
            if not reader.is_alive():
                break
    finally:
        status_socket.close()
    reader.join(15)
    assert codes == [0]
    assert capsys.readouterr().out.splitlines() == [format_status(status)]


@pytest.mark.parametrize(
    ("argv", "missing", "extra"),
    [
        (["evaluate", "--people", "2"], "sklearn", "evaluate"),
        (["heatmap", "rec", "--out", "map.npy"], "matplotlib", "plot"),
    ],
)
def test_a_command_whose_extra_is_missing_says_which_to_install(tmp_path, monkeypatch, capsys, argv, missing, extra):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed: importing it raises ImportError
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"streamdp {argv[0]} needs the optional extra: pip install 'streamdp[{extra}]'"
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- conventions of every command


def _options(parser: argparse.ArgumentParser):
    for action in parser._actions:  # the parser's own record of its options: what --help prints
        if action.option_strings and not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
            yield action


def test_every_option_of_every_command_has_help_that_shows_its_default():
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) == {c.__name__.rsplit(".", 1)[1].replace("_", "-") for c in COMMANDS}
    for name, sub in commands.items():
        formatter = sub._get_formatter()
        for action in _options(sub):
            option = action.option_strings[-1]
            text = formatter._expand_help(action)  # the text --help prints for it
            assert text, f"{name} {option} has no help"
            if action.nargs != 0 and not action.required and action.dest not in ("verbose_after", "quiet_after"):
                assert "default" in text, f"{name} {option}: no default in {text!r}"


@pytest.mark.parametrize("place", ["before", "after"])
def test_verbosity_is_accepted_before_and_after_the_command(capsys, place):
    argv = ["demo", "--offline", "--seed", "1", "--seconds", "100"]
    assert main(["-q", *argv] if place == "before" else [*argv, "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.startswith("chunk 0: ")
    assert main(["-v", *argv] if place == "before" else [*argv, "--verbose"]) == 0
    assert "streamdp demo: 1 sanitized chunk released" in capsys.readouterr().err


def test_version_is_printed_and_logs_are_short(capsys):
    import streamdp

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and capsys.readouterr().out == f"streamdp {streamdp.__version__}\n"
    argv = ["demo", "--offline", "--seconds", "150", "--unit", "session", "--budget", "15", "--seed", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err.splitlines()
    assert [line for line in err if line.startswith("streamdp: ")] == [
        "streamdp: warning: session budget ε = 15 is used up: ε 10 spent by 1 chunk leaves 5, less than the 10 the "
        "next chunk needs: nothing more is released"
    ]


@pytest.mark.parametrize("command", ["demo", "relay", "replay", "evaluate"])
def test_a_toml_config_file_gives_the_configuration_and_options_given_override_it(tmp_path, command):
    path = tmp_path / "session.toml"
    path.write_text(SessionConfig(epsilon=0.5, chunk_length=32, unit="session", budget=500.0, window=20.0).to_toml())
    required = {"replay": ["rec", "--out", "out"]}.get(command, [])
    parser = build_parser()
    from_file = config_from(parser.parse_args([command, *required, "--config", str(path)]))
    assert (from_file.epsilon, from_file.chunk_length, from_file.unit, from_file.budget) == (0.5, 32, "session", 500.0)
    assert from_file.window == 20.0
    # an option on the command line wins, even when it names the default value
    argv = [command, *required, "--config", str(path), "--epsilon", "2", "--chunk-length", "64", "--window", "30"]
    over = config_from(parser.parse_args(argv))
    assert (over.epsilon, over.chunk_length, over.window, over.budget) == (2.0, 64, 30.0, 500.0)
    assert over == SessionConfig(**{**from_file.describe(), "epsilon": 2.0, "chunk_length": 64, "window": 30.0})


def test_a_config_file_runs_the_demo_and_its_mistakes_are_named(tmp_path, capsys):
    good = tmp_path / "good.toml"
    good.write_text('mechanism = "lpa"\nchunk_length = 32\nseed = 4\n')
    assert main(["demo", "--offline", "--seconds", "100", "--config", str(good)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("chunk 0: streamdp.features.lpa, t ") and "(32 steps)" in out
    bad = tmp_path / "bad.toml"
    bad.write_text("epsilom = 2\n")
    assert main(["demo", "--offline", "--config", str(bad)]) == 2
    assert capsys.readouterr().err == f"streamdp demo: error: {bad}: unknown key 'epsilom' (did you mean 'epsilon'?)\n"
