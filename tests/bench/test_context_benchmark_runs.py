"""The context compression benchmark runs and reports every figure (bench/RESULTS.md)."""

from __future__ import annotations

from tests.bench.runner import last_json, run_bench


def test_context_compression_benchmark_prints_its_figures() -> None:
    stdout = run_bench("bench.context_compression", "--quick")
    figures = last_json(stdout)
    session = figures["session"]
    assert set(session["tokens_saved_per_layer"]) == {
        "dedupe", "truncate_primary", "truncate_all", "placeholders", "summary"
    }  # fmt: skip
    assert session["tokens_sent"] < session["baseline_tokens_uncompressed"]
    cpu = figures["cpu_200_messages"]
    assert cpu["messages"] == 200
    for key in ("compressed_view", "baseline_uncompressed_view"):
        assert set(cpu[key]) == {"median_ms", "p95_ms"}
