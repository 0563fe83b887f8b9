"""The Python API the README promises: the main objects importable from ``streamdp``, explicit
mechanism signatures, ``run()`` on a recording, a gaze batch or a path, wrong inputs refused with a
hint, the generator in the ledger, data into pandas and back, and a TOML configuration file."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import pydoc
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import streamdp
from streamdp import (
    CollectingSink,
    FeaturePipeline,
    FeatureRows,
    GazeBatch,
    InputError,
    PrivatePipeline,
    Recording,
    Session,
    SessionConfig,
    default_profile,
    secure_generator,
)
from streamdp.frames import GAZE_COLUMNS
from streamdp.schema import FEATURE_NAMES
from streamdp.synthetic import generate

from .recording_files import write_capture_recording

ROOT = Path(__file__).resolve().parents[1]
REC = generate(duration=75.0, rate=120.0, seed=4).recording
B = default_profile()


def _mech(**kw):
    return streamdp.dcfpa(epsilon=1.0, bounds=B, chunk_length=32, **kw)


# ---------------------------------------------------------------- what `streamdp` exports

#: each name the top level promises, and the module that defines it
EXPORTS = {
    "SessionConfig": "streamdp.config",
    "Session": "streamdp.session",
    "FeaturePipeline": "streamdp.pipeline",
    "PrivatePipeline": "streamdp.pipeline",
    "read_recording": "streamdp.readers",
    "GazeBatch": "streamdp.gaze",
    "GazeColumns": "streamdp.gaze",
    "Recording": "streamdp.gaze",
    "LPA": "streamdp.privacy.mechanisms",
    "CFPA": "streamdp.privacy.mechanisms",
    "DCFPA": "streamdp.privacy.mechanisms",
    "Steil": "streamdp.privacy.mechanisms",
    "FPA": "streamdp.privacy.mechanisms",
    "make_mechanism": "streamdp.privacy.mechanisms",
    "dcfpa": "streamdp.privacy.mechanisms",
    "cfpa": "streamdp.privacy.mechanisms",
    "MECHANISMS": "streamdp.privacy.mechanisms",
    "PrivacyUnit": "streamdp.privacy.accountant",
    "BoundsProfile": "streamdp.privacy.bounds",
    "default_profile": "streamdp.privacy.bounds",
    "secure_generator": "streamdp.privacy.noise",
    "PrivateRelease": "streamdp.privacy.release",
    "SessionStatus": "streamdp.status",
    "StatusEvent": "streamdp.status",
    "CollectingSink": "streamdp.sinks",
    "ReleaseSink": "streamdp.sinks",
    "FeatureRows": "streamdp.stages.features",
    "releases_to_pandas": "streamdp.frames",
    "ReleasePublisher": "streamdp.network.sink",
}


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_the_main_objects_are_importable_from_streamdp(name):
    assert getattr(streamdp, name) is getattr(importlib.import_module(EXPORTS[name]), name)
    assert name in streamdp.__all__


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'Relay'"):
        streamdp.Relay  # noqa: B018


def test_importing_streamdp_loads_neither_the_network_nor_the_command_line():
    code = (
        "import sys, streamdp\n"
        "print(sorted(m for m in sys.modules if m.startswith(('streamdp.network', 'streamdp.cli'))))\n"
        "streamdp.ReleasePublisher\n"
        "print('streamdp.network.sink' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["[]", "True"]  # loaded on first use only


# ---------------------------------------------------------------- explicit signatures

@pytest.mark.parametrize(("factory", "cls"), [("dcfpa", "DCFPA"), ("cfpa", "CFPA")])
def test_fourier_factories_show_the_class_parameters(factory, cls):
    made = getattr(streamdp, factory)
    params = inspect.signature(made).parameters
    assert params == inspect.signature(getattr(streamdp, cls)).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    page = pydoc.render_doc(made)
    for name in ("epsilon", "bounds", "chunk_length", "transform", "k", "sensitivity", "k_epsilon_share"):
        assert f"{name}:" in page
    built = made(epsilon=0.5, bounds=B, chunk_length=16, transform="dct", k=3, sensitivity="tight")
    args = built.arguments()
    assert type(built) is getattr(streamdp, cls) and args.pop("bounds") is B
    expected = {"epsilon": 0.5, "chunk_length": 16, "transform": "dct", "k": 3, "sensitivity": "tight"}
    if cls == "DCFPA":
        expected["level_share"] = 0.5  # the level's share of each feature's ε, shown though default
    assert args == expected


# ---------------------------------------------------------------- run() takes three kinds of input

def _as(kind, tmp_path):
    if kind == "recording":
        return REC
    if kind == "gaze batch":
        return REC.gaze
    folder = write_capture_recording(REC, tmp_path / "rec")
    return str(folder) if kind == "path str" else folder


RUNNERS = {
    "FeaturePipeline": lambda src: FeaturePipeline().run(src).values,
    "PrivatePipeline": lambda src: np.concatenate(
        [r.values for r in PrivatePipeline(_mech(), rng=secure_generator(3)).run(src)]
    ),
    "Session": lambda src: np.concatenate(
        [r.values for r in Session(SessionConfig(chunk_length=32, seed=3), reorder=False).run(src)]
    ),
    "Session.feature_rows": lambda src: Session(SessionConfig(), reorder=False).feature_rows(src).values,
}


@pytest.mark.parametrize("kind", ["gaze batch", "path str", "path Path"])
@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_run_takes_a_gaze_batch_or_a_path_as_it_takes_the_recording(runner, kind, tmp_path):
    run = RUNNERS[runner]
    source = _as(kind, tmp_path)
    expected = run(Recording(gaze=REC.gaze, blinks=None, name="x")) if kind == "gaze batch" else None
    if kind.startswith("path"):
        expected = run(streamdp.read_recording(source))
    got = run(source)
    assert got.shape[0] > 0 and np.array_equal(got, expected)


# ---------------------------------------------------------------- wrong inputs: one table

def _release(rng):
    return PrivatePipeline(_mech(), rng=rng).run(REC)[0]


def _bad_toml(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text("epsilon = = 1\n")
    return SessionConfig.from_toml(p)


def _toml(tmp_path, text):
    p = tmp_path / "c.toml"
    p.write_text(text)
    return SessionConfig.from_toml(p)


#: (id, call, exception, the words the message must hold)
BAD = [
    ("FeaturePipeline.run(int)", lambda tp: FeaturePipeline().run(42), TypeError,
     "run() takes a Recording, a GazeBatch or the path of a recording (str or Path), got int"),
    ("PrivatePipeline.run(dict)", lambda tp: PrivatePipeline(_mech()).run({"gaze": []}), TypeError, "got dict"),
    ("Session.run(list)", lambda tp: Session(SessionConfig()).run([REC]), TypeError, "got list"),
    ("run(missing path)", lambda tp: FeaturePipeline().run(tp / "nowhere"), InputError, "no such file or folder"),
    ("run(batch_size=0)", lambda tp: FeaturePipeline().run(REC, batch_size=0), ValueError, "batch_size must be ≥ 1"),
    ("run(batch_size=1.5)", lambda tp: FeaturePipeline().run(REC, batch_size=1.5), TypeError, "batch_size"),
    ("rng=42", lambda tp: PrivatePipeline(_mech(), rng=42), TypeError,
     "rng must be a random source (streamdp.privacy.secure_generator(), or secure_generator(seed) "
     "for reproducible, not private noise) or a numpy Generator, got 42"),
    ("rng=RandomState", lambda tp: PrivatePipeline(_mech(), rng=np.random.RandomState(0)), TypeError,
     "or a numpy Generator"),
    ("unit='session'", lambda tp: PrivatePipeline(_mech(), unit="session"), TypeError, "unit must be a PrivacyUnit"),
    ("mechanism name", lambda tp: PrivatePipeline("dcfpa"), TypeError, "registered mechanisms"),
    ("events=WindowConfig", lambda tp: FeaturePipeline(events=streamdp.WindowConfig()), TypeError,
     "events must be an EventConfig"),
    ("Session(dict)", lambda tp: Session({"epsilon": 1.0}), TypeError, "SessionConfig.from_mapping"),
    ("Session(sinks=one sink)", lambda tp: Session(SessionConfig(), sinks=CollectingSink()), TypeError,
     "sinks=[CollectingSink(…)]"),
    ("Session(seed='1')", lambda tp: Session(SessionConfig(), seed="1"), TypeError, "seed must be an int"),
    ("given blinks, gaze batch", lambda tp: Session(SessionConfig(blinks="given")).run(REC.gaze), InputError,
     "no blink events"),
    ("dcfpa positional", lambda tp: streamdp.dcfpa(1.0, B, 32), TypeError, "positional"),
    ("dcfpa no bounds", lambda tp: streamdp.dcfpa(epsilon=1.0, chunk_length=32), TypeError, "bounds"),
    ("from_mapping unknown key", lambda tp: SessionConfig.from_mapping({"epsilom": 1, "windw": 2}), InputError,
     "unknown keys 'epsilom' (did you mean 'epsilon'?), 'windw' (did you mean 'window'?)"),
    ("from_mapping list", lambda tp: SessionConfig.from_mapping([("epsilon", 1.0)]), TypeError, "mapping"),
    ("from_mapping wrong type", lambda tp: SessionConfig.from_mapping({"epsilon": "1"}), TypeError,
     "configuration: epsilon must be a number, got '1'"),
    ("from_toml missing", lambda tp: SessionConfig.from_toml(tp / "none.toml"), InputError, "none.toml: no such file"),
    ("from_toml folder", lambda tp: SessionConfig.from_toml(tp), InputError, "is a folder"),
    ("from_toml not TOML", _bad_toml, InputError, "bad.toml: not valid TOML"),
    ("from_toml unknown key", lambda tp: _toml(tp, "mechansim = 'lpa'\n"), InputError,
     "c.toml: unknown key 'mechansim' (did you mean 'mechanism'?)"),
    ("from_toml out of range", lambda tp: _toml(tp, "step = 60.0\n"), ValueError, "c.toml: WindowConfig.step"),
    ("from_toml table", lambda tp: _toml(tp, "[privacy]\nepsilon = 1.0\n"), InputError, "unknown key 'privacy'"),
    ("rows_from_pandas not a frame", lambda tp: FeatureRows.from_pandas({"t": []}), TypeError,
     "df must be a pandas DataFrame, got dict"),
    ("rows_from_pandas missing", lambda tp: FeatureRows.from_pandas(
        FeatureRows(np.zeros(1), np.zeros((1, 52))).to_pandas().drop(columns="blink_rate")), InputError,
     "feature rows: the DataFrame has no column 'blink_rate'"),
    ("rows_from_pandas NaN", lambda tp: FeatureRows.from_pandas(
        FeatureRows(np.zeros(1), np.full((1, 52), np.nan)).to_pandas()), InputError, "at row 0 is not finite"),
    ("gaze_from_pandas missing", lambda tp: streamdp.gaze_from_pandas(
        streamdp.gaze_to_pandas(REC.gaze).drop(columns="x")), InputError, "gaze: the DataFrame has no column 'x'"),
    ("gaze_from_pandas unknown", lambda tp: streamdp.gaze_from_pandas(
        streamdp.gaze_to_pandas(REC.gaze).rename(columns={"confidence": "confidance"})), InputError,
     "unknown column 'confidance'"),
    ("gaze_from_pandas diameter unit", lambda tp: streamdp.gaze_from_pandas(
        _plain_frame(streamdp.gaze_to_pandas(REC.gaze))), InputError, "diameter_unit='mm' or 'px'"),
    ("gaze_from_pandas NaN valid", lambda tp: streamdp.gaze_from_pandas(
        _frame(valid=[True, np.nan])), InputError, "gaze: column 'valid' at row 1 is nan, not True/False"),
    ("gaze_from_pandas eye 1.5", lambda tp: streamdp.gaze_from_pandas(
        _frame(eye_id=[0, 1.5])), InputError, "column 'eye_id' at row 1 is 1.5, not a small integer"),
    ("gaze_from_pandas text t", lambda tp: streamdp.gaze_from_pandas(
        _frame(t=["0 s", "1 s"])), InputError, "gaze: column 't' does not hold numbers"),
    ("gaze_from_pandas backwards", lambda tp: streamdp.gaze_from_pandas(
        _frame(t=[1.0, 0.0])), InputError, "timestamps go backwards at row 1"),
    ("releases_to_pandas dict", lambda tp: streamdp.releases_to_pandas([{"values": [[0.0]]}]), TypeError,
     "releases[0] must be a PrivateRelease, got dict"),
]


def _frame(**columns):
    import pandas as pd

    return pd.DataFrame({"t": [0.0, 0.01], "x": [0.5, 0.6], "y": [0.5, 0.5], **columns})


def _plain_frame(df):
    df.attrs.clear()  # a frame that does not say its diameter unit
    return df


NEEDS_PANDAS = pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="needs the pandas extra")


@pytest.mark.parametrize(
    ("call", "exc", "words"),
    [
        pytest.param(*b[1:], id=b[0], marks=[NEEDS_PANDAS] if b[0].startswith(("rows_", "gaze_", "releases_")) else [])
        for b in BAD
    ],
)
def test_wrong_input_is_refused_with_a_message_naming_it(call, exc, words, tmp_path):
    with pytest.raises(exc) as info:
        call(tmp_path)
    assert words in str(info.value)


# ---------------------------------------------------------------- the generator in the ledger

@pytest.mark.parametrize(
    ("rng", "said"),
    [
        (np.random.default_rng(0), "reproducible, not private"),
        (secure_generator(3), "reproducible, not private"),
        (None, "cryptographic"),
    ],
    ids=["numpy default_rng", "seeded source", "default: OS entropy"],
)
def test_the_ledger_says_whether_the_noise_is_private(rng, said):
    rel = _release(rng)
    assert rel.ledger["generator"] == said
    assert rel.to_message()["ledger"]["generator"] == said


@pytest.mark.parametrize(("seed", "said"), [(2, "reproducible, not private"), (None, "cryptographic")])
def test_sessions_say_whether_their_noise_is_private(seed, said):
    rels = Session(SessionConfig(chunk_length=32, seed=seed), reorder=False).run(REC)
    assert rels and {r.ledger["generator"] for r in rels} == {said}


def test_a_local_sink_keeps_a_release_of_a_plain_generator():
    sink = CollectingSink()
    sink.publish(_release(np.random.default_rng(0)))  # simulations and tests stay possible locally
    assert len(sink.releases) == 1


def test_the_network_sink_refuses_a_release_of_a_non_cryptographic_generator():
    sink = streamdp.ReleasePublisher("tcp://127.0.0.1:0")
    try:
        sink.publish(_release(secure_generator()))  # accepted: OS entropy
        for seeded in (secure_generator(1), np.random.default_rng(0)):
            with pytest.raises(ValueError, match="reproducible, not private"):
                sink.publish(_release(seeded))
    finally:
        sink.close()


# ---------------------------------------------------------------- pandas

def test_feature_rows_go_to_pandas_and_back():
    pytest.importorskip("pandas")
    rows = FeaturePipeline().run(REC)
    df = rows.to_pandas()
    assert list(df.columns) == ["t", *FEATURE_NAMES] and len(df) == len(rows)
    back = FeatureRows.from_pandas(df.assign(participant="p1"))  # other columns are left out
    assert np.array_equal(back.t, rows.t) and np.array_equal(back.values, rows.values)
    assert len(FeatureRows.from_pandas(FeatureRows().to_pandas())) == 0


def test_rows_from_pandas_sanitize_as_the_rows_they_came_from():
    pytest.importorskip("pandas")
    rows = FeaturePipeline().run(REC)
    cfg = SessionConfig(chunk_length=32, seed=5)
    direct = cfg.chunk_privatizer().update(rows)
    via = cfg.chunk_privatizer().update(FeatureRows.from_pandas(rows.to_pandas()))
    assert len(direct) == 2 and all(np.array_equal(a.values, b.values) for a, b in zip(direct, via, strict=True))


@pytest.mark.parametrize("unit", ["mm", "px", "none"])
def test_gaze_goes_to_pandas_and_back(unit):
    pytest.importorskip("pandas")
    g = REC.gaze
    batch = GazeBatch(g.t, g.x, g.y, g.confidence, g.diameter, g.eye_id, g.valid, unit, "probe")
    df = streamdp.gaze_to_pandas(batch)
    assert tuple(df.columns) == GAZE_COLUMNS and df.attrs == {"diameter_unit": unit, "source": "probe"}
    back = streamdp.gaze_from_pandas(df)
    assert back.diameter_unit == unit and back.source == "probe"
    for name in GAZE_COLUMNS:
        assert np.array_equal(getattr(back, name), getattr(batch, name), equal_nan=name != "valid"), name


def test_gaze_from_pandas_fills_the_optional_columns():
    pd = pytest.importorskip("pandas")
    b = streamdp.gaze_from_pandas(pd.DataFrame({"t": [0.0, 0.01], "x": [0.5, np.nan], "y": [0.5, 0.5]}))
    assert b.confidence.tolist() == [1.0, 1.0] and b.valid.tolist() == [True, False] and b.diameter_unit == "none"
    assert len(FeaturePipeline().run(streamdp.gaze_from_pandas(streamdp.gaze_to_pandas(REC.gaze)))) > 0


def test_releases_go_to_one_frame_a_row_per_step():
    pytest.importorskip("pandas")
    rels = Session(SessionConfig(chunk_length=32, seed=2), reorder=False).run(REC)
    df = streamdp.releases_to_pandas(rels)
    assert list(df.columns) == ["chunk_index", "t", *FEATURE_NAMES]
    assert df["chunk_index"].tolist() == [i for i in range(len(rels)) for _ in range(32)]
    assert np.array_equal(df["t"].to_numpy(), np.concatenate([r.t for r in rels]))
    assert np.array_equal(df[list(FEATURE_NAMES)].to_numpy(), np.concatenate([r.values for r in rels]))
    assert rels[1].to_pandas().equals(df[df["chunk_index"] == 1].reset_index(drop=True))
    assert list(streamdp.releases_to_pandas([]).columns) == list(df.columns)


# ---------------------------------------------------------------- TOML configuration

CONFIGS = {
    "default": SessionConfig(),
    "lpa w-event": SessionConfig(mechanism="lpa", unit="w-event", w=4, budget=1000.0, epsilon=0.25),
    "private k": SessionConfig(k="private", transform="dct", sensitivity="tight", seed=9, camera="neon"),
    "features": SessionConfig(window=20.0, step=1.0, units="norm", max_dispersion=0.02, blinks="given"),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_a_configuration_survives_toml_and_json(name, tmp_path):
    cfg = CONFIGS[name]
    path = tmp_path / "session.toml"
    path.write_text(cfg.to_toml())
    assert SessionConfig.from_toml(path) == cfg
    # replay.json keeps describe(): read back as a configuration
    assert SessionConfig.from_mapping(json.loads(json.dumps(cfg.describe()))) == cfg


def test_a_relative_bounds_path_is_relative_to_the_toml_file(tmp_path, monkeypatch):
    (tmp_path / "conf").mkdir()
    path = tmp_path / "conf" / "session.toml"
    path.write_text('bounds = "bounds.toml"\nepsilon = 2\n')
    monkeypatch.chdir(tmp_path)
    cfg = SessionConfig.from_toml(path)
    assert cfg.bounds == str(tmp_path / "conf" / "bounds.toml") and cfg.epsilon == 2


def test_a_gaze_batch_has_its_own_pandas_methods():
    pytest.importorskip("pandas")
    from streamdp import GazeBatch

    gaze = generate(duration=3.0, rate=100.0, seed=4).recording.gaze
    back = GazeBatch.from_pandas(gaze.to_pandas())
    assert back.diameter_unit == gaze.diameter_unit
    for name in ("t", "x", "y", "confidence", "diameter", "eye_id", "valid"):
        assert np.array_equal(getattr(back, name), getattr(gaze, name), equal_nan=True), name
