"""The sandbox latency benchmark runs (tiny sizes; figures: bench/RESULTS.md).

Needs Docker and the sandbox image, like tests/sandbox (``make test`` builds it).
"""

from __future__ import annotations

from tests.bench.runner import run_bench
from tests.conftest import Stack


def test_sandbox_latency_benchmark_prints_its_figures(stack: Stack) -> None:
    stdout = run_bench("bench/sandbox_latency.py", "--n", "2", "--concurrency", "2", timeout_s=600)
    assert "bare docker run (cold)" in stdout
    assert "sandbox.exec warm (same session)" in stdout
    assert "execs/s" in stdout
