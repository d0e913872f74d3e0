"""`python -m bench.peers --help` works without the bench extra (DBOS, LangGraph):
the suite and CI do not install it, and a peer whose package is missing is skipped."""

from __future__ import annotations

import subprocess
import sys

from tests.bench.runner import ROOT, run_bench

NOT_IMPORTED = """
import runpy, sys
sys.argv = ["bench.peers", "--help"]
try:
    runpy.run_module("bench.peers", run_name="__main__")
except SystemExit as done:
    assert done.code == 0, done.code
heavy = {"dbos", "langgraph", "psycopg_pool", "services"} & {m.split(".")[0] for m in sys.modules}
assert not heavy, heavy
"""


def test_help_needs_no_peer_package() -> None:
    out = run_bench("bench.peers", "--help", timeout_s=60)
    assert "--jobs" in out and "--rounds" in out and "--latency-ms" in out
    done = subprocess.run(  # noqa: S603 - our own interpreter
        [sys.executable, "-c", NOT_IMPORTED], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_missing_peer_package_is_named() -> None:
    from bench.peers import runner

    runner.NEEDS["fake"] = ("no_such_module_for_peers",)
    try:
        assert "no_such_module_for_peers is not installed" in (runner.missing("fake") or "")
        assert runner.missing("floor1") is None
    finally:
        del runner.NEEDS["fake"]
