"""The tracing benchmark runs (its figures are not asserted: see bench/RESULTS.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import SUFFIX, Stack

ROOT = Path(__file__).resolve().parents[2]


def test_tracing_overhead_bench_runs(stack: Stack) -> None:
    result = subprocess.run(
        [sys.executable, "bench/tracing_overhead.py", "--spans", "600", "--batch", "128",
         "--db", f"leaflab_bench_{SUFFIX}"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert "spans/s" in result.stdout and "added cost per span" in result.stdout
