"""How soon the command line refuses bad options: an argument error comes before the heavy imports
(scikit-learn, matplotlib: seconds), so ``streamdp evaluate --mechanism x --mechanisms y`` costs
about what ``streamdp --version`` costs (both a fresh interpreter). Target: the refusal within 2 s on
the 2-core development machine; the summary prints --version / refusal (near 1 is the goal)."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: the refusal timed: two forms of one grid axis, refused before any work or import of the extra
REFUSAL = ["evaluate", "--mechanism", "lpa", "--mechanisms", "cfpa"]


def _streamdp(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "streamdp", *argv], capture_output=True, text=True, timeout=120)


@pytest.mark.benchmark(group="cli-argument-error")
def test_version(benchmark):
    benchmark.extra_info["role"] = "baseline"
    done = benchmark.pedantic(_streamdp, args=("--version",), rounds=5, iterations=1, warmup_rounds=1)
    assert done.returncode == 0 and done.stdout.startswith("streamdp ")


@pytest.mark.benchmark(group="cli-argument-error")
def test_evaluate_refuses_two_forms_of_an_axis(benchmark):
    benchmark.extra_info["role"] = "candidate"
    benchmark.extra_info["target"] = "(the refusal ≤ 2 s: it must not wait for scikit-learn)"
    done = benchmark.pedantic(_streamdp, args=tuple(REFUSAL), rounds=5, iterations=1, warmup_rounds=1)
    assert done.returncode == 2
    assert done.stderr == "streamdp evaluate: error: give --mechanism or --mechanisms, not both\n"
