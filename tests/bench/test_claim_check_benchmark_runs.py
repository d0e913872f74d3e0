"""The claim-check benchmark runs on a slice of SciFact and prints every checker
beside its same-run baselines (figures: bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import run_bench


def test_claim_check_benchmark_prints_each_checker_and_the_baselines() -> None:
    out = run_bench("bench.claim_check", "--limit", "12", "--lexical-only", timeout_s=300)
    assert "embedding: off" in out
    for row in ("lexical", "numbers", "terms", "combined", "model", "baseline: always flag"):
        assert f"\n  {row} " in out, out
    # The always-flag baseline catches every negative: recall 1.000.
    always = [ln for ln in out.splitlines() if "baseline: always flag" in ln]
    assert always and all(ln.split()[-2] == "1.000" for ln in always), always
