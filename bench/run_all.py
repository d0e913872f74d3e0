"""Run every benchmark in turn with its default sizes (`make bench`).

Each benchmark prints its own figures next to a baseline measured in the same
run; copy them into bench/RESULTS.md with the command. Needs PostgreSQL and
Redis on localhost (scripts/ensure_services.sh) and Docker for the sandbox one.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.real_model_server import local_model_missing

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"

BENCHMARKS = [
    ["bench/spine_step_overhead.py"],
    ["bench/spine_concurrency.py"],
    ["bench/multi_host_throughput.py"],
    ["bench/up_concurrency.py"],
    ["bench/llm_sim_latency.py"],
    ["bench/model_breaker.py"],
    ["bench/tools_files.py"],
    ["bench/research_tools.py"],
    ["bench/tracing_overhead.py"],
    ["bench/span_export_stages.py"],
    ["bench/tracing_sinks_down.py"],
    ["bench/sandbox_latency.py"],
    ["bench/sandbox_exec_profile.py"],
    ["bench/library_latency.py"],
    ["bench/library_scifact.py"],
    ["bench/library_parsing.py"],
    ["bench/library_tables.py"],
    ["bench/library_embedding.py"],
    ["bench/library_backends.py"],
    ["bench/library_ingest.py", "--pdfs", str(SHARED / "pdfs")],
    ["bench/ingest_levers.py", "--pdfs", str(SHARED / "pdfs"), "--variants", "plain,buckets"],
    ["bench/library_scale.py"],
    ["bench/metadata_completeness.py", "--pdfs", str(SHARED / "pdfs")],
    ["bench/import_throughput.py"],
    ["bench/context_compression.py"],
    ["bench/accounts_overhead.py"],
    ["bench/collection_column.py"],
    ["bench/budget_reservation.py"],
    ["bench/approvals_subagents.py"],
    ["bench/survey_pipeline.py"],
    ["bench/claim_check.py", "--limit", "200"],
    ["bench/cli_watch_render.py"],
    ["bench/cli_startup.py"],
    ["bench/web_paint.py"],
    ["bench/tracing_at_load.py"],
    # Short runs on the local real model (llama.cpp + Gemma 3 270M, 2 CPUs: minutes).
    ["bench/real_model_latency.py", "--start-local", "--rounds", "2", "--max-tokens", "32"],
    ["bench/survey_real_model.py", "--start-local", "--pdfs", "2", "--length", "short"],
]
# Run only where the local real model is installed (scripts/ensure_real_model.sh).
NEEDS_REAL_MODEL = {"bench/real_model_latency.py", "bench/survey_real_model.py"}
# Not benchmarks of their own: servers and helpers the benchmarks above start or import.
NOT_BENCHMARKS = {"run_all.py", "otlp_sink.py"}


def main() -> int:
    failed = 0
    missing = local_model_missing()
    for argv in BENCHMARKS:
        module = argv[0].removesuffix(".py").replace("/", ".")
        print(f"\n=== {' '.join(argv)} ===", flush=True)
        if argv[0] in NEEDS_REAL_MODEL and missing:
            print(f"skipped: the local real model is not installed: {missing}", flush=True)
            continue
        code = subprocess.call([sys.executable, "-m", module, *argv[1:]])
        failed += code != 0
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
