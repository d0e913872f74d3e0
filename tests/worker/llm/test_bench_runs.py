"""The latency benchmark runs end to end (tiny sizes; the figures come from a real run)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_latency_bench_runs(tmp_path: Path) -> None:
    out = tmp_path / "results.md"
    cmd = [sys.executable, "bench/llm_sim_latency.py", "--n", "5", "--concurrency", "10"]
    cmd += ["--latency-ms", "20", "--long-words", "50", "--history", "10", "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ModelClient.complete(stream=True)" in done.stdout
    assert "10 concurrent ModelClient calls" in out.read_text()
