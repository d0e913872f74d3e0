"""The budget reservation benchmark runs (tiny sizes); its figures live in bench/RESULTS.md."""

from __future__ import annotations

from tests.bench.runner import run_bench
from tests.conftest import Stack


def test_budget_benchmark_prints_its_figures_and_the_invariant_holds(stack: Stack) -> None:
    args = ["--calls", "20", "--callers", "8", "--per-caller", "2", "--connections", "4"]
    stdout = run_bench("bench.budget_reservation", *args)
    assert "baseline: one plain single-row UPDATE" in stdout
    assert "reserve + settle per model call" in stdout
    assert "server-side added per model call" in stdout
    assert "reservations+settlements/s" in stdout
    assert "invariant after the run: reserved $0.000000" in stdout
    invariant = [x for x in stdout.splitlines() if x.startswith("invariant after the run")]
    assert invariant and invariant[0].endswith(": True"), stdout
