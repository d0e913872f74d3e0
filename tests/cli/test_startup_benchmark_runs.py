"""The CLI start-up benchmark runs and reports its figures (bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench

COMMANDS = (
    "python -c pass",
    "leaflab --version",
    "leaflab --help",
    "leaflab jobs --help",
    "leaflab watch --help",
    "leaflab submit --help",
)


def test_cli_startup_benchmark_prints_its_figures() -> None:
    figures = last_json(run_bench("bench.cli_startup", "--quick"))
    assert figures["runs"] == 3
    for name in COMMANDS:
        assert set(figures[name]) == {"wall_ms", "wall_ratio", "min_wall_ms", "cpu_ms", "cpu_ratio"}
        assert figures[name]["wall_ms"] > 0
    assert figures["python -c pass"]["wall_ratio"] == 1.0
