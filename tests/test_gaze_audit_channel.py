"""The gaze channel audited as a subscriber sees it: the message fields (streamdp.privacy.audit.gaze_wire,
gaze_checks), the publish times in a live session (gaze_timing) and ``streamdp audit --channel gaze``."""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from streamdp.cli import main
from streamdp.config import SessionConfig
from streamdp.privacy.audit import gaze_timing
from streamdp.privacy.audit.gaze import audit_gaze_mechanism, probe_streams
from streamdp.privacy.audit.gaze_checks import TICK_COUNT, epsilon_keys_check, leaking_fields
from streamdp.privacy.audit.gaze_timing import audit_distance, audit_gaze_channel, publish_times
from streamdp.privacy.audit.gaze_wire import GazeWire, gaze_stream
from streamdp.privacy.gaze_mechanisms import GazeBudgetDistribution, GazeUniform

from .gaze_variants import (
    ClippedLedgerChannel,
    GazeOnlyChannel,
    HasGazeLedgerChannel,
    LateWhenMovedChannel,
    swap_session_channel,
)

ARGS = {"epsilon": 4.0, "w": 4}
QUICK = {"trials": 100, "seed": 1, "probe_runs": 8}
#: a small session: 4 ticks a window at 60 Hz
CONFIG = SessionConfig(chunk_length=32, gaze_epsilon=4.0, gaze_w=4)


def test_the_wire_reads_the_published_bytes():
    """What the audit reads is the msgpack payload of each tick, as the relay publishes it."""
    mech = GazeUniform(**ARGS, field=(40.0, 30.0))
    wire = GazeWire(mech, seed=0)
    stream = gaze_stream(np.array([[1.0, -2.0], [100.0 - 11.0, 0.0]]), wire.rate, wire.fov_deg)
    (first, second) = [msgpack.unpackb(b, raw=False) for b in wire.publish(stream)]
    assert first["topic"] == "streamdp.gaze.geo-uniform"
    assert first["names"] == ["x_deg", "y_deg", "x_norm", "y_norm"]
    assert first["ledger"]["channel"] == "gaze" and second["ledger"]["tick_index"] == 1
    # the raw clip rate stays on the device: the top-level local entry is filtered out
    assert "clipped_fraction" not in first["ledger"]
    runs = GazeWire(mech, seed=0).runs(stream, 3)
    assert runs.values.shape == (3, 2, 2)
    assert runs.values[0].tolist() == [first["values"][0][:2], second["values"][0][:2]]


@pytest.mark.parametrize(
    ("cls", "leak"),
    [
        pytest.param(HasGazeLedgerChannel, "ledger.has_gaze", id="has-gaze"),
        pytest.param(ClippedLedgerChannel, "ledger.status.clipped_fraction", id="nested-clipped-fraction"),
        pytest.param(GazeOnlyChannel, TICK_COUNT, id="ticks-only-with-gaze"),
    ],
)
def test_a_message_field_that_depends_on_the_gaze_is_caught(cls, leak):
    report = audit_gaze_mechanism(GazeUniform(**ARGS), channel=cls, **QUICK)
    assert report.verdict == "fail" and not report.fields_passed
    assert leak in report.leaking_fields, report.leaking_fields
    # nothing else is wrong with these channels
    assert report.on_lattice and report.accounting_ok and report.scale_passed


@pytest.mark.parametrize("cls", [GazeUniform, GazeBudgetDistribution], ids=lambda c: c.name)
def test_every_other_field_is_the_same_for_every_probe(cls):
    """Steady gaze, a saccade, gaze beyond the field, a gap and a blink: same fields, same seed."""
    mech = cls(**ARGS)
    wire = GazeWire(mech, seed=0)
    probes = [GazeWire(mech, seed=7).runs(s, 6) for _, s in probe_streams(mech, wire.rate, wire.fov_deg)]
    assert leaking_fields([probes]) == []
    ok, how = epsilon_keys_check(probes, probes)
    assert ok
    if cls is GazeUniform:
        assert how.startswith("identical")
    else:
        # geo-bd: a tick's ε is its test's plus, when it publishes, its share: not the same for
        # steady gaze and a saccade under one seed, but exactly what the positions show
        assert not all(np.array_equal(p.epsilon, probes[0].epsilon) for p in probes)
        assert how.startswith("differ") and "function of the published positions" in how
        for p in probes:
            test = mech.epsilon_test
            spent_on_publications = p.epsilon - np.where(np.arange(p.ticks) > 0, test, 0.0)
            assert np.all((spent_on_publications > 1e-12) == p.published())


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_publish_times_do_not_depend_on_the_gaze(mechanism):
    result = publish_times(SessionConfig(chunk_length=32, gaze_mechanism=mechanism), duration=1.0)
    assert result.identical and result.on_schedule and result.passed
    counts = {len(t) for t, _ in result.streams.values()}
    assert counts == {63}  # 1 s of gaze at 60 Hz, followed to the last tick's public time
    t, at = result.streams["gap and blink"]
    assert np.array_equal(at, t + 1 / 120 + 0.035)  # the interval's end, the reorder window and the slack


@pytest.mark.parametrize(
    ("cls", "differs"),
    [
        pytest.param(GazeOnlyChannel, {"gap and blink"}, id="only-ticks-with-gaze"),
        pytest.param(LateWhenMovedChannel, {"neighbour", "gap and blink"}, id="later-when-moved"),
    ],
)
def test_a_data_dependent_publish_time_is_caught(cls, differs):
    result = publish_times(CONFIG, duration=1.0, patch=swap_session_channel(cls))
    assert not result.passed
    ref_t, ref_at = result.streams["fixation"]
    got = {n for n, (t, at) in result.streams.items() if not (np.array_equal(t, ref_t) and np.array_equal(at, ref_at))}
    assert got == differs
    assert "DIFFER" in result.describe()


def test_the_channel_audit_joins_both():
    report = audit_gaze_channel(CONFIG, trials=100, seed=2)
    assert report.verdict == "pass" and report.publish_times_ok
    assert report.distance == audit_distance(CONFIG) == 1.0  # ε per tick 1
    broken = audit_gaze_channel(CONFIG, trials=100, seed=2, patch=swap_session_channel(LateWhenMovedChannel))
    assert broken.verdict == "fail" and broken.publish_times_ok is False
    assert broken.bound_passed and broken.fields_passed  # only the timing is wrong
    # at the default ε (20 over 60 ticks) the budget distribution's first tick spends 5 per degree
    assert audit_distance(SessionConfig(gaze_mechanism="geo-bd")) == 2.0**-3


def _table(out: str) -> list[list[str]]:
    return [line.split() for line in out.splitlines()[2:] if not line.startswith("    ")]


def test_cli_audits_the_gaze_channel(capsys):
    argv = ["audit", "--channel", "gaze", "--runs", "100", "--gaze-epsilon", "4", "--gaze-w", "4"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("gaze channel: ε per degree of L1 displacement, ε_w = 4 over w = 4 ticks at 60 Hz")
    rows = _table(out)
    assert [r[0] for r in rows] == ["geo-uniform", "geo-bd"] and {r[-1] for r in rows} == {"pass"}
    assert "ε keys: identical for every input under one noise seed" in out
    assert "publish times: identical, each tick at its time + 0.0433333 s" in out  # half a tick, 34 + 1 ms


def test_cli_fails_on_a_broken_channel(capsys, monkeypatch):
    def broken(config, **kw):
        return audit_gaze_channel(config, **kw, patch=swap_session_channel(GazeOnlyChannel))

    monkeypatch.setattr(gaze_timing, "audit_gaze_channel", broken)
    argv = ["audit", "--gaze-mechanisms", "geo-uniform", "--runs", "40", "--gaze-w", "4", "--gaze-epsilon", "4"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    (row,) = _table(out)
    assert row[-2:] == ["DIFFER", "FAIL"] and "publish times: DIFFER for gap and blink" in out


@pytest.mark.parametrize(
    ("argv", "channels"),
    [
        ([], ("features", "gaze")),
        (["--mechanisms", "lpa"], ("features",)),
        (["--mechanism", "lpa"], ("features",)),
        (["--gaze-mechanisms", "geo-bd"], ("gaze",)),
        (["--mechanisms", "lpa", "--gaze-mechanisms", "geo-bd"], ("features", "gaze")),
        (["--channel", "all", "--mechanisms", "lpa"], ("features", "gaze")),
    ],
)
def test_the_channel_follows_the_mechanisms_named(argv, channels):
    from streamdp.cli import build_parser
    from streamdp.cli.audit import audited_channels

    assert audited_channels(build_parser().parse_args(["audit", *argv])) == channels


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--channel", "gaze", "--transforms", "dft"], "--transforms does not apply to --channel gaze"),
        (["--channel", "features", "--gaze-mechanisms", "geo-bd"], "--gaze-mechanisms does not apply"),
        (["--channel", "gaze", "--gaze-epsilon", "0"], "--gaze-epsilon must be > 0"),
        (["--channel", "gaze", "--gaze-epsilon", "1e-9"], "too small for geo-uniform"),
        (["--channel", "gaze", "--gaze-distance", "50"], "--gaze-distance must be at most the field's"),
    ],
)
def test_cli_refuses_gaze_options_that_do_not_fit(argv, message, capsys):
    assert main(["audit", "--runs", "40", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and "Traceback" not in captured.err
    assert captured.out == ""  # refused before anything is audited
