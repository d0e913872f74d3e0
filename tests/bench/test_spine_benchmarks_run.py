"""The spine benchmarks run (tiny sizes); their figures live in bench/RESULTS.md."""

from __future__ import annotations

import re

from tests.bench.runner import run_bench
from tests.conftest import Stack


def test_step_overhead_benchmark_prints_its_figures(stack: Stack) -> None:
    out = run_bench("bench.spine_step_overhead", "--jobs", "1", "--rounds", "3")
    assert "platform overhead per step, tracing on (Postgres + OTLP): p50" in out
    assert "platform overhead per step, tracing off: p50" in out
    assert "baseline: bare ModelClient.complete round trip: p50" in out
    # 1 job x (3 rounds + the answer): its spans reached both sinks
    found = re.search(r"spans exported: (\d+) rows in Postgres, (\d+) received", out)
    assert found, out
    assert int(found[1]) == int(found[2]) > 0


def test_concurrency_benchmark_prints_its_figures(stack: Stack) -> None:
    out = run_bench(
        "bench.spine_concurrency",
        "--jobs",
        "4",
        "--calls",
        "2",
        "--latency-ms",
        "20",
        "--concurrency",
        "8",
        "--baseline-ops",
        "20",
    )
    assert "batch 1 (freshly started workers), 0 failed" in out
    assert "batch 2 (warm workers), 0 failed" in out
    assert out.count("achieved/ideal throughput") == 2  # one per batch
    assert "baseline: the same calls from bare ModelClient threads" in out
    assert out.count("CPU per ledger step (12 steps") == 2
    # Each job's advance message at least went through the broker.
    found = re.search(r"Redis commands per job: ([\d.]+) \(", out)
    assert found and float(found[1]) >= 1, out
    for line in ("agent worker(s)", "postgres backends", "celery no-op round trip"):
        assert line in out
    # The backends were followed during the batch: at least one per worker connection.
    backends = re.search(r"postgres backends .*?, (\d+) process", out)
    assert backends and int(backends[1]) >= 1, out
    assert re.search(r"postgres server .*?, [1-9]\d* process", out), out
    assert "http call to the simulator" in out and "postgres insert" in out


def test_multi_host_benchmark_prints_its_figures(stack: Stack) -> None:
    out = run_bench(
        "bench.multi_host_throughput",
        "--jobs",
        "4",
        "--calls",
        "2",
        "--latency-ms",
        "20",
        "-c",
        "2",
    )
    assert re.search(r"1 worker host : +[\d.]+ s +[\d.]+ jobs/s", out), out
    assert re.search(r"2 worker hosts: +[\d.]+ s +[\d.]+ jobs/s", out), out
    # The figures are real only if both hosts ran the second batch's jobs.
    split = re.search(r"job slices per host \(2 hosts\): (\{.*\})", out)
    assert split, out
    assert sum(int(n) for n in re.findall(r": (\d+)", split[1])) >= 4, out
