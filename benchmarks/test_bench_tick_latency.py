"""Gaze ticks from the eye to the app, on Capture's timing (issue #38).

The stand-in's traffic (:func:`~streamdp.pupil_wire.encode.capture_datums`: 200 Hz gaze in ~30 Hz
world-frame bursts, 15 % of it monocular up to 90 ms late; with ``eye_lag`` one eye process at a
time also falls behind by up to 1.3 s, as the real Capture v3.6 under load) is delivered to a live
session with the gaze channel at the default settings, at the source times it leaves Capture, and
the shell's timer calls ``advance_to`` at each deadline between bursts, as ``Relay.run`` does
(``tests/gaze_channel_driver.py``). Each tick's release is then known on Capture's clock:

- **receipt → app**: from the arrival of the gaze datum that completes the tick (the first, in
  send order, past the end of its interval) to the tick's release;
- **timestamp → app**: from that datum's own timestamp, and from the mean timestamp of the tick's
  own samples (the position it reports), to the release, plus the smoothing's step lag
  (:func:`~streamdp.kernels.smoothing.smoothing_lag`: a causal median of k ticks lags (k − 1)/2 ticks).

These are the public schedule's figures, exact on the source clock; the relay adds its hand-off
(``test_per_tick_processing_on_capture_bursts``: p99 well under 1 ms) and its timer's wake-up.
"""

from __future__ import annotations

import msgpack
import numpy as np
import pytest

from streamdp.config import SessionConfig
from streamdp.kernels.smoothing import smoothing_lag
from streamdp.stages.gaze_ticks import GazeTicks
from streamdp.synthetic import generate
from tests.gaze_channel_driver import bursts_of, drive

SECONDS = 60.0
START = 1000.0


def _completing(bursts, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per tick end: the arrival and the timestamp of the first gaze datum past it (binocular, or
    the on-time eye's monocular gaze while the other eye lags)."""
    at, ts = [], []
    for arrival, burst in bursts:
        for topic, payload in burst:
            if topic.startswith(b"gaze."):
                at.append(arrival)
                ts.append(msgpack.unpackb(payload, raw=False)["timestamp"])
    at_a, ts_a = np.array(at), np.array(ts)
    first_past = np.maximum.accumulate(ts_a)  # the first datum in send order whose timestamp passes the end
    i = np.searchsorted(first_past, ends, side="right")
    ok, j = i < len(ts_a), np.minimum(i, len(ts_a) - 1)
    return np.where(ok, at_a[j], np.nan), np.where(ok, ts_a[j], np.nan)


@pytest.mark.parametrize("eye_lag", [0.0, 1.3], ids=["on-time", "an-eye-lagging-1.3s"])
def test_tick_latency_from_the_eye_to_the_app(benchmark, eye_lag):
    config = SessionConfig(gaze_channel=True, seed=0)
    rec = generate(duration=SECONDS, rate=200.0, seed=4, start_time=START).recording
    bursts = bursts_of(rec, eye_lag=eye_lag)
    run = benchmark.pedantic(lambda: drive(bursts, config, until=START + SECONDS - 0.5), rounds=1, iterations=1)
    rate = config.gaze_rate
    steady = (run.t > START + 1.0) & (run.t < START + SECONDS - 1.0)
    t, released = run.t[steady], run.at[steady]
    ends = (2.0 * np.rint(t * rate) + 1.0) / (2.0 * rate)
    arrived, stamp = _completing(bursts, ends)
    receipt = (released - arrived) * 1000
    lag_ms = smoothing_lag(config.gaze_smoothing) / rate * 1000  # noise-free step lag
    from_stamp = (released - stamp) * 1000 + lag_ms
    from_centre = (released - t) * 1000 + lag_ms  # the tick's samples are centred on it
    p = lambda a: {q: float(np.nanpercentile(a, v)) for q, v in (("p50", 50), ("p99", 99), ("max", 100))}  # noqa: E731
    r, s, c = p(receipt), p(from_stamp), p(from_centre)
    fmt = "p50 {p50:.1f}, p99 {p99:.1f}, max {max:.1f}".format
    benchmark.extra_info.update(
        ticks=int(steady.sum()), smoothing=config.gaze_smoothing, smoothing_lag_ms=lag_ms,
        tick_offset_ms=config.tick_offset * 1000,
        **{f"receipt_to_app_{k}_ms": v for k, v in r.items()},
        **{f"datum_timestamp_to_app_{k}_ms": v for k, v in s.items()},
        **{f"tick_samples_to_app_{k}_ms": v for k, v in c.items()},
        target=f"(ms over {int(steady.sum())} ticks, eye lag {eye_lag:g} s: receipt of the gaze datum that "
        f"completes the tick -> app {fmt(**r)} (targets p50 <= 20, p99 <= 50); that datum's timestamp -> app with "
        f"the {config.gaze_smoothing} lag ({lag_ms:.1f} ms) {fmt(**s)} (target p50 <= 50); the tick's own samples "
        f"-> app {fmt(**c)})",
    )  # fmt: skip
    # every tick on its public time, whatever the eyes did
    assert np.allclose(released, t + config.tick_offset, rtol=0, atol=1e-9)
    assert GazeTicks(rate=rate).tick_of(np.array([t[0]]))[0] == np.rint(t[0] * rate)

