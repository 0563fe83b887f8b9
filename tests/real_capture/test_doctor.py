"""``streamdp doctor`` against the real Capture: "NOT private" on a stock Capture, naming its
backbone's ports; "private" in the documented setup (docs/threat-model.md, recipe 2: Pupil
Remote on loopback through Capture's Network API, the backbone closed with the firewall commands
the doctor prints), read back from the real firewall of this namespace."""

from __future__ import annotations

import json
import subprocess

import pytest

from .harness import doctor, make_private

pytestmark = pytest.mark.real_capture


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
    code, report = doctor(capture)
    assert code == 1, report
    make_private(capture)
    try:
        code, report = doctor(capture)
        assert code == 0 and report["verdict"].startswith("private"), report
    finally:
        subprocess.run(["nft", "delete", "table", "inet", "streamdp_capture"], timeout=30)
