"""The research-tools benchmark runs and prints its figures (bench/RESULTS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_research_tools_benchmark_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.research_tools", "--requests", "5"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for key in (
        "guarded_fetch",
        "baseline_plain_httpx",
        "web_fetch_tool",
        "html_to_text_1mb",
        "baseline_selectolax_body_text_1mb",
        "pdf_text_4_pages",
    ):
        assert set(figures[key]) == {"p50_ms", "p95_ms"}, key
    assert figures["page_bytes"] > 900_000
