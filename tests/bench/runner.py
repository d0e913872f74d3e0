"""Running one benchmark the way a person would (`python -m bench.X ...` from the
repository root) and failing the test with its output when it does not exit 0."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_bench(
    module: str, *args: str, timeout_s: float = 300, env: dict[str, str] | None = None
) -> str:
    """The benchmark's stdout; ``module`` is a dotted name or a script path."""
    target = [module] if module.endswith(".py") else ["-m", module]
    done = subprocess.run(  # noqa: S603 - our own interpreter and benchmark
        [sys.executable, *target, *args],
        cwd=ROOT,
        env={**os.environ, **env} if env else None,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    return done.stdout


def last_json(stdout: str) -> Any:
    """The figures a benchmark prints as JSON on its last line."""
    return json.loads(stdout.strip().splitlines()[-1])


def json_lines(stdout: str) -> list[Any]:
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
