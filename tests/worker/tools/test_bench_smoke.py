"""The file-tools benchmark runs (figures are not checked: benchmarks are not tests)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_benchmark_runs_in_quick_mode() -> None:
    done = subprocess.run(
        [sys.executable, "bench/tools_files.py", "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "stopped by guard" in done.stdout
    assert "read_file first 2000 lines" in done.stdout
