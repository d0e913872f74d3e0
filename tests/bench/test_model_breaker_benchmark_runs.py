"""The breaker benchmark runs and reports its figures (measured ones: bench/RESULTS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import RedisDbs

ROOT = Path(__file__).resolve().parents[2]


def test_model_breaker_benchmark_prints_its_figures(redis_dbs: RedisDbs) -> None:
    argv = ["--callers", "8", "--healthy-s", "0.5", "--down-s", "1.5", "--modes", "refuse"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.model_breaker", *argv, "--redis", redis_dbs.main],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    runs = json.loads(done.stdout.strip().splitlines()[-1])["runs"]
    with_breaker, without = runs
    assert with_breaker["breaker"] and not without["breaker"]
    assert with_breaker["failed_calls"] == 0 and without["failed_calls"] == 0
    assert with_breaker["breaker_open_after_s"] is not None
    assert with_breaker["late_calls_still_trying_a"] == 0.0
    assert without["late_calls_still_trying_a"] == 1.0
