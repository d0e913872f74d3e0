"""The parse + chunk benchmark runs on two shared PDFs (figures: bench/RESULTS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.library.conftest import PDF_DIR

ROOT = Path(__file__).resolve().parents[2]


def test_library_parsing_benchmark_prints_its_figures() -> None:
    argv = ["--pdfs", str(PDF_DIR), "--limit", "2", "--rounds", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "bench.library_parsing", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["pdfs"] == 2
    for name in ("bare", "pool", "process_per_pdf"):
        assert figures[name]["pages"] > 0 and figures[name]["pages_per_cpu_s"] > 0
    assert figures["pool"]["chunks"] == figures["process_per_pdf"]["chunks"] > 0
    assert figures["pool_vs_bare_per_cpu"] > 0
