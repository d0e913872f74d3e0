"""The survey benchmark runs (two PDFs, no latency); its figures live in bench/RESULTS.md."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench


def test_survey_benchmark_prints_its_figures() -> None:
    args = ["--pdfs", "2", "--latency-ms", "0", "--length", "short"]
    figures = last_json(run_bench("bench.survey_pipeline", *args, timeout_s=600))
    assert figures["papers"] == 2 and figures["sections"] == 3
    # plan + 2 notes + outline + 3 sections + 3 checks
    assert figures["model_calls"] == 10
    assert figures["wall_s"] > 0 and figures["critical_path_s"] > 0
    assert set(figures["stage_done_at_s"]) >= {"plan", "gather", "read", "assemble"}
