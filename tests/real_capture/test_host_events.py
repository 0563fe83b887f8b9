"""What the real host does to a running session: Capture's ``T`` moving its clock forward and
back, an eye process stopped and started again, Capture itself restarted. The relay and the
plugin keep going through all of it, tell each event in one line, and release nothing out of
its public order (no slot of the grid released twice)."""

from __future__ import annotations

import time

import pytest

from .harness import RealCapture, StreamdpListener
from .test_lagging_eyes import PLUGIN, RELAY, install_plugin, start_plugin, start_relay, stop_relay

pytestmark = pytest.mark.real_capture

SMALL = ("--chunk-length", "8", "--window", "8", "--step", "0.5")  # a chunk every 4 s


def wait_for(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} within {timeout:g} s"
        time.sleep(0.2)


def test_clock_jumps_an_eye_restart_and_a_capture_restart_are_survived_and_told(capture: RealCapture):
    install_plugin(capture)
    capture.launch()
    assert capture.remote is not None
    start_plugin(capture, chunk_length=8, window=8.0, step=0.5)
    relay = start_relay(capture, *SMALL)
    relay_app = StreamdpListener(*RELAY, capture.context)
    plugin_app = StreamdpListener(*PLUGIN, capture.context)
    try:
        capture.play(eye_lag=0.5)

        def more_chunks(app: StreamdpListener, n: int = 2):  # type: ignore[no-untyped-def]
            have = len(app.chunks)
            return lambda: len(app.chunks) >= have + n

        wait_for(more_chunks(relay_app), 60, "relay chunks")
        wait_for(more_chunks(plugin_app), 60, "plugin chunks")
        for shift in (+100.0, -100.0):  # `T`, as hmd-eyes sends it to sync its clock
            capture.remote.ask(f"T {float(capture.remote.ask('t')) + shift}")
            wait_for(more_chunks(relay_app), 60, f"relay chunks after T {shift:+g}")
            wait_for(more_chunks(plugin_app), 60, f"plugin chunks after T {shift:+g}")
        capture.remote.notify({"subject": "eye_process.should_stop.1", "eye_id": 1})
        time.sleep(3.0)  # Capture maps eye 0 alone meanwhile
        capture.remote.notify({"subject": "eye_process.should_start.1", "eye_id": 1})
        capture.wait_for_processes(("eye1",), 60)
        capture.remote.notify({
            "subject": "start_eye_plugin", "target": "eye1", "name": "HMD_Streaming_Source",
            "args": {"topics": ["hmd_streaming.eye1"]},
        })  # fmt: skip
        wait_for(more_chunks(relay_app), 60, "relay chunks after eye 1 restarted")
        wait_for(more_chunks(plugin_app), 60, "plugin chunks after eye 1 restarted")
        # Capture restarted: the plugin starts afresh inside it (its settings are Capture's), the
        # relay finds the new backbone
        capture.restart()
        start_plugin(capture, chunk_length=8, window=8.0, step=0.5)
        capture.play(eye_lag=0.5)
        wait_for(more_chunks(relay_app), 90, "relay chunks after Capture restarted")
        assert relay.poll() is None, "the relay exited"
    finally:
        err = stop_relay(relay)
        relay_app.stop()
        plugin_app.stop()
    # the relay: two clock jumps and Capture's restart, each one line, each a new segment
    assert err.count("Pupil time jumped by") == 2, err[-3000:]
    assert "Pupil Capture restarted" in err or "reconnecting" in err, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    for app in (relay_app, plugin_app):  # each slot of the public grid released once at most
        firsts = [round(float(c["t"][0]) * 2) for c in app.chunks]
        assert len(firsts) == len(set(firsts))
    # the plugin: both jumps were new segments before Capture restarted
    assert max(s["restarts"] for s in plugin_app.statuses) >= 2
    # a restarted Capture's new backbone ports are open (no firewall here): the plugin's privacy
    # check warns of them, by design; nothing else
    assert [line for line in capture.log_problems("streamdp") if "[ERROR]" in line] == []
