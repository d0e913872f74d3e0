"""The context compression benchmark runs and reports every figure (bench/RESULTS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_context_compression_benchmark_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.context_compression", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    session = figures["session"]
    assert set(session["tokens_saved_per_layer"]) == {
        "dedupe", "truncate_primary", "truncate_all", "placeholders", "summary"
    }  # fmt: skip
    assert session["tokens_sent"] < session["baseline_tokens_uncompressed"]
    cpu = figures["cpu_200_messages"]
    assert cpu["messages"] == 200
    for key in ("compressed_view", "baseline_uncompressed_view"):
        assert set(cpu[key]) == {"median_ms", "p95_ms"}
