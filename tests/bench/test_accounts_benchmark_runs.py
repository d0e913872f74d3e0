"""The accounts benchmark runs (tiny sizes); its figures live in bench/RESULTS.md."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench
from tests.conftest import Stack


def test_accounts_benchmark_prints_its_figures(stack: Stack) -> None:
    args = ["--keys", "20", "--checks", "10", "--jobs", "5"]
    stdout = run_bench("bench.accounts_overhead", *args)
    figures = last_json(stdout)
    assert figures["keys_stored"] == 21
    for name in (
        "auth_salted_prefix_lookup",
        "baseline_old_unsalted_lookup",
        "rate_limit_take",
        "baseline_redis_ping",
        "acquire_queued_cap_on",
        "baseline_acquire_cap_off",
    ):
        assert set(figures[name]) == {"p50_ms", "p95_ms"}
