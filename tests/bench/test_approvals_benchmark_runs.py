"""The approvals/subagents benchmark runs (tiny size); its figures live in bench/RESULTS.md."""

from __future__ import annotations

from tests.bench.runner import run_bench
from tests.conftest import Stack


def test_approvals_benchmark_prints_its_figures(stack: Stack) -> None:
    stdout = run_bench("bench.approvals_subagents", "--runs", "1")
    for label in (
        "approval: apply decision -> job succeeded: p50",
        "baseline: one-reply turn, submit -> succeeded: p50",
        "subagent: turn calling agent, submit -> succeeded: p50",
        "baseline: same turn calling glob instead: p50",
    ):
        assert label in stdout, stdout
