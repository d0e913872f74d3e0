"""The survey benchmark runs (two PDFs, no latency); its figures live in bench/RESULTS.md."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_survey_benchmark_prints_its_figures() -> None:
    args = ["--pdfs", "2", "--latency-ms", "0", "--length", "short"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.survey_pipeline", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["papers"] == 2 and figures["sections"] == 3
    # plan + 2 notes + outline + 3 sections + 3 checks
    assert figures["model_calls"] == 10
    assert figures["wall_s"] > 0 and figures["critical_path_s"] > 0
    assert set(figures["stage_done_at_s"]) >= {"plan", "gather", "read", "assemble"}
