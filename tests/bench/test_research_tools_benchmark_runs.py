"""The research-tools benchmark runs and prints its figures (bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench


def test_research_tools_benchmark_prints_its_figures() -> None:
    stdout = run_bench("bench.research_tools", "--requests", "5")
    figures = last_json(stdout)
    for key in (
        "guarded_fetch",
        "baseline_plain_httpx",
        "web_fetch_tool",
        "html_to_text_1mb",
        "baseline_selectolax_body_text_1mb",
        "pdf_text_4_pages",
    ):
        assert set(figures[key]) == {"p50_ms", "p95_ms"}, key
    assert figures["page_bytes"] > 900_000
