"""What a deployment check found: one :class:`Finding` per thing checked, and the
:class:`DeploymentReport` (verdict, exit code, firewall commands) that :mod:`streamdp.network.doctor`
returns to ``streamdp doctor``, the relay and the Capture plugin.

Examples
--------
>>> report = DeploymentReport((Finding("noise", "ok", "not seeded"),), "private: ...", EXIT_PRIVATE)
>>> report.private, report.lines()[0]
(True, '     ok  noise: not seeded')
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass

__all__ = ["EXIT_PRIVATE", "EXIT_RAW_REACHABLE", "EXIT_UNCHECKED", "STATUSES", "DeploymentReport", "Finding"]

EXIT_PRIVATE, EXIT_RAW_REACHABLE, EXIT_UNCHECKED = 0, 1, 2

#: a finding's status; only "exposed" and "unknown" change the exit code
STATUSES = ("ok", "exposed", "unknown", "warning", "note")


@dataclass(frozen=True)
class Finding:
    """One thing checked: its subject, its status (one of :data:`STATUSES`) and one line of text."""

    subject: str
    status: str
    text: str

    def __str__(self) -> str:
        return f"{self.status:>7}  {self.subject}: {self.text}"


@dataclass(frozen=True)
class DeploymentReport:
    """The findings, one line each; the verdict, one line; the exit code (0 private, 1 raw gaze
    reachable beyond loopback, 2 could not check); the firewall commands for the platform
    (printed, never run)."""

    findings: tuple[Finding, ...]
    verdict: str
    exit_code: int
    firewall_commands: tuple[str, ...] = ()
    platform: str = sys.platform

    @property
    def private(self) -> bool:
        return self.exit_code == EXIT_PRIVATE

    def lines(self) -> list[str]:
        """The findings, the verdict and any firewall commands, as ``streamdp doctor`` prints them."""
        out = [str(f) for f in self.findings] + [self.verdict]
        if self.firewall_commands:
            out += [f"firewall commands for {self.platform} (printed, not run):", *self.firewall_commands]
        return out

    def as_json(self) -> str:
        """One JSON object: ``verdict``, ``exit_code``, ``private``, ``findings`` (``subject``,
        ``status``, ``text``), ``firewall_commands``, ``platform``."""
        return json.dumps(
            {
                "verdict": self.verdict,
                "exit_code": self.exit_code,
                "private": self.private,
                "findings": [asdict(f) for f in self.findings],
                "firewall_commands": list(self.firewall_commands),
                "platform": self.platform,
            },
            ensure_ascii=False,
        )
