"""``streamdp doctor`` against the real Capture: "NOT private" on a stock Capture, naming its
backbone's ports; "private" in the documented setup (docs/threat-model.md, recipe 2: Pupil
Remote on loopback through Capture's Network API, the backbone closed with the firewall commands
the doctor prints), read back from the real firewall of this namespace."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from streamdp.capture.watch import pupil_remote_to_loopback

from .harness import Remote

pytestmark = pytest.mark.real_capture


def doctor(capture, *options: str) -> tuple[int, dict]:  # type: ignore[no-untyped-def]
    out = subprocess.run(
        [sys.executable, "-m", "streamdp.cli", "doctor", "--remote", capture.address, "--timeout", "5", "--json",
         *options],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return out.returncode, json.loads(out.stdout)


def test_a_stock_capture_is_not_private_and_the_doctor_names_its_backbone(capture):
    capture.launch()
    assert capture.remote is not None
    sub, pub = capture.remote.ask("SUB_PORT"), capture.remote.ask("PUB_PORT")
    code, report = doctor(capture)
    text = json.dumps(report)
    assert code == 1 and "NOT private" in report["verdict"], report
    assert sub in text and pub in text and str(capture.port) in text


def test_the_documented_private_setup_is_private(capture):
    capture.launch()
    assert capture.remote is not None
    # what the plugin's "Pupil Remote on 127.0.0.1 only" sends: Capture restarts Pupil Remote on
    # loopback, on the same port (Capture's --port)
    capture.remote.notify(pupil_remote_to_loopback([]))
    capture.remote.close()
    capture.remote = Remote(capture.address, capture.context)
    assert capture.remote.ask("v") == "3.6.0"
    code, report = doctor(capture)
    assert code == 1, report  # the backbone still listens everywhere: the doctor says how to close it
    commands = [line.removeprefix("sudo ") for line in report["firewall_commands"] if line.startswith("sudo nft ")]
    assert commands, report["firewall_commands"]
    for command in commands:
        subprocess.run(["bash", "-c", command], check=True, timeout=30)
    try:
        code, report = doctor(capture)
        assert code == 0 and report["verdict"].startswith("private"), report
    finally:
        subprocess.run(["nft", "delete", "table", "inet", "streamdp_capture"], timeout=30)
