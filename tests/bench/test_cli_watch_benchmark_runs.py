"""The `leaflab watch` rendering benchmark runs and reports its figures (bench/RESULTS.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cli_watch_benchmark_prints_its_figures() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.cli_watch_render", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["events"] > 200
    for view in ("plain_baseline", "rich_live"):
        assert set(figures[view]) == {"us_per_event", "events_per_cpu_s", "bytes_per_event"}
        assert figures[view]["bytes_per_event"] > 0
    assert set(figures["live_frame"]) == {"ms_per_frame", "cpu_share_at_8_fps"}
