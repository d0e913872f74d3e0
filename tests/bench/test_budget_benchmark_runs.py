"""The budget reservation benchmark runs (tiny sizes); its figures live in bench/RESULTS.md."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import Stack

ROOT = Path(__file__).resolve().parents[2]


def test_budget_benchmark_prints_its_figures_and_the_invariant_holds(stack: Stack) -> None:
    args = ["--calls", "20", "--callers", "8", "--per-caller", "2", "--connections", "4"]
    out = subprocess.run(
        [sys.executable, "-m", "bench.budget_reservation", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "baseline: one plain single-row UPDATE" in out.stdout
    assert "reserve + settle per model call" in out.stdout
    assert "server-side added per model call" in out.stdout
    assert "reservations+settlements/s" in out.stdout
    assert "invariant after the run: reserved $0.000000" in out.stdout
    invariant = [x for x in out.stdout.splitlines() if x.startswith("invariant after the run")]
    assert invariant and invariant[0].endswith(": True"), out.stdout
