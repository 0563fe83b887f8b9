"""Work sized by the user's numbers is estimated before it starts (issue #27 item 2).

The estimates are pure functions of the sizes (tested directly); :func:`preview` refuses what
does not fit in the machine's memory and announces what takes over a minute; :class:`Progress`
reports while the work runs. Through the command line, a huge ``features --step`` or ``demo
--seconds`` is refused at once, and long work prints its estimate before it starts, then its
progress: the tests read those lines with a timeout and kill the process, never running the work.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from streamdp.cli import main
from streamdp.cli.cost import (
    UNCERTAINTY,
    Cost,
    audit_cost,
    demo_cost,
    evaluate_cost,
    feature_cost,
    gaze_evaluate_cost,
    heatmap_cost,
    simulate_cost,
)
from streamdp.cli.progress import LONG, Progress, TooMuchWork, available_memory, preview
from streamdp.synthetic import generate

from .recording_files import write_capture_recording
from .stderr_lines import first_lines_then_kill, read_lines

#: more memory than any machine that runs these tests has
PETABYTE = 1e15


# ---------------------------------------------------------------- the estimates


def test_an_hour_of_gaze_at_a_microsecond_step_needs_terabytes():
    cost = feature_cost(seconds=3600.0, rate=200.0, step=1e-6, window=30.0)
    assert cost.what == "3.6e+09 steps × 52 features"
    assert cost.bytes > 1e12 and cost.seconds > 1e9


def test_feature_rows_cost_grows_with_steps_and_with_the_window_they_merge():
    base = feature_cost(seconds=300.0, rate=200.0, step=0.5, window=30.0)
    finer = feature_cost(seconds=300.0, rate=200.0, step=0.05, window=30.0)
    longer = feature_cost(seconds=600.0, rate=200.0, step=0.5, window=30.0)
    # ten times the steps, each merging ten times the groups of its window
    assert finer.seconds > 10 * base.seconds and finer.bytes > base.bytes
    assert longer.seconds > base.seconds and longer.bytes > base.bytes
    three = feature_cost(seconds=300.0, rate=200.0, step=0.5, window=30.0, recordings=3)
    assert three.seconds == pytest.approx(3 * base.seconds) and "× 3 recordings" in three.what


def test_gaze_shorter_than_a_window_has_no_steps_to_cost():
    cost = feature_cost(seconds=20.0, rate=200.0, step=1e-9, window=30.0)
    assert cost.what.startswith("0 steps") and cost.seconds < 1


def test_the_networked_demo_costs_more_than_the_offline_one():
    offline = demo_cost(seconds=150.0, rate=200.0, step=0.5, window=30.0, networked=False)
    networked = demo_cost(seconds=150.0, rate=200.0, step=0.5, window=30.0, networked=True)
    assert networked.seconds > offline.seconds and networked.bytes > offline.bytes


@pytest.mark.parametrize(
    "cost",
    [
        feature_cost(seconds=120.0, rate=200.0, step=0.5, window=30.0, synthetic=True),
        demo_cost(seconds=150.0, rate=200.0, step=0.5, window=30.0, networked=True),
        simulate_cost(samples=120.0 * 200.0, synthetic=True, paced=True),
        evaluate_cost(jobs=25 * 3, steps=12 * 421.0, parallel=2, study_samples=12 * 240.0 * 120.0),
        gaze_evaluate_cost(jobs=17 * 2, people=6, seconds=240.0, reid=True, parallel=2),
        heatmap_cost(observers=10, pixels=24 * 32, figure_pixels=6.0 * 4.4 * 120**2),
    ],
    ids=["features", "demo", "simulate", "evaluate", "evaluate-gaze", "heatmap"],
)
def test_the_defaults_are_neither_refused_nor_announced(cost):
    # a command run as it comes says nothing about its cost (the audit's default is long: announced)
    assert cost.seconds < LONG and cost.bytes < 1e9
    assert preview(cost, "x", available=1e9) is False


def test_the_default_audit_is_announced():
    assert audit_cost(audits=38, gaze_audits=2, runs=2000, chunk_length=32).seconds > LONG


def test_the_parallel_processes_share_the_jobs_but_not_more_than_there_are():
    one = evaluate_cost(jobs=8, steps=5000.0, parallel=1)
    assert evaluate_cost(jobs=8, steps=5000.0, parallel=4).seconds == pytest.approx(one.seconds / 4)
    # two jobs on eight processes take as long as one job on one
    alone = evaluate_cost(jobs=1, steps=5000.0, parallel=1).seconds
    assert evaluate_cost(jobs=2, steps=5000.0, parallel=8).seconds == pytest.approx(alone)


#: (id, call, exception, words of the message)
BAD = [
    ("feature step 0", lambda: feature_cost(seconds=1.0, rate=1.0, step=0.0, window=30.0), ValueError,
     "step must be > 0, got 0.0"),
    ("feature seconds text", lambda: feature_cost(seconds="60", rate=1.0, step=0.5, window=30.0), TypeError,
     "seconds must be a number, got '60'"),
    ("feature rate inf", lambda: feature_cost(seconds=1.0, rate=float("inf"), step=0.5, window=30.0), ValueError,
     "rate must be finite and ≥ 0, got inf"),
    ("feature positional", lambda: feature_cost(1.0, 1.0, 0.5, 30.0), TypeError, "positional"),
    ("demo negative", lambda: demo_cost(seconds=-1.0, rate=200.0, step=0.5, window=30.0, networked=False),
     ValueError, "seconds must be finite and ≥ 0, got -1.0"),
    ("simulate bool", lambda: simulate_cost(samples=True, synthetic=True, paced=True), TypeError,
     "samples must be a number, got True"),
    ("evaluate no process", lambda: evaluate_cost(jobs=1, steps=1.0, parallel=0), ValueError,
     "parallel must be ≥ 1, got 0"),
    ("gaze evaluate nan", lambda: gaze_evaluate_cost(jobs=1, people=2, seconds=float("nan"), reid=True, parallel=1),
     ValueError, "seconds must be finite and ≥ 0, got nan"),
    ("heatmap negative", lambda: heatmap_cost(observers=1, pixels=-4.0, figure_pixels=1.0), ValueError,
     "pixels must be finite and ≥ 0, got -4.0"),
    ("audit runs text", lambda: audit_cost(audits=1, gaze_audits=0, runs="2000", chunk_length=32), TypeError,
     "runs must be a number, got '2000'"),
    ("progress negative estimate", lambda: Progress("x", estimate=-1.0), ValueError,
     "estimate must be finite and ≥ 0, got -1.0"),
    ("progress every 0", lambda: Progress("x", estimate=1.0, every=0.0), ValueError, "every must be > 0, got 0.0"),
    ("progress total -1", lambda: Progress("x", estimate=1.0, total=-1), ValueError, "total must be ≥ 0, got -1"),
]  # fmt: skip


@pytest.mark.parametrize(("call", "exc", "words"), [pytest.param(*b[1:], id=b[0]) for b in BAD])
def test_a_bad_size_is_refused_naming_it(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    assert words in str(info.value)


# ---------------------------------------------------------------- the preview


def test_work_beyond_the_memory_available_is_refused_with_its_estimate():
    cost = Cost(seconds=7200.0, bytes=3e12, what="3e+09 steps", smaller="a larger --step")
    with pytest.raises(TooMuchWork) as info:
        preview(cost, "features", available=2e10)
    assert str(info.value) == (
        "needs about 2 h and 3 TB of memory for 3e+09 steps (an estimate, within a factor of "
        f"{UNCERTAINTY:g}), more than the 20 GB this machine has available: give a larger --step"
    )


def test_work_over_a_minute_is_announced_in_one_line(capsys):
    from streamdp.cli.console import configure_logging

    configure_logging(0)
    assert preview(Cost(seconds=600.0, bytes=1e6, what="10 jobs", smaller="fewer"), "evaluate", available=1e9)
    err = capsys.readouterr().err
    assert err == (
        "streamdp evaluate: this will take about 10 min and 1 MB of memory for 10 jobs (an estimate, within a "
        f"factor of {UNCERTAINTY:g}); progress follows (Ctrl-C stops it)\n"
    )
    configure_logging(-1)  # -q: the refusal would still be said, the announcement is not
    assert preview(Cost(seconds=600.0, bytes=1e6, what="10 jobs", smaller="fewer"), "evaluate", available=1e9)
    assert capsys.readouterr().err == ""
    configure_logging(0)


def test_this_machine_says_how_much_memory_it_has():
    free = available_memory()
    assert free is None or 0 < free < PETABYTE


# ---------------------------------------------------------------- progress while it runs


def test_progress_prints_lines_while_the_work_runs_and_stops_with_it():
    r, w = os.pipe()
    with os.fdopen(w, "w") as stream:
        bar = Progress("demo", estimate=120.0, total=4, unit="chunk", delay=0.0, every=0.01, stream=stream)
        bar.advance(1)  # before the reporter starts: every line it prints sees it
        with bar:
            lines = read_lines(r, 2, timeout=10.0)
    os.close(r)
    assert len(lines) == 2 and all(re.fullmatch(r"streamdp demo: 1 of 4 chunks \(25%\) after \S+ s, about .*", x)
                                   for x in lines), lines  # fmt: skip


def test_work_that_cannot_be_counted_reports_its_time_against_the_estimate():
    r, w = os.pipe()
    with os.fdopen(w, "w") as stream, Progress("features", estimate=3e7, delay=0.0, every=0.01, stream=stream):
        lines = read_lines(r, 1, timeout=10.0)
    os.close(r)
    assert re.fullmatch(r"streamdp features: running for \S+ s of about 50 weeks estimated", lines[0]), lines


def test_quiet_progress_starts_no_reporter():
    with Progress("x", estimate=1.0, delay=0.0, every=0.01, show=False) as bar:
        bar.advance(3)
    assert bar.done == 3 and bar.line(0.5) == "streamdp x: running for 0.5 s of about 1 s estimated"
    # past the estimate, it does not pretend to know what is left
    past = "streamdp x: running for 2 s, longer than the 1 s estimated (what is left cannot be counted)"
    assert bar.line(2.0) == past


# ---------------------------------------------------------------- through the command line


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (["features", "--synthetic", "3600", "--step", "1e-6", "--out", "f.csv"],
         r"^streamdp features: error: needs about \S+ years and \S+ TB of memory for 3\.6e\+09 steps × 52 features "
         r"\(an estimate, within a factor of 3\), more than the \S+ [GT]B this machine has available: give a larger "
         r"--step or less gaze$"),
        (["demo", "--seconds", "1e7"],
         r"^streamdp demo: error: needs about .* of memory for 2e\+09 gaze samples → 2e\+07 steps × 52 features .* "
         r"give a smaller --seconds \(or a larger --step\)$"),
    ],
    ids=["features-step-1e-6", "demo-seconds-1e7"],
)  # fmt: skip
def test_huge_work_is_refused_before_it_starts(argv, pattern, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert re.fullmatch(pattern, err.rstrip("\n")) and err.count("\n") == 1, err
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("cost") / "rec"
    write_capture_recording(generate(duration=40.0, rate=200.0, seed=0).recording, folder)
    return folder


def test_long_work_says_its_estimate_before_it_starts_then_shows_progress(recording, tmp_path):
    argv = ["features", str(recording), "--step", "1e-5", "--out", str(tmp_path / "f.csv")]
    lines = first_lines_then_kill(argv, 2)
    assert len(lines) == 2, lines
    assert re.fullmatch(
        r"streamdp features: this will take about \S+ weeks and \S+ GB of memory for 1e\+06 steps × 52 features "
        r"\(an estimate, within a factor of 3\); progress follows \(Ctrl-C stops it\)",
        lines[0],
    ), lines[0]
    assert re.fullmatch(r"streamdp features: running for \S+ s of about \S+ weeks estimated", lines[1]), lines[1]
    assert not (tmp_path / "f.csv").exists()
