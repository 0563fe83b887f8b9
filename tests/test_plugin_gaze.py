"""The Capture plugin's real-time gaze channel (setting ``gaze_channel``), in the stand-in of
Capture's world loop: every tick of the public grid goes out on the plugin's own endpoint, each
with the world frame that passes its public time, whatever the gaze did; nothing of it goes into
Capture's ``events``."""

from __future__ import annotations

import numpy as np
import pytest

from streamdp.gaze import GazeBatch, Recording
from streamdp.network.subscriber import connect_subscriber
from streamdp.synthetic import generate

from .test_plugin_endpoint import LOOPBACK, SMALL, capture, receive_all, run, start  # noqa: F401

RATE = 60.0


def _with_a_blink_and_a_gap(seconds: float = 12.0):
    rec = generate(duration=seconds, rate=120.0, seed=5).recording
    gaze = rec.gaze
    start, stop = np.searchsorted(gaze.t, [gaze.t[0] + 4.0, gaze.t[0] + 6.0])  # 2 s without any datum
    gap = GazeBatch.concat([gaze.slice(0, int(start)), gaze.slice(int(stop), len(gaze))])
    return Recording(gaze=gap, blinks=None, name=rec.name)


@pytest.mark.parametrize("mechanism", ["geo-uniform", "geo-bd"])
def test_the_plugin_publishes_every_tick_on_its_endpoint_and_none_into_events(capture, mechanism):  # noqa: F811
    env, pub = capture
    settings = {**SMALL, **LOOPBACK, "gaze_channel": True, "gaze_mechanism": mechanism, "gaze_rate": RATE}
    g_pool, plugin = start(env, pub, settings)
    sub = connect_subscriber(plugin.endpoint.endpoint, ("streamdp.gaze.",))
    try:
        assert plugin.endpoint.publisher.wait_for_subscribers(1, timeout=10.0)
        rec = _with_a_blink_and_a_gap()
        published = run(env, g_pool, rec)
        topics: list[bytes] = []
        ticks = receive_all(sub, topics=topics)
    finally:
        sub.close(linger=0)
    assert {t.decode() for t in topics} == {f"streamdp.gaze.{mechanism}"}
    assert all(not d["topic"].startswith("streamdp.gaze") for d in published)  # events: chunks only
    t = np.array([m["t"][0] for m in ticks])
    k = np.rint(t * RATE)
    assert np.allclose(t * RATE, k, rtol=0, atol=1e-6)  # on the public grid
    assert (np.diff(k) == 1).all()  # every tick, the 2 s gap included: no gap tells a blink
    span = float(rec.gaze.t[-1] - rec.gaze.t[0])
    assert len(ticks) >= span * RATE - RATE  # up to the last world frame's public time
    assert [m["ledger"]["tick_index"] for m in ticks] == list(range(len(ticks)))
    assert all(set(m) == {"topic", "schema_version", "names", "t", "values", "ledger"} for m in ticks)
