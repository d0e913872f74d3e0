"""The sandbox latency benchmark runs (tiny sizes; figures: bench/RESULTS.md).

Needs Docker and the sandbox image, like tests/sandbox (``make test`` builds it).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]


def test_sandbox_latency_benchmark_prints_its_figures(stack: Stack) -> None:
    done = subprocess.run(
        [sys.executable, "bench/sandbox_latency.py", "--n", "2", "--concurrency", "2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "bare docker run (cold)" in done.stdout
    assert "sandbox.exec warm (same session)" in done.stdout
    assert "execs/s" in done.stdout
