"""The tracing benchmarks run (tiny sizes; figures: bench/RESULTS.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]


def _run(module: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout


def test_end_to_end_span_throughput_reaches_both_sinks(stack: Stack) -> None:
    out = _run("bench.tracing_overhead", "--spans", "600", "--batch", "128")
    found = re.search(r"\((\d+) stored\), OTLP .* \((\d+) received\), (\d+) dropped", out)
    assert found, out
    stored, received, dropped = map(int, found.groups())
    assert stored + dropped >= 600 and received + dropped >= 600 and stored > 0 < received
    assert "added cost per span" in out


def test_sinks_down_benchmark_prints_each_case(stack: Stack) -> None:
    out = _run("bench.tracing_sinks_down", "--spans", "100")
    for case in ("healthy", "unreachable", "hung"):
        assert re.search(rf"^{case} +span.end p50 [\d.]+ ms, p95", out, re.M), out
