"""The tracing benchmarks run (tiny sizes; figures: bench/RESULTS.md)."""

from __future__ import annotations

import re

from tests.bench.runner import run_bench
from tests.conftest import Stack


def test_end_to_end_span_throughput_reaches_both_sinks(stack: Stack) -> None:
    out = run_bench("bench.tracing_overhead", "--spans", "600", "--batch", "128")
    found = re.search(r"\((\d+) stored\), OTLP .* \((\d+) received\), (\d+) dropped", out)
    assert found, out
    stored, received, dropped = map(int, found.groups())
    assert stored + dropped >= 600 and received + dropped >= 600 and stored > 0 < received
    assert "added cost per span" in out


def test_sinks_down_benchmark_prints_each_case(stack: Stack) -> None:
    out = run_bench("bench.tracing_sinks_down", "--spans", "100")
    for case in ("healthy", "unreachable", "hung"):
        assert re.search(rf"^{case} +span.end p50 [\d.]+ ms, p95", out, re.M), out
