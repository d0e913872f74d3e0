"""The accounts benchmark runs (tiny sizes); its figures live in bench/RESULTS.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]


def test_accounts_benchmark_prints_its_figures(stack: Stack) -> None:
    args = ["--keys", "20", "--checks", "10", "--jobs", "5"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.accounts_overhead", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
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
