"""`make bench` runs every benchmark: a new one that is not listed would silently be
left out of the figures."""

from __future__ import annotations

from bench.run_all import BENCHMARKS, NOT_BENCHMARKS
from tests.bench.runner import ROOT


def test_every_runnable_benchmark_is_listed() -> None:
    runnable = {
        path.name
        for path in (ROOT / "bench").glob("*.py")
        if '__name__ == "__main__"' in path.read_text()
    }
    listed = {argv[0].removeprefix("bench/") for argv in BENCHMARKS}
    assert runnable - NOT_BENCHMARKS - listed == set()
    assert listed <= runnable  # and nothing listed is gone
