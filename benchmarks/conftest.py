"""Benchmarks report speed as ratios measured in one run: each pair of benchmarks in a group has
``extra_info['role']`` 'baseline' or 'candidate'; the summary prints baseline / candidate (of the
CPU seconds in ``extra_info['cpu_s']`` where both report them, else of the median wall times)."""

from __future__ import annotations

import pytest

from streamdp.synthetic import generate


@pytest.fixture(scope="session")
def hour_of_gaze():
    """One hour of 200 Hz synthetic gaze: 720,000 samples."""
    return generate(duration=3600.0, rate=200.0, seed=42).recording


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups: dict[str, dict[str, object]] = {}
    for bench in session.benchmarks:
        role = bench.extra_info.get("role")
        if role:
            groups.setdefault(bench.group or bench.name, {})[role] = bench
    lines = []
    for group, roles in sorted(groups.items()):
        if "baseline" in roles and "candidate" in roles and all(r.stats.rounds for r in roles.values()):
            base, cand = roles["baseline"], roles["candidate"]
            target = cand.extra_info.get("target", "")
            if "cpu_s" in base.extra_info and "cpu_s" in cand.extra_info:
                # CPU time of the measuring process, not wall time (the sender paces the stream)
                b, c, what = base.extra_info["cpu_s"], cand.extra_info["cpu_s"], "CPU"
            else:
                b, c, what = base.stats.median, cand.stats.median, "median"
            lines.append(f"{group}: baseline/candidate = {b / c:.2f}x ({what} {b:.4g}s vs {c:.4g}s) {target}")
    for bench in session.benchmarks:
        if "target" in bench.extra_info and not bench.extra_info.get("role") and bench.stats.rounds:
            lines.append(f"{bench.name}: median {bench.stats.median:.4g}s {bench.extra_info['target']}")
    if lines:
        terminalreporter.section("streamdp benchmark ratios")
        for line in lines:
            terminalreporter.write_line(line)
