"""Replay and evaluation: files, seeds, executors, refusal and interruption, split logic."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp import InputError, StreamdpError
from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.offline.classify import label_utility
from streamdp.offline.evaluate import (
    EVALUATE_MECHANISMS,
    LabelledRecording,
    feature_signals,
    grid_config,
    lopo_splits,
    make_classifier,
    read_manifest,
    sanitize,
)
from streamdp.offline.replay import ReplayConfig, replay
from streamdp.privacy.mechanisms import MECHANISMS, OFFLINE_MECHANISMS
from streamdp.readers import read_recording
from streamdp.schema import FEATURE_NAMES
from streamdp.session import Session
from streamdp.sinks import CollectingSink
from streamdp.synthetic import generate

from .live_harness import live
from .recording_files import write_capture_recording


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    base = tmp_path_factory.mktemp("recs")
    out = []
    for i, seconds in enumerate((100.0, 80.0, 45.0)):  # the last is shorter than one chunk of 32
        rec = generate(duration=seconds, rate=200.0, seed=20 + i, person=i).recording
        out.append(str(write_capture_recording(rec, base / f"rec{i}")))
    return out


CONFIG = ReplayConfig(chunk_length=32, seed=11)


def test_replay_writes_csv_parquet_ledger_and_messages_per_recording(tmp_path, recordings):
    results = replay(recordings, tmp_path / "out", CONFIG, jobs=1, progress=False)
    out = tmp_path / "out"
    assert [r.chunks for r in results] == [3, 2, 0]  # slots of the public grid with full windows
    assert "shorter than one chunk" in results[2].skipped
    assert [r.seed for r in results] == [11, 12, 13]
    header = (out / "rec0.csv").read_text().splitlines()[0].split(",")
    assert header == ["chunk_index", "t", *FEATURE_NAMES]
    table = np.loadtxt(out / "rec0.csv", delimiter=",", skiprows=1)
    assert table.shape == (3 * 32, 54)
    np.testing.assert_array_equal(table[:, 1] % 16.0, np.tile(np.arange(32) * 0.5, 3))  # t on the grid
    ledger = json.loads((out / "rec0.ledger.json").read_text())
    assert len(ledger["chunks"]) == 3 and ledger["chunks"][2]["epsilon_spent"] == 3 * 10.0
    # seeded noise is said to be so, and the seed is never written beside the data
    assert ledger["noise"] == "reproducible, not private" and "seed" not in ledger
    assert all(c["generator"] == "reproducible, not private" and "clipped_fraction" not in c for c in ledger["chunks"])
    for f in out.glob("*.json"):
        assert '"seed": 1' not in f.read_text() and '"seed": null' in f.read_text()
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    parquet = pq.read_table(out / "rec0.parquet")
    assert parquet.column_names == header
    np.testing.assert_array_equal(np.column_stack([c.to_numpy() for c in parquet.columns]), table)
    assert not list(tmp_path.glob(".out.partial-*")) and not list(out.glob("*.partial"))


def test_replay_gives_the_bytes_the_relay_publishes(tmp_path, recordings):
    replay(recordings[:1], tmp_path / "out", CONFIG, jobs=1, progress=False)
    with open(tmp_path / "out" / "rec0.msgpack", "rb") as fh:
        stored = list(msgpack.Unpacker(fh, raw=False))
    packed = [msgpack.packb(m, use_bin_type=True) for m in stored]
    # the relay, with the seed replay gave this recording, on the same gaze through Capture's API
    payloads = []
    with live(read_recording(recordings[0]), CONFIG, seed=11) as (_, _, sub):
        while len(payloads) < len(packed) - 1 and sub.poll(10_000):
            topic, payload = sub.recv_multipart()
            if topic.startswith(b"streamdp.features."):
                payloads.append(payload)
    assert len(payloads) >= len(packed) - 1 >= 2  # the relay holds back its last 50 ms
    assert payloads == packed[: len(payloads)]


def test_replay_ledger_states_the_session_configuration(tmp_path, recordings):
    replay(recordings[:1], tmp_path / "out", CONFIG, jobs=1, progress=False)
    ledger = json.loads((tmp_path / "out" / "rec0.ledger.json").read_text())
    summary = json.loads((tmp_path / "out" / "replay.json").read_text())
    shared = json.loads(json.dumps(dataclasses.replace(CONFIG, seed=None).describe()))
    assert ledger["config"] == summary["config"] == shared
    assert ledger["config"]["chunk_length"] == 32 and ledger["config"]["camera"] == "auto"
    assert ledger["config"]["seed"] is None and summary["noise"] == "reproducible, not private"


def test_replay_writes_neither_the_identity_nor_the_ledger_folder(tmp_path, recordings):
    config = ReplayConfig(chunk_length=32, unit="session", budget=1000.0, identity="alice@headset1",
                          ledger_dir=str(tmp_path / "ledgers"))  # fmt: skip
    replay(recordings[:1], tmp_path / "out", config, jobs=1, progress=False)
    for f in (tmp_path / "out").glob("*.json"):
        text = f.read_text()
        assert "alice" not in text and str(tmp_path / "ledgers") not in text and '"seed": null' in text
    summary = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert summary["noise"] == "private (OS entropy)"


def test_replay_runs_without_tqdm(tmp_path, recordings, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # an absent optional extra: importing it fails
    results = replay(recordings[:1], tmp_path / "out", CONFIG, jobs=1, progress=True)
    assert results[0].chunks == 3


def test_the_offline_modules_import_no_optional_extra():
    code = (
        "import sys, streamdp.offline.replay, streamdp.offline.evaluate; "
        "print(sorted(m for m in ('sklearn', 'matplotlib', 'tqdm', 'pandas', 'distributed') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_replay_is_reproducible_and_recordings_never_share_noise(tmp_path, recordings):
    replay(recordings[:2], tmp_path / "a", CONFIG, jobs=1, progress=False)
    replay(recordings[:2], tmp_path / "b", CONFIG, jobs=2, progress=False)
    for name in ("rec0", "rec1"):
        assert (tmp_path / "a" / f"{name}.msgpack").read_bytes() == (tmp_path / "b" / f"{name}.msgpack").read_bytes()
    # the same recording under two seeds gets different noise
    replay(recordings[:1], tmp_path / "c", ReplayConfig(chunk_length=32, seed=12), jobs=1, progress=False)
    assert (tmp_path / "a" / "rec0.msgpack").read_bytes() != (tmp_path / "c" / "rec0.msgpack").read_bytes()


def test_dask_local_cluster_gives_the_same_files(tmp_path, recordings):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        replay(recordings, tmp_path / "dask", CONFIG, executor="dask", scheduler=cluster, progress=False)
    replay(recordings, tmp_path / "local", CONFIG, jobs=1, progress=False)
    for name in ("rec0", "rec1"):
        assert (tmp_path / "dask" / f"{name}.msgpack").read_bytes() == (
            tmp_path / "local" / f"{name}.msgpack"
        ).read_bytes()


def test_existing_output_is_refused_unless_overwrite(tmp_path, recordings):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(StreamdpError, match="exists; pass --overwrite"):
        replay(recordings[:1], out, CONFIG, jobs=1, progress=False)
    assert (out / "keep.txt").exists()
    replay(recordings[:1], out, CONFIG, jobs=1, progress=False, overwrite=True)
    assert (out / "rec0.csv").exists() and not (out / "keep.txt").exists()


def test_unreadable_and_short_recordings_are_skipped_with_a_message_and_others_go_on(tmp_path, recordings, capsys):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "gaze.pldata").write_bytes(b"\x92\xa4gaze\xc4\x10truncated")
    code = main(
        [
            "replay",
            recordings[0],
            str(bad),
            recordings[2],
            "--out",
            str(tmp_path / "out"),
            "--chunk-length",
            "32",
            "--seed",
            "1",
            "--jobs",
            "1",
            "--quiet",
        ]
    )
    err = capsys.readouterr().err
    assert code == 0  # one recording written: 1 is for every recording skipped
    assert f"skipped {bad}: cannot read" in err and "truncated record 0 at byte 0" in err
    assert f"skipped {recordings[2]}: shorter than one chunk: 45.0 s of gaze gives 30 steps, a chunk needs 32" in err
    assert (tmp_path / "out" / "rec0.csv").exists()


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``, read from /proc (no psutil)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # the process ended while we looked
        if ppid == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def many_recordings(tmp_path_factory):
    base = tmp_path_factory.mktemp("many")
    rec = generate(duration=200.0, rate=200.0, seed=5).recording
    return [str(write_capture_recording(rec, base / f"r{i}")) for i in range(10)]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads worker processes from /proc")
@pytest.mark.parametrize(
    ("sig", "jobs"), [(signal.SIGTERM, 2), (signal.SIGINT, 2), (signal.SIGINT, 1)], ids=["term", "int", "int-1-job"]
)
def test_a_signal_to_replay_stops_its_workers_and_leaves_nothing_partial(tmp_path, many_recordings, sig, jobs):
    code, said = (143, "terminated") if sig == signal.SIGTERM else (130, "interrupted")
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamdp.cli", "replay", *many_recordings, "--out", str(out), f"--jobs={jobs}", "-q"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:  # signal it once workers are writing
        workers = _children(proc.pid)
        if len(workers) >= (jobs if jobs > 1 else 0) and list(tmp_path.glob(".out.partial-*/*.csv")):
            break
        time.sleep(0.02)  # polling /proc and the file system for the moment to signal
    assert proc.poll() is None, "replay finished before it could be signalled"
    assert len(workers) >= (jobs if jobs > 1 else 0)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert err.strip().splitlines() == [f"streamdp replay: {said}"]
    deadline = time.monotonic() + 10
    while any(_alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)  # the workers' exit is asynchronous to ours
    assert not [w for w in workers if _alive(w)], "orphaned worker processes"
    assert not out.exists() and not list(tmp_path.glob(".out.partial-*"))


def test_replay_with_every_recording_skipped_exits_1_and_writes_nothing(tmp_path, recordings, capsys):
    out = tmp_path / "out"
    code = main(["replay", recordings[2], str(tmp_path / "missing"), "--out", str(out), "--jobs", "1", "-q"])
    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err[-1] == f"streamdp replay: error: every recording was skipped (2 recordings); nothing written to {out}"
    assert not out.exists() and not list(tmp_path.glob(".out.partial-*"))


def test_replay_json_is_a_configuration_a_replay_reads_back(tmp_path, recordings, capsys):
    first, second, third = tmp_path / "first", tmp_path / "second", tmp_path / "third"
    argv = ["replay", recordings[1], "--jobs", "1", "-q"]
    assert main([*argv, "--out", str(first), "--chunk-length", "32", "--seed", "9", "--transform", "dct"]) == 0
    # the folder holds no seed: its configuration with the seed, kept apart, gives the same bytes
    assert main([*argv, "--out", str(second), "--config", str(first / "replay.json"), "--seed", "9"]) == 0
    assert (second / "rec1.msgpack").read_bytes() == (first / "rec1.msgpack").read_bytes()
    config = json.loads((second / "replay.json").read_text())["config"]
    assert SessionConfig.from_mapping(config) == SessionConfig(chunk_length=32, transform="dct")
    # and without the seed, fresh noise from the OS
    assert main([*argv, "--out", str(third), "--config", str(first / "replay.json")]) == 0
    assert (third / "rec1.msgpack").read_bytes() != (first / "rec1.msgpack").read_bytes()
    out = capsys.readouterr().out.splitlines()
    seeded = "noise reproducible, not private"
    assert out == [
        f"{recordings[1]}: 2 sanitized chunks ({noise}) → {d}/rec1.*"
        for d, noise in ((first, seeded), (second, seeded), (third, "noise private (OS entropy)"))
    ]


def test_replay_json_lines_are_the_results(tmp_path, recordings, capsys):
    argv = ["replay", *recordings[1:], "--out", str(tmp_path / "o"), "--seed", "2", "--chunk-length", "32"]
    assert main([*argv, "--json", "-q"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["name"], r["chunks"], r["noise"]) for r in lines] == [
        ("rec1", 2, "reproducible, not private"),
        ("rec2", 0, "reproducible, not private"),
    ]
    assert all("seed" not in r for r in lines)
    assert lines[1]["skipped"].startswith("shorter than one chunk")


# ---------------------------------------------------------------- evaluation


@pytest.fixture(scope="module")
def labelled():
    rec = generate(duration=80.0, rate=120.0, seed=3).recording
    # rows on the schedule of the chunk length sanitized below: a chunk's last step is computed
    # at that step with what is known, so rows scheduled for another n may differ there
    (lab,) = feature_signals([(rec, "P0", "reading")], SessionConfig(chunk_length=32))
    return rec, lab


def test_evaluate_offers_the_registered_mechanisms():
    assert EVALUATE_MECHANISMS == ("none", *MECHANISMS, *OFFLINE_MECHANISMS)
    with pytest.raises(ValueError, match=r"mechanism must be one of none, .*fpa, got 'dfcpa'"):
        sanitize([], "dfcpa", 1.0, 32, 0)


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
def test_sanitizing_is_the_session_core_chunk_by_chunk(labelled, mechanism):
    """Features computed once, then sanitized by the configuration's chunk privatizer: the same
    releases as a whole session on the recording with the same seed."""
    rec, lab = labelled
    (out,) = sanitize([lab], mechanism, 2.0, 32, seed=7)
    sink = CollectingSink()
    config = SessionConfig(mechanism=mechanism, epsilon=2.0, chunk_length=32)
    Session.for_recording(config, rec, sinks=[sink], seed=7).run(rec)
    np.testing.assert_array_equal(out.noisy, np.concatenate([r.values for r in sink.releases]))
    np.testing.assert_array_equal(out.t, np.concatenate([r.t for r in sink.releases]))
    # the clean rows are the recording's at the released steps: whole slots of the public grid
    np.testing.assert_array_equal(out.clean, lab.features[np.searchsorted(lab.t, out.t)])
    assert len(out.noisy) == 32 * len(sink.releases) > 0 and np.all(out.t[::32] % 16.0 == 0.0)


def test_no_noise_and_offline_fpa_take_the_same_chunked_steps(labelled):
    _, lab = labelled
    (none,) = sanitize([lab], "none", 0.0, 32, seed=0)
    (fpa,) = sanitize([lab], "fpa", 1.0, 32, seed=0)
    np.testing.assert_array_equal(none.noisy, none.clean)
    np.testing.assert_array_equal(fpa.clean, none.clean)
    assert fpa.noisy.shape == none.clean.shape and not np.array_equal(fpa.noisy, fpa.clean)


def test_a_chunk_never_spans_a_gap_in_the_steps():
    rng = np.random.default_rng(0)
    # two segments of 40 steps, each starting a slot of 32 steps on the grid (16 s)
    t = np.concatenate([np.arange(40) * 0.5, 96.0 + np.arange(40) * 0.5])
    lab = LabelledRecording("r", "P0", "read", rng.uniform(0, 1, (80, 52)), t)
    for mechanism in ("none", "dcfpa", "fpa"):
        (out,) = sanitize([lab], mechanism, 1.0, 32, seed=0)
        np.testing.assert_array_equal(out.clean, np.concatenate([lab.features[:32], lab.features[40:72]]))


def test_features_for_evaluation_are_the_session_cores(labelled):
    rec, lab = labelled
    want32 = Session.for_recording(SessionConfig(chunk_length=32), rec).feature_rows(rec)
    np.testing.assert_array_equal(lab.features, want32.values)
    # the session converts the diameter to the configured unit (here px, which a 3d recording lacks)
    (px,) = feature_signals([(rec, "P0", "reading")], SessionConfig(diameter_unit="px"))
    want = Session.for_recording(SessionConfig(diameter_unit="px"), rec).feature_rows(rec)
    np.testing.assert_array_equal(px.features, want.values)
    assert not np.array_equal(px.features, SessionConfig(diameter_unit="px").feature_pipeline().run(rec).values)
    # and refuses blinks "given" by a recording that has none
    no_blinks = dataclasses.replace(rec, blinks=None)
    with pytest.raises(InputError, match="blinks 'given', but the recording has no blink events"):
        feature_signals([(no_blinks, "P0", "reading")], SessionConfig(blinks="given"))


def test_offline_fpa_takes_the_configurations_parameters_and_refuses_what_it_does_not_take(labelled):
    _, lab = labelled
    config = SessionConfig(transform="dct", k=3)
    (out,) = sanitize([lab], "fpa", 52.0, 32, seed=4, config=config)
    # the grid's ε is a total: 52 over the 52 features is 1 each
    want = OFFLINE_MECHANISMS["fpa"](epsilon=1.0, bounds=config.bounds_profile(), transform="dct", k=3)
    np.testing.assert_array_equal(out.noisy, want.privatize(out.clean, config.rng(4)).values)
    with pytest.raises(TypeError, match="fpa does not take parameter 'sensitivity'"):
        sanitize([lab], "fpa", 1.0, 32, seed=4, config=SessionConfig(sensitivity="tight"))


def test_a_grid_point_is_the_configuration_with_its_mechanism_epsilon_and_chunk_length():
    base = SessionConfig(transform="dct", k=2, unit="session", budget=1e4, window=20.0)
    point = grid_config(base, "cfpa", 3.0, 16)
    assert point == dataclasses.replace(base, mechanism="cfpa", epsilon=3.0, chunk_length=16)
    with pytest.raises(TypeError, match="steil does not take parameter 'transform'"):
        grid_config(base, "steil", 3.0, 16)
    # no noise only marks the chunks: nothing of the mechanism or the budget is taken from it
    cut = grid_config(base, "none", 0.0, 16)
    assert (cut.chunk_length, cut.step, cut.unit, cut.budget, cut.window) == (16, 0.5, "chunk", None, 20.0)


def test_leave_one_person_out_never_trains_on_the_held_out_person():
    groups = ["a", "a", "b", "c", "b", "c"]
    splits = list(lopo_splits(groups))
    assert [p for p, _, _ in splits] == ["a", "b", "c"]
    for person, train, test in splits:
        assert set(train).isdisjoint(test) and len(train) + len(test) == 6
        assert all(groups[i] == person for i in test) and all(groups[i] != person for i in train)


def test_standardization_is_fitted_on_the_training_fold_only():
    rng = np.random.default_rng(0)
    x_train, x_test = rng.normal(0, 1, (40, 3)), rng.normal(50, 1, (10, 3))
    clf = make_classifier("svm", 40).fit(x_train, np.repeat([0, 1], 20))
    np.testing.assert_allclose(clf[0].mean_, x_train.mean(axis=0))
    assert clf.predict(x_test).shape == (10,)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("recording,participant\nx,P0\n", "missing column\\(s\\) task", id="missing-column"),
        pytest.param("recording,participant,task\n", "lists no recording", id="empty"),
        pytest.param(
            "recording,participant,task\nnowhere,P0,read\n",
            "line 2: recording 'nowhere' does not exist",
            id="missing-recording",
        ),
    ],
)
def test_bad_manifests_are_refused_naming_the_line(tmp_path, text, message):
    m = tmp_path / "manifest.csv"
    m.write_text(text)
    with pytest.raises(InputError, match=message):
        read_manifest(m)


def test_evaluate_command_on_a_manifest_writes_tables_and_plots(tmp_path, capsys):
    lines = ["recording,participant,task"]
    for p in range(2):
        for j, task in enumerate(("reading", "search")):
            rec = generate(duration=120.0, rate=100.0, seed=10 * p + j, person=p, task=task).recording
            write_capture_recording(rec, tmp_path / f"p{p}{task}")
            lines.append(f"p{p}{task},P{p},{task}")
    (tmp_path / "manifest.csv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "eval"
    code = main(
        [
            "evaluate",
            "--manifest",
            str(tmp_path / "manifest.csv"),
            "--out",
            str(out),
            "--mechanisms",
            "dcfpa",
            "--epsilons",
            "10",
            "--transform",
            "dct",
            "--k",
            "2",
            "--sensitivity",
            "tight",
            "--seeds",
            "1",
            "--quiet",
        ]
    )
    assert code == 0
    md = (out / "results.md").read_text()
    assert "| dcfpa | 32 | 10 |" in md and "| none | 32 |" in md
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(out / "results.parquet").to_pylist()
    expected = [{k: r[k] for k in table[0]} for r in json.loads((out / "results.json").read_text())]
    assert json.dumps(table) == json.dumps(expected)  # NaN chance for utility rows compares equal as text
    for png in ("utility_vs_epsilon.png", "reidentification_vs_epsilon.png", "task_vs_epsilon.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"
    assert "Chance: re-identification 0.50, task 0.50." in capsys.readouterr().out
    # the privacy options reached the grid point: its utility is that of the configured mechanism
    rows = json.loads((out / "results.json").read_text())
    (utility,) = [r["value"] for r in rows if r["metric"] == "utility" and r["target"] == "reading"]
    items = [(read_recording(p), person, task) for p, person, task in read_manifest(tmp_path / "manifest.csv")]

    def utility_of(config):
        pairs = sanitize(feature_signals(items, config), "dcfpa", 10.0, 32, 0, config)
        released = config.bounds_profile().released  # a feature of weight 0 has no utility
        assert 0 < released.sum() < 52
        return label_utility(pairs, [task for _, _, task in items], released)["reading"]

    assert utility == utility_of(SessionConfig(transform="dct", k=2, sensitivity="tight", seed=0))
    assert utility != utility_of(SessionConfig(seed=0))


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(["--k", "3"], "lpa does not take parameter 'k': leave it out or choose --mechanisms", id="k-lpa"),
        pytest.param(["--mechanisms", "fpa", "--sensitivity", "tight"], "fpa does not take parameter", id="fpa"),
        pytest.param(["--epsilon", "2", "--epsilons", "1"], "give --epsilon or --epsilons, not both", id="both"),
        pytest.param(["--chunk-lengths", "48"], "chunk_length must be a power of two", id="chunk-length"),
    ],
)
def test_evaluate_refuses_a_grid_point_its_options_do_not_fit_before_any_work(tmp_path, capsys, argv, message):
    assert main(["evaluate", "--out", str(tmp_path / "eval"), "--quiet", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "synthetic people" not in err
    assert not (tmp_path / "eval").exists()


def test_evaluate_refuses_an_existing_folder_unless_overwrite(tmp_path, capsys):
    out = tmp_path / "eval"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    argv = ["evaluate", "--out", str(out), "--people", "2", "--seconds", "150", "--mechanisms", "lpa"]
    argv += ["--epsilons", "10", "--seeds", "1", "--workers", "1"]
    assert main([*argv, "-q"]) == 2
    assert capsys.readouterr().err == f"streamdp evaluate: error: {out}: exists; pass --overwrite to replace it\n"
    assert main([*argv, "-q", "--overwrite"]) == 0
    assert (out / "results.csv").exists() and not (out / "mine.txt").exists()
    assert not list(tmp_path.glob(".eval.partial-*"))
    # the configuration written beside the results is the shared one: no seed
    written = json.loads((out / "evaluation.json").read_text())["config"]
    assert written == json.loads(json.dumps(dataclasses.replace(SessionConfig(seed=0), seed=None).describe()))
    rows = json.loads((out / "results.json").read_text())
    assert {r["epsilon_chunk"] for r in rows if r["mechanism"] == "lpa"} == {10.0}


def test_every_grid_point_states_the_epsilon_of_its_release():
    from streamdp.offline.evaluate import GridPoint

    base = SessionConfig()
    assert GridPoint("lpa", 10.0, 32).epsilon_chunk(base) == 10.0
    assert GridPoint("dcfpa", 2.4 * 52, 64).epsilon_chunk(base) == pytest.approx(2.4 * 52)
    # offline FPA releases the whole recording once: the grid's ε, all features together
    assert GridPoint("fpa", 10.0, 32).epsilon_chunk(base) == pytest.approx(10.0)
    assert np.isnan(GridPoint("none", 0.0, 32).epsilon_chunk(base))
