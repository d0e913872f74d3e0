"""The parse + chunk benchmark runs on two shared PDFs (figures: bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench
from tests.library.conftest import PDF_DIR


def test_library_parsing_benchmark_prints_its_figures() -> None:
    argv = ["--pdfs", str(PDF_DIR), "--limit", "2", "--rounds", "1"]
    figures = last_json(run_bench("bench.library_parsing", *argv, timeout_s=600))
    assert figures["pdfs"] == 2
    for name in ("bare", "pool", "process_per_pdf"):
        assert figures[name]["pages"] > 0 and figures[name]["pages_per_cpu_s"] > 0
    assert figures["pool"]["chunks"] == figures["process_per_pdf"]["chunks"] > 0
    assert figures["pool_vs_bare_per_cpu"] > 0
