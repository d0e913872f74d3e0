"""The embedding-backend and scale benchmarks run at a tiny size (figures: bench/RESULTS.md)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.bench.runner import ROOT, json_lines, run_bench


def _shared_data() -> Path:
    """shared/data next to the checkout, or next to a folder above it (worktrees)."""
    if "LEAFLAB_SHARED_DATA" in os.environ:
        return Path(os.environ["LEAFLAB_SHARED_DATA"])
    for folder in ROOT.parents:
        if (folder / "shared" / "data").is_dir():
            return folder / "shared" / "data"
    return ROOT.parent / "shared" / "data"


SCIFACT = _shared_data() / "scifact"


def _run(module: str, argv: list[str], home: Path) -> list[dict[str, object]]:
    stdout = run_bench(module, *argv, timeout_s=900, env={"LEAFLAB_HOME": str(home)})
    rows: list[dict[str, object]] = json_lines(stdout)
    return rows


def test_embedding_bench_times_every_backend_and_scores_them(tmp_path: Path) -> None:
    argv = ["--data", str(SCIFACT), "--limit-docs", "15", "--limit-queries", "4"]
    argv += ["--sample", "8", "--cache", str(tmp_path / "emb")]
    *rows, summary = _run("bench.library_embedding", argv, tmp_path)
    assert {r["backend"] for r in rows} == {"torch", "onnx", "onnx-int8"}
    for row in summary["rows"]:  # type: ignore[union-attr]
        assert row["chunks_per_s"] > 0 and 0 <= row["ndcg@10_hybrid"] <= 1
    assert set(summary["speedup_vs_torch"]) == {"torch", "onnx", "onnx-int8"}  # type: ignore[arg-type]


def test_scale_bench_reports_p95_and_memory(tmp_path: Path) -> None:
    argv = ["--data", str(SCIFACT), "--limit-docs", "20", "--chunks", "300"]
    argv += ["--queries", "3", "--base", "8"]
    (figures,) = _run("bench.library_scale", argv, tmp_path)
    assert figures["chunks"] == 300
    assert set(figures["hybrid_with_query_embedding"]) == {"p50_ms", "p95_ms"}  # type: ignore[arg-type]
    assert figures["rss_mb_per_million"] is not None
    assert isinstance(figures["rss_store_files_mb_per_million"], dict)
    assert figures["dense_datatype"] == "float16"  # the service's default store
    for mode in ("unmap", "drop"):  # each release mode: RSS after the searches, their p95
        after = figures["after_page_release"][mode]  # type: ignore[index]
        assert set(after["rss_after_queries"]) == {"VmRSS", "RssAnon", "RssFile"}
        assert after["hybrid_with_query_embedding"]["p95_ms"] > 0


def test_ingest_bench_reports_end_to_end_and_parse_baseline(tmp_path: Path) -> None:
    from tests.library import hostile_pdfs

    folder = tmp_path / "pdfs"
    folder.mkdir()
    hostile_pdfs.theorem_pdf(folder / "one.pdf")
    (figures,) = _run("bench.library_ingest", ["--pdfs", str(folder)], tmp_path)
    assert figures["pdfs"] == 1 and figures["chunks"] > 0  # type: ignore[operator]
    assert figures["baseline_parse_chunk_only"]["pages_per_s"] > 0  # type: ignore[index]


def test_backends_bench_scores_each_retrieval_for_each_embedding(tmp_path: Path) -> None:
    argv = ["--data", str(SCIFACT), "--limit-docs", "15", "--limit-queries", "4"]
    argv += ["--backends", "torch,onnx-int8", "--cache", str(tmp_path / "emb")]
    *rows, summary = _run("bench.library_backends", argv, tmp_path)
    assert [r["embedding"] for r in rows] == ["torch", "onnx-int8"]
    assert summary["queries"] == 4 and summary["rows"] == rows
    for row in rows:
        for retrieval in ("dense_exact", "dense_hnsw", "lexical", "hybrid"):
            assert 0 <= row[retrieval] <= 1, (retrieval, row)  # type: ignore[operator]
