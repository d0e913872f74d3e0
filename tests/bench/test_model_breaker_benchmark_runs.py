"""The breaker benchmark runs and reports its figures (measured ones: bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench
from tests.conftest import RedisDbs


def test_model_breaker_benchmark_prints_its_figures(redis_dbs: RedisDbs) -> None:
    argv = ["--callers", "8", "--healthy-s", "0.5", "--down-s", "1.5", "--modes", "refuse"]
    stdout = run_bench("bench.model_breaker", *argv, "--redis", redis_dbs.main, timeout_s=120)
    runs = last_json(stdout)["runs"]
    with_breaker, without = runs
    assert with_breaker["breaker"] and not without["breaker"]
    assert with_breaker["failed_calls"] == 0 and without["failed_calls"] == 0
    assert with_breaker["breaker_open_after_s"] is not None
    assert with_breaker["late_calls_still_trying_a"] == 0.0
    assert without["late_calls_still_trying_a"] == 1.0
