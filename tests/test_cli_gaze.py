"""The real-time gaze channel's user-facing parts (issue #20): the ``--gaze-*`` options of relay,
demo and replay, replay's gaze files, subscribe's and demo's lines, and the app client."""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path

import msgpack
import numpy as np
import pytest
import zmq

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.network.gaze_client import gaze_tick_batches, gaze_ticks
from streamdp.network.sink import ReleasePublisher
from streamdp.offline import replay as replay_mod
from streamdp.offline.gaze_outputs import GAZE_HEADER
from streamdp.offline.outputs import ReleaseFiles
from streamdp.offline.replay import replay
from streamdp.readers import read_recording
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

from .live_harness import live
from .recording_files import write_capture_recording

GAZE_OPTIONS = ("--gaze-channel", "--no-gaze-channel", "--gaze-mechanism", "--gaze-epsilon", "--gaze-w", "--gaze-rate")
#: 60 s of gaze: one chunk of 32 steps, 3601 ticks at 60 Hz
SECONDS = 60.0


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> str:
    rec = generate(duration=SECONDS, rate=200.0, seed=5).recording
    return str(write_capture_recording(rec, tmp_path_factory.mktemp("recs") / "rec0"))


@pytest.fixture(scope="module")
def replayed(recording, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("replay") / "out"
    argv = ["replay", recording, "--out", str(out), "--gaze-channel", "--seed", "7", "--chunk-length", "32", "-q"]
    assert main(argv) == 0
    return out


def _messages(path: Path) -> list[dict]:
    with open(path, "rb") as fh:
        return list(msgpack.Unpacker(fh, raw=False, strict_map_key=False))


# ---------------------------------------------------------------- replay


def test_replay_with_the_gaze_channel_writes_the_ticks_as_messages_and_csv_rows(replayed):
    suffixes = [".csv", ".ledger.json", ".msgpack", ".gaze.csv", ".gaze.msgpack"]
    suffixes += [".parquet"] if (replayed / "rec0.parquet").exists() else []
    assert sorted(p.name for p in replayed.iterdir() if p.name.startswith("rec0.")) == sorted(
        f"rec0{s}" for s in suffixes
    )
    assert not list(replayed.parent.rglob("*.partial"))
    messages = _messages(replayed / "rec0.gaze.msgpack")
    assert len(messages) == 3601
    assert {m["topic"] for m in messages} == {"streamdp.gaze.geo-uniform"}
    assert all(m["names"] == ["x_deg", "y_deg", "x_norm", "y_norm"] and len(m["values"]) == 1 for m in messages)
    with open(replayed / "rec0.gaze.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == GAZE_HEADER
    table = np.array(rows[1:], dtype=np.float64)
    want = np.array(
        [
            [m["ledger"]["tick_index"], m["t"][0], *m["values"][0], m["ledger"]["epsilon_tick_per_degree"]]
            for m in messages
        ]
    )
    assert np.array_equal(table, want)  # %.17g: every bit
    t = table[:, 1]
    assert np.array_equal(table[:, 0], np.arange(len(t)))
    assert np.array_equal(t, np.round(t * 60) / 60) and np.array_equal(np.diff(np.round(t * 60)), np.ones(len(t) - 1))
    # the chunks are those of a replay without the channel (its noise is a stream of its own)
    assert len(_messages(replayed / "rec0.msgpack")) == 1


def test_replay_ledger_states_the_gaze_channels_guarantee_and_spend(replayed):
    ledger = json.loads((replayed / "rec0.ledger.json").read_text())
    gaze = ledger["gaze_channel"]
    stated = (gaze["mechanism"], gaze["epsilon_w_per_degree"], gaze["w"], gaze["rate_hz"])
    assert stated == ("geo-uniform", 20.0, 60, 60.0)
    assert gaze["ticks"] == 3601 and gaze["epsilon_spent_per_degree"] == pytest.approx(3601.0 / 3)
    assert gaze["topic"] == "streamdp.gaze.geo-uniform" and "not where in the scene" in gaze["guarantee"]
    assert ledger["config"]["gaze_channel"] is True and ledger["config"]["seed"] is None
    summary = json.loads((replayed / "replay.json").read_text())
    assert summary["recordings"][0]["ticks"] == 3601


def test_replay_gaze_files_are_the_same_read_whole_or_streamed_and_the_relays_ticks(recording, replayed, tmp_path,
                                                                                    monkeypatch):  # fmt: skip
    # the relay's ticks wait for every datum of Capture's bursts (monocular gaze up to 90 ms late):
    # then they equal the replay's, which reads the recording in order
    config = SessionConfig(chunk_length=32, seed=7, gaze_channel=True, reorder_window=0.1)
    monkeypatch.setattr(replay_mod, "streamable", lambda path: None)  # read whole
    (result,) = replay([recording], tmp_path / "whole", config, jobs=1, progress=False)
    assert result.ticks == 3601
    for name in ("rec0.gaze.csv", "rec0.gaze.msgpack"):
        assert (tmp_path / "whole" / name).read_bytes() == (replayed / name).read_bytes()
    # the relay, with the seed replay gave this recording, on the same gaze through Capture's API
    packed = [msgpack.packb(m, use_bin_type=True) for m in _messages(replayed / "rec0.gaze.msgpack")]
    payloads = []
    with live(read_recording(recording), config, seed=7) as (_, _, sub):
        while len(payloads) < len(packed) - 12 and sub.poll(10_000):  # it holds back its last 0.15 s
            topic, payload = sub.recv_multipart()
            if topic.startswith(b"streamdp.gaze."):
                payloads.append(payload)
    assert payloads == packed[: len(payloads)] and len(payloads) >= len(packed) - 12


def test_replay_without_the_channel_writes_no_gaze_files_and_a_chunk_sink_refuses_ticks(tmp_path):
    rec = generate(duration=5.0, seed=1).recording
    channel = SessionConfig(seed=0, gaze_channel=True).gaze_channel_for()
    assert channel is not None
    tick = channel.update(rec.gaze)[0]
    files = ReleaseFiles.for_recording(tmp_path, "r", "r", SessionConfig(), "private")
    assert not files.accepts_gaze
    with pytest.raises(ValueError, match="without the gaze channel"):
        files.publish(tick)
    files.discard()
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- options


@pytest.mark.parametrize("command", ["relay", "demo", "replay"])
def test_relay_demo_and_replay_list_the_gaze_options(capsys, command):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert all(option in out for option in GAZE_OPTIONS), out


@pytest.mark.parametrize(
    ("bad", "option"),
    [
        (["--gaze-rate", "0"], "--gaze-rate"),
        (["--gaze-w", "0"], "--gaze-w"),
        (["--gaze-epsilon", "-1"], "--gaze-epsilon"),
        (["--gaze-mechanism", "nope"], "--gaze-mechanism"),
        (["--gaze-epsilon", "1e-300"], "--gaze-epsilon"),
        (["--no-gaze-channel", "--gaze-w", "30"], "--gaze-w"),  # an option that would change nothing
    ],
)
@pytest.mark.parametrize("command", ["relay", "demo", "replay"])
def test_bad_gaze_options_are_refused_in_one_line_naming_the_option(tmp_path, capsys, command, bad, option):
    required = {"replay": [str(tmp_path / "rec"), "--out", str(tmp_path / "out")], "demo": ["--offline"]}
    channel = [] if "--no-gaze-channel" in bad else ["--gaze-channel"]
    try:
        code = main([command, *required.get(command, []), *channel, *bad])
    except SystemExit as exc:  # argparse's own refusal (a choice)
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and option in err[0] and "Traceback" not in err[0], err
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------- demo


@pytest.mark.parametrize("where", ["--offline", "--networked"])
def test_demo_with_the_gaze_channel_prints_the_chunks_then_one_line_about_the_channel(capsys, where):
    argv = ["demo", "--seed", "3", "--seconds", str(SECONDS), "--chunk-length", "32", "-q"]
    argv += ["--offline"] if where == "--offline" else []
    assert main([*argv, "--gaze-channel"]) == 0
    with_gaze = capsys.readouterr().out.splitlines()
    summary = with_gaze[-1]
    assert summary.startswith("gaze channel: ") and "ticks received on streamdp.gaze.geo-uniform at 60 Hz" in summary
    assert "ε 20 per degree of gaze displacement (|dx| + |dy|) over any 60 consecutive ticks (1 s)" in summary
    assert "0.333333 per degree per tick" in summary and "not where in the scene the user looks" in summary
    assert "noise reproducible, not private" in summary
    ticks = int(summary.split()[2])
    assert ticks == 3601 if where == "--offline" else 1000 < ticks <= 3601
    # the chunks are those without the channel: its noise is a stream of its own
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines() == with_gaze[:-1]


def test_demo_json_keeps_stdout_for_the_chunks_and_says_the_channel_on_stderr(capsys):
    argv = ["demo", "--offline", "--seed", "3", "--seconds", str(SECONDS), "--chunk-length", "32", "--json"]
    assert main([*argv, "--gaze-channel"]) == 0
    captured = capsys.readouterr()
    assert [json.loads(line)["topic"] for line in captured.out.splitlines()] == ["streamdp.features.dcfpa"]
    assert "streamdp demo: gaze channel: 3601 ticks received" in captured.err


# ---------------------------------------------------------------- subscribe


def _subscribed(argv: list[str], topics: int, config: SessionConfig, seconds: float = 3.0):
    """Run ``streamdp subscribe`` in a thread on a publisher, publish a recording's releases once
    it subscribed to ``topics`` prefixes (and the status), and return its exit code and the ticks."""
    publisher = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=0, publish_reproducible_noise_not_private=True)
    codes: list[int] = []
    reader = threading.Thread(target=lambda: codes.append(main(["subscribe", publisher.endpoint, *argv])))
    reader.start()
    sink = CollectingSink(accepts_gaze=True)
    try:
        assert publisher.wait_for_subscribers(topics + 1, timeout=10.0)
        rec = generate(duration=seconds, seed=1).recording
        Session.for_recording(config, rec, sinks=[publisher, sink]).run(rec)
        reader.join(15)
    finally:
        publisher.close()
    return codes, sink


def test_subscribe_prints_a_line_a_second_and_the_guarantee_once(capsys):
    config = SessionConfig(seed=0, gaze_channel=True)
    codes, sink = _subscribed(["--gaze-only", "--timeout", "5"], 1, config)
    assert codes == [0] and len(sink.ticks) == 181
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("gaze channel streamdp.gaze.geo-uniform, protected: metric privacy, ε_w ")
    assert lines[0].endswith("(the guarantee in full: -v, or docs/gaze-channel.md)") and len(lines[0]) < 200
    assert len(lines) == 5 and sum(line.startswith("gaze channel ") for line in lines) == 1
    seconds = lines[1:]
    last = sink.ticks[-1]
    x, y = last.values[0, :2]
    assert seconds[0].startswith("gaze t 1000–1001 s: 60 ticks, last at x ")
    assert seconds[-1] == (
        f"gaze t 1003–1004 s: 1 tick, last at x {x:.2f}°, y {y:.2f}° ({last.values[0, 2]:.3f}, "
        f"{last.values[0, 3]:.3f} of the scene), ε 0.333 per degree per tick"
    )


def test_subscribe_json_prints_each_tick_as_published_and_features_only_leaves_them_out(capsys):
    config = SessionConfig(seed=0, gaze_channel=True)
    codes, sink = _subscribed(["--json", "--count", "5", "--timeout", "5"], 2, config)
    assert codes == [0]
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert got == [json.loads(json.dumps(t.to_message())) for t in sink.ticks[:5]]
    codes, _ = _subscribed(["--features-only", "--timeout", "0.3"], 1, config)
    captured = capsys.readouterr()
    assert codes == [1] and captured.out == ""  # 3 s of gaze fill no chunk: nothing arrived
    assert "nothing arrived within 0.3 s" in captured.err


def test_subscribe_refuses_a_topic_with_a_channel_choice(capsys):
    assert main(["subscribe", "tcp://127.0.0.1:5570", "--topic", "streamdp.gaze.", "--gaze-only"]) == 2
    assert "--topic" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["subscribe", "tcp://127.0.0.1:5570", "--gaze-only", "--features-only"])


# ---------------------------------------------------------------- the app client


def test_the_app_client_yields_the_ticks_a_session_publishes_as_arrays():
    publisher = ReleasePublisher("tcp://127.0.0.1:0", sndhwm=0, publish_reproducible_noise_not_private=True)
    ticks = gaze_ticks(publisher.endpoint, timeout=0.5)
    batches = gaze_tick_batches(publisher.endpoint, timeout=0.5)
    sink = CollectingSink(accepts_gaze=True)
    try:
        assert publisher.wait_for_subscribers(2, timeout=10.0)
        rec = generate(duration=2.0, seed=1).recording
        Session.for_recording(SessionConfig(seed=0, gaze_channel=True), rec, sinks=[publisher, sink]).run(rec)
        got = list(ticks)  # ends 0.5 s after the last
        in_batches = list(batches)
    finally:
        publisher.close()
    assert len(got) == len(sink.ticks) == 121
    for tick, release in zip(got, sink.ticks, strict=True):
        assert tick.t == release.t[0] and tick.tick_index == release.ledger["tick_index"]
        assert np.array_equal(tick.deg, release.values[0, :2]) and np.array_equal(tick.norm, release.values[0, 2:])
        assert tick.epsilon_tick_per_degree == release.ledger["epsilon_tick_per_degree"] == 1 / 3
    t = np.concatenate([b.t for b in in_batches])
    deg = np.concatenate([b.deg for b in in_batches])
    assert t.shape == (121,) and deg.shape == (121, 2)
    assert np.array_equal(t, [k.t for k in got]) and np.array_equal(deg, [k.deg for k in got])
    assert np.array_equal(np.concatenate([b.tick_index for b in in_batches]), np.arange(121))


def test_the_app_client_refuses_a_message_that_is_not_a_tick():
    ctx = zmq.Context.instance()
    pub = ctx.socket(zmq.XPUB)
    pub.linger = 0
    port = pub.bind_to_random_port("tcp://127.0.0.1")
    ticks = gaze_ticks(f"tcp://127.0.0.1:{port}", timeout=5.0)
    try:
        poller = zmq.Poller()
        poller.register(pub, zmq.POLLIN)
        assert poller.poll(5000) and pub.recv()[:1] == b"\x01"  # the client subscribed
        chunk_like = {"names": ["fixation_rate"], "t": [1.0], "values": [[3.0]], "ledger": {}}
        pub.send_multipart([b"streamdp.gaze.geo-uniform", msgpack.packb(chunk_like)])
        with pytest.raises(InputError, match="not a gaze tick: its names are"):
            next(ticks)
    finally:
        ticks.close()
        pub.close(linger=0)
    with pytest.raises(ValueError, match="timeout"):
        gaze_ticks("tcp://127.0.0.1:5570", timeout=0)
