"""The library latency benchmark runs on a slice of SciFact (figures: bench/RESULTS.md)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.bench.runner import ROOT, json_lines, last_json, run_bench

SHARED = Path(os.environ.get("LEAFLAB_SHARED_DATA", ROOT.parent / "shared" / "data"))
SCIFACT = SHARED / "scifact"


def test_library_latency_benchmark_prints_its_figures(tmp_path: Path) -> None:
    argv = ["--limit-docs", "20", "--chunks", "100", "--scope", "50", "--queries", "3"]
    argv += ["--pdfs", ""]
    argv += ["--data", str(SCIFACT), "--cache", str(tmp_path / "emb")]
    figures = last_json(run_bench("bench.library_latency", *argv, timeout_s=600))
    assert figures["chunks"] >= 100 and figures["queries"] == 3
    assert figures["in_search_scope"] >= 50
    for key in (
        "search_with_query_embedding",
        "baseline_query_embedding_only",
        "baseline_search_precomputed_vector",
    ):
        assert set(figures[key]) == {"p50_ms", "p95_ms"}


def test_scifact_benchmark_scores_a_slice(tmp_path: Path) -> None:
    argv = ["--data", str(SCIFACT), "--limit-docs", "20", "--limit-queries", "5"]
    argv += ["--no-grid", "--lexical-levers", "--cache", str(tmp_path / "emb")]
    runs = json_lines(run_bench("bench.library_scifact", *argv, timeout_s=600))
    assert {r["run"] for r in runs if "run" in r} == {"hybrid", "bm25", "dense"}
    levers = [r["lexical_lever"]["lever"] for r in runs if "lexical_lever" in r]
    assert levers[0] == "replica check: shipped BM25"
    assert any(name.startswith("k1/b chosen on half 1") for name in levers)
