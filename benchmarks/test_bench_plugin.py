"""The Capture plugin's cost per world frame, in the stand-in Capture world loop
(tests/pupil_standin), on Capture's own untidy traffic: one batch of gaze per world frame at ~30 Hz,
binocular and monocular mixed, monocular gaze frames late, 3d gaze datums with their pupil datums
(:func:`streamdp.pupil_wire.capture_datums`).

Each world frame's ``recent_events`` is timed (``perf_counter`` for the frame's delay, the
thread's CPU for the share of a core) over 80 s of 200 Hz gaze after the first 40 s (the first
window and release), ~2,400 frames: p50/p90/p99/max per frame and CPU per second of gaze. The
baseline runs the feature stages at every step, the candidate as shipped (every
``FeedPacing.STEPS`` steps and at each chunk's last step: :mod:`streamdp.live_pacing`); the summary
prints their CPU ratio.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from streamdp.live_pacing import FeedPacing
from streamdp.synthetic import generate
from tests.pupil_standin import capture_plugin_environment, world_frames

WARM_SECONDS, SECONDS = 40.0, 80.0
GROUP = "plugin per Capture world frame: CPU, stages every step / every FeedPacing.STEPS steps (shipped)"


@pytest.fixture(scope="module")
def frames() -> list[dict[str, Any]]:
    rec = generate(duration=WARM_SECONDS + SECONDS, rate=200.0, seed=8).recording
    return list(world_frames(rec, untidy=True))


@pytest.mark.parametrize("role", ["baseline", "candidate"])
def test_plugin_cost_per_world_frame(benchmark, frames, role):
    benchmark.group = GROUP
    with capture_plugin_environment() as env:
        g_pool = env.world.make_g_pool(None)
        env.plugin.Plugin_List(g_pool, [(env.module.StreamDP, {"seed": 0})])
        (plugin,) = g_pool.plugins
        if role == "baseline":
            plugin.session.pacing = FeedPacing(steps=1)
        start = frames[0]["frame"].timestamp + WARM_SECONDS

        def run() -> tuple[np.ndarray, float, int]:
            per_frame, cpu, released = [], 0.0, 0
            for events in frames:
                events = {**events, "gaze": list(events["gaze"]), "blinks": list(events["blinks"])}
                c0, t0 = time.thread_time(), time.perf_counter()
                plugin.recent_events(events)
                t1, c1 = time.perf_counter(), time.thread_time()
                if events["frame"].timestamp >= start:
                    per_frame.append(t1 - t0)
                    cpu += c1 - c0
                    released += len(events.get("streamdp", []))
            return np.asarray(per_frame), cpu, released

        per_frame, cpu, released = benchmark.pedantic(run, rounds=1, iterations=1)
    ms = 1000.0 * np.percentile(per_frame, [50, 90, 99, 100])
    share = 100.0 * cpu / SECONDS
    benchmark.extra_info.update(
        role=role,
        cpu_s=cpu,
        frames=len(per_frame),
        released=released,
        target=(
            f"(candidate per world frame over {len(per_frame)} frames: p50 {ms[0]:.3f}, p90 {ms[1]:.3f}, "
            f"p99 {ms[2]:.3f}, max {ms[3]:.3f} ms; {share:.2f} % of a core at 200 Hz; {released} releases)"
        ),
    )
    print(
        f"\n{role}: per world frame p50 {ms[0]:.3f}, p90 {ms[1]:.3f}, p99 {ms[2]:.3f}, max {ms[3]:.3f} ms "
        f"over {len(per_frame)} frames; {share:.2f} % of a core; {released} releases"
    )
    assert len(per_frame) >= 2000 and released >= 1
    assert plugin.session.counters.late == 0
