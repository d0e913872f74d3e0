"""The sandbox exec profile runs (tiny sizes; figures: bench/RESULTS.md).

Needs Docker and the sandbox image, like tests/sandbox (``make test`` builds it).
"""

from __future__ import annotations

from tests.bench.runner import run_bench
from tests.conftest import Stack


def test_sandbox_exec_profile_prints_its_phases_and_counts(stack: Stack) -> None:
    stdout = run_bench("bench/sandbox_exec_profile.py", "--n", "2", timeout_s=600)
    assert "in process, warm python" in stdout
    assert "runner round trip" in stdout
    assert "Postgres statements" in stdout
    assert "Redis commands per exec" in stdout
