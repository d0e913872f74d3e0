"""The approvals/subagents benchmark runs (tiny size); its figures live in bench/RESULTS.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]


def test_approvals_benchmark_prints_its_figures(stack: Stack) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.approvals_subagents", "--runs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    for label in (
        "approval: apply decision -> job succeeded: p50",
        "baseline: one-reply turn, submit -> succeeded: p50",
        "subagent: turn calling agent, submit -> succeeded: p50",
        "baseline: same turn calling glob instead: p50",
    ):
        assert label in out.stdout, out.stdout
