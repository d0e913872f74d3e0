"""The real-model latency benchmark runs (against the simulator: seconds, no real
server), prints its side-by-side table and ratios, and refuses bad options clearly.
Its figures on the real llama.cpp server live in bench/RESULTS.md."""

from __future__ import annotations

import subprocess
import sys

from tests.bench.runner import ROOT, last_json, run_bench

VARIANTS = {"direct", "ModelClient", "direct (worker's request)", "job"}


def test_real_model_benchmark_prints_both_paths_side_by_side() -> None:
    args = ["--sim", "--latency-ms", "20", "--rounds", "1", "--concurrency", "1,2"]
    out = run_bench("bench.real_model_latency", *args, timeout_s=240)
    figures = last_json(out)
    assert set(figures["levels"]) == {"1", "2"}
    for level, calls in (("1", 1), ("2", 2)):
        rows = figures["levels"][level]
        assert set(rows) == VARIANTS
        for name, row in rows.items():
            # Every call of every variant finished, and its tokens were counted.
            assert row["calls"] == calls and row["finished"] == calls, (level, name, row)
            assert row["ttft_s"] > 0 and row["total_s"] >= row["ttft_s"], (name, row)
            assert row["tokens"] > 0, (name, row)
        # A turn is one model request (the simulator answers it in text).
        assert rows["job"]["model_calls"] == calls
    assert "| variant | calls | finished | TTFT p50 s |" in out
    assert "ModelClient / direct: total time per call" in out
    assert "job / direct (worker's request): total time per call" in out


def test_replaying_the_workers_request_needs_the_job_variant() -> None:
    done = subprocess.run(  # noqa: S603 - our own benchmark
        [sys.executable, "-m", "bench.real_model_latency", "--sim",
         "--variants", "direct,direct (worker's request)"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "needs the 'job' variant" in done.stderr


def test_survey_on_a_model_server_reports_stages_calls_and_overhead() -> None:
    args = ["--sim", "--latency-ms", "10", "--pdfs", "2", "--length", "short"]
    out = run_bench("bench.survey_real_model", *args, timeout_s=400)
    figures = last_json(out)
    assert figures["status"] == "succeeded", figures
    # plan + a note per paper + outline + a section and a check per section (the
    # simulator's auto mode outlines 1-3 sections), each seen by the relay
    papers, sections = figures["papers"], figures["sections"]
    calls = 2 + papers + 2 * sections
    assert papers == 2 and figures["model_calls"] == calls, figures
    assert figures["calls_by_stage"] == {
        "plan": 1, "read": papers, "outline": 1, "write": sections, "verify": sections
    }  # fmt: skip
    assert figures["http_statuses"] == {"200": calls}
    assert figures["response_formats"] == {"json_schema": calls}
    assert 0 < figures["model_busy_s"] < figures["wall_s"]
    assert 0 < figures["platform_overhead_share"] < 1
    assert set(figures["stage_done_at_s"]) >= {"plan", "read", "write", "verify", "assemble"}
    assert "platform overhead" in out and "stage done at" in out
