"""A missing Chromium or network namespace fails the run; only an opt-out skips, and
the run's summary then says what was left out and why (tests/fixtures/opt_outs.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
from tests.fixtures.opt_outs import BROWSER, NETNS

def test_page():
    BROWSER.missing("chromium is not installed")

def test_partition():
    NETNS.missing("network namespaces are not available here: `ip netns add` failed")

def test_plain():
    pass
"""


def _run(tmp_path: Path, **opt_outs: str) -> subprocess.CompletedProcess[str]:
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAFLAB_SKIP_")}
    env.update(opt_outs, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + ["-p", "tests.fixtures.opt_outs", "--rootdir", str(tmp_path), str(probe)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_without_an_opt_out_a_missing_requirement_fails_the_run(tmp_path: Path) -> None:
    done = _run(tmp_path)
    assert done.returncode == 1, done.stdout
    assert "2 failed, 1 passed" in done.stdout
    assert "chromium is not installed: scripts/ensure_browser.sh" in done.stdout
    assert "or set LEAFLAB_SKIP_NETNS=1 to skip the partition fencing test" in done.stdout
    assert "switched off by an opt-out" not in done.stdout


def test_opt_outs_skip_their_tests_and_the_summary_names_each(tmp_path: Path) -> None:
    done = _run(tmp_path, LEAFLAB_SKIP_BROWSER="1", LEAFLAB_SKIP_NETNS="1")
    assert done.returncode == 0, done.stdout
    assert "1 passed, 2 skipped" in done.stdout
    assert "switched off by an opt-out (not tested)" in done.stdout, done.stdout
    summary = done.stdout.split("switched off by an opt-out (not tested)", 1)[1]
    assert "1 skipped: LEAFLAB_SKIP_BROWSER=1: the page tests in Chromium switched off" in summary
    assert "1 skipped: LEAFLAB_SKIP_NETNS=1: the partition fencing test switched off" in summary
