"""``--weights FILE`` (issue #21 item 1): a weights file from ``streamdp fit-weights`` is a value of
the ``weights`` field, for the API, every command that reads it and the Capture plugin; the ledger
of every release names it and its digest; its ε split is the file's; a bad file is refused naming
it; the configuration carries the weights to workers and reads no file there."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import msgpack
import numpy as np
import pytest

from streamdp.cli import build_parser, main, readers
from streamdp.config import SessionConfig
from streamdp.errors import InputError
from streamdp.offline.fit_weights import fit_weights
from streamdp.postprocess import PostProcessor
from streamdp.privacy import dcfpa, default_profile, secure_generator
from streamdp.privacy.bounds import WEIGHTS_PROFILES
from streamdp.privacy.weights_file import WEIGHTS_FORMAT, WeightsTable, load_weights_file, weights_digest
from streamdp.schema import FEATURE_NAMES
from streamdp.synthetic import generate

from .pupil_standin import capture_plugin_environment, world_frames
from .recording_files import write_capture_recording

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fitted_file(tmp_path_factory):
    """A weights file as ``streamdp fit-weights`` writes it: fitted on two synthetic people's rows
    (task and participant labels), some features at 0."""
    rng = np.random.default_rng(5)
    rows = [rng.uniform(0.0, 1.0, (40, 52)) + np.where(np.arange(52) % 3 == 0, 0.8 * (i % 2), 0.0) for i in range(4)]
    labels = [{"task": "ab"[i % 2], "participant": f"P{i // 2}"} for i in range(4)]
    doc = fit_weights(rows, labels, task="task", protect="participant").document(name="pilot")
    path = tmp_path_factory.mktemp("weights") / "pilot.json"
    path.write_text(json.dumps(doc))
    name, weights = load_weights_file(path)
    assert name == "pilot" and 0 < sum(w > 0 for w in weights.values()) < len(FEATURE_NAMES)
    return path


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    rec = generate(duration=90.0, rate=120.0, seed=3).recording
    return write_capture_recording(rec, tmp_path_factory.mktemp("rec") / "rec0")


def _shares(path: Path) -> np.ndarray:
    w = np.array(list(load_weights_file(path)[1].values()))
    return w / w.sum()


def test_a_fitted_file_through_replay_splits_each_chunks_epsilon_by_its_shares(
    fitted_file, recording, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pilot.json").write_bytes(fitted_file.read_bytes())
    argv = ["replay", str(recording), "--epsilon", "26", "--chunk-length", "32", "--seed", "3", "-q"]
    assert main([*argv, "--out", "out", "--weights", "pilot.json"]) == 0
    ledger = json.loads((tmp_path / "out" / "rec0.ledger.json").read_text())
    shares = _shares(fitted_file)
    digest = weights_digest(load_weights_file(fitted_file)[1])
    assert len(ledger["chunks"]) >= 2
    for chunk in ledger["chunks"]:
        # the ledger names the file's allocation and digest, and each feature's ε is its share
        assert chunk["weights"] == "pilot" and chunk["weights_digest"] == digest
        np.testing.assert_allclose(chunk["epsilon_per_feature"], 26.0 * shares, rtol=1e-12)
        assert chunk["epsilon_chunk"] == 26.0
        assert chunk["dropped_features"] == [f for f, s in zip(FEATURE_NAMES, shares, strict=True) if s == 0]
    # a feature the file gives nothing is released as its public constant, the others are noised
    table = np.loadtxt(tmp_path / "out" / "rec0.csv", delimiter=",", skiprows=1)[:, 2:]
    mid = default_profile().midpoint
    np.testing.assert_array_equal(table[:, shares == 0], np.broadcast_to(mid[shares == 0], table[:, shares == 0].shape))
    assert np.all(np.ptp(table[:, shares > 0], axis=0) > 0)
    # replay.json keeps the path as given; run again from it: the same releases, byte for byte
    summary = json.loads((tmp_path / "out" / "replay.json").read_text())
    assert summary["config"]["weights"] == "pilot.json"
    assert main([*argv, "--out", "again", "--config", "out/replay.json"]) == 0
    assert (tmp_path / "again" / "rec0.msgpack").read_bytes() == (tmp_path / "out" / "rec0.msgpack").read_bytes()
    # and an equal split is not a fitted one
    assert main([*argv, "--out", "equal", "--weights", "equal"]) == 0
    plain = json.loads((tmp_path / "equal" / "rec0.ledger.json").read_text())["chunks"][0]
    assert plain["weights"] == "equal" and "weights_digest" not in plain and plain["epsilon_per_feature"] == 0.5


def test_the_configuration_reads_the_file_once_and_carries_its_weights(fitted_file, tmp_path, monkeypatch):
    path = tmp_path / "moving.json"
    path.write_bytes(fitted_file.read_bytes())
    config = SessionConfig(weights=path, epsilon=10.0)  # a Path is taken, and kept as its text
    assert config.weights == str(path) and isinstance(config.weights, WeightsTable)
    mech = config.mechanism_instance()
    np.testing.assert_allclose(mech.feature_epsilons, 10.0 * _shares(fitted_file), rtol=1e-12)
    assert mech.describe()["weights_digest"] == config.bounds_profile().weights_digest() == config.weights.digest
    # as a worker gets it: pickled, the file gone; replaced (a grid point), it still splits ε the same
    shipped = pickle.dumps(config)
    path.unlink()
    there = replace(pickle.loads(shipped), epsilon=20.0)
    np.testing.assert_allclose(there.mechanism_instance().feature_epsilons, 2 * mech.feature_epsilons, rtol=1e-12)
    # another file at the same path makes another configuration, never a cached mechanism
    path.write_text(json.dumps({"format": WEIGHTS_FORMAT, "version": 1, "name": "one", "weights": {"blink_rate": 1}}))
    other = SessionConfig(weights=str(path), epsilon=10.0)
    assert other != config and other.mechanism_instance().describe()["weights"] == "one"
    assert other.mechanism_instance().feature_epsilons[FEATURE_NAMES.index("blink_rate")] == 10.0
    # to_toml and describe write the path as given; a relative one is relative to the working directory
    monkeypatch.chdir(tmp_path)
    relative = SessionConfig(weights="moving.json")
    assert relative.describe()["weights"] == "moving.json" and type(relative.describe()["weights"]) is str
    (tmp_path / "c.toml").write_text(relative.to_toml())
    assert 'weights = "moving.json"' in relative.to_toml()
    assert SessionConfig.from_toml(tmp_path / "c.toml") == relative
    assert SessionConfig.from_mapping(json.loads(json.dumps(relative.describe()))) == relative


#: files refused, each named with the problem: (text or None for no file, message)
BAD_FILES = {
    "missing": (None, "no such weights file (weights: equal, task or the path of a weights file from streamdp"),
    "not-json": ("{weights", "not valid JSON"),
    "unknown-feature": ('{"format": "streamdp-weights", "version": 1, "weights": {"fixation_rte": 1}}',
                        "unknown feature(s) 'fixation_rte'"),
    "all-zero": ('{"format": "streamdp-weights", "version": 1, "weights": {"blink_rate": 0}}', "every weight is 0"),
    "a-shipped-name": ('{"format": "streamdp-weights", "version": 1, "name": "task", "weights": {"blink_rate": 1}}',
                       "its name 'task' is a shipped allocation's"),
}  # fmt: skip


@pytest.mark.parametrize(("text", "message"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_weights_file_is_refused_naming_it_by_the_api_and_the_command_line(
    tmp_path, capsys, monkeypatch, recording, text, message
):
    path = tmp_path / "w.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(InputError) as caught:
        SessionConfig(weights=str(path))
    assert str(caught.value).startswith(f"weights: {path}") and message in str(caught.value), caught.value
    monkeypatch.chdir(tmp_path)
    commands = {"replay": [str(recording), "--out", "out"], "demo": ["--offline"], "evaluate": ["--out", "ev"],
                "relay": [], "audit": []}  # fmt: skip
    assert {c for c, table in readers().items() if "weights" in table} == set(commands)
    for command, args in commands.items():
        assert main([command, *args, "--weights", str(path)]) == 2
        err = capsys.readouterr().err
        assert err == f"streamdp {command}: error: {caught.value}\n", err
    assert sorted(p.name for p in tmp_path.iterdir()) == (["w.json"] if text is not None else [])


def test_a_wrong_type_and_an_empty_name_are_refused_naming_the_field():
    with pytest.raises(TypeError, match="weights must be equal, task or the path of a weights file"):
        SessionConfig(weights=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"weights must be equal, task .* got ''"):
        SessionConfig(weights="")
    with pytest.raises(ValueError, match="name 'task' is a shipped allocation's"):
        fit_weights([np.eye(52)[:2] + i % 2 for i in range(4)], [{"task": "ab"[i % 2]} for i in range(4)],
                    task="task").document(name="task")  # fmt: skip


def test_the_help_lists_the_shipped_names_and_the_file(capsys):
    for command in ("relay", "replay", "evaluate", "demo", "audit"):
        sub = next(a for a in build_parser()._actions if hasattr(a, "choices") and a.choices and command in a.choices)
        action = next(a for a in sub.choices[command]._actions if a.dest == "weights")
        assert action.choices is None and action.metavar == "{" + ",".join(WEIGHTS_PROFILES) + "}|FILE"
        said = f"how the ε of a chunk is split over the features: {', '.join(WEIGHTS_PROFILES)}, or a weights file"
        assert action.help.startswith(f"{said} from streamdp fit-weights")
    assert main(["demo", "--offline", "--seconds", "100", "--seed", "1", "--weights", "equal", "-q"]) == 0


def test_the_capture_plugin_setting_takes_a_weights_file(fitted_file, tmp_path):
    with capture_plugin_environment() as env:
        pub = env.world.IPCPublisher("tcp://127.0.0.1:9")
        g_pool = env.world.make_g_pool(pub)
        settings = {"bind": None, "chunk_length": 8, "window": 4.0, "step": 0.5, "epsilon": 26.0,
                    "weights": str(fitted_file)}  # fmt: skip
        env.plugin.Plugin_List(g_pool, [(env.module.StreamDP, settings)])
        plugin = next(iter(g_pool.plugins))
        published = []
        for events in world_frames(generate(duration=20.0, rate=120.0, seed=2).recording):
            published += env.world.run_frame(g_pool, events).get("streamdp", [])
        assert published
        for datum in published:
            ledger = datum["ledger"]
            assert ledger["weights"] == "pilot" and ledger["weights_digest"] == plugin.session.config.weights.digest
            np.testing.assert_allclose(ledger["epsilon_per_feature"], 26.0 * _shares(fitted_file), rtol=1e-12)
        assert plugin.get_init_dict()["weights"] == str(fitted_file)  # saved as given, with Capture's session
        # a bad file is refused in the menu, naming it, and the session goes on
        session = plugin.session
        assert not plugin.update_settings(weights=str(tmp_path / "gone.json"))
        assert f"{tmp_path / 'gone.json'}: no such weights file" in plugin.error and plugin.session is session
        assert plugin.update_settings(weights="equal") and plugin.session.config.weights == "equal"
        plugin.cleanup()
        pub.close()


def test_a_relay_configuration_with_a_weights_file_loads_no_fitting_code(fitted_file):
    code = (
        "import sys\nfrom streamdp.config import SessionConfig\nfrom streamdp.session import Session\n"
        f"config = SessionConfig(weights={str(fitted_file)!r}).check()\n"
        "Session(config, sinks=[], source='Pupil Capture')\n"
        "print(sorted(m for m in sys.modules if m.startswith(('sklearn', 'scipy', 'streamdp.offline'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_published_frame_carries_the_digest_a_reader_recomputes_from_the_file(fitted_file, recording, tmp_path):
    assert main(["replay", str(recording), "--out", str(tmp_path / "o"), "--weights", str(fitted_file),
                 "--chunk-length", "32", "--seed", "1", "-q"]) == 0  # fmt: skip
    with open(tmp_path / "o" / "rec0.msgpack", "rb") as fh:
        frames = list(msgpack.Unpacker(fh, raw=False))
    doc = json.loads(fitted_file.read_text())
    assert frames and {f["ledger"]["weights_digest"] for f in frames} == {weights_digest(doc["weights"])}


def test_releases_split_by_a_weights_file_are_post_processed_with_the_files_profile(fitted_file):
    bounds = SessionConfig(weights=str(fitted_file)).bounds_profile()
    mech = dcfpa(epsilon=100.0, bounds=bounds, chunk_length=16)
    ledger = {**mech.describe(), "bounds_digest": bounds.digest()}
    assert ledger["weights"] == "pilot"
    with pytest.raises(ValueError, match=r"'pilot' are not shipped.*SessionConfig\(weights=FILE\)\.bounds_profile"):
        PostProcessor(ledger=ledger)
    with pytest.raises(ValueError, match="bounds_digest"):
        PostProcessor(ledger=ledger, bounds=default_profile())
    chunk = np.clip(bounds.lo + 0.5 * bounds.width + np.zeros((16, 52)), bounds.lo, bounds.hi)
    values = mech.privatize(chunk, secure_generator(3)).values
    out, state = PostProcessor(ledger=ledger, bounds=bounds)(values)
    dropped = ~bounds.released
    assert dropped.any() and np.array_equal(out[:, dropped], values[:, dropped])  # public constants untouched
    assert np.all(out[:, ~dropped] >= bounds.lo[~dropped]) and np.all(out[:, ~dropped] <= bounds.hi[~dropped])
    assert state is not None and state.estimate.shape == (52,)
