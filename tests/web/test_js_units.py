"""The browser code's unit tests (tests/web/js/, Node's test runner) run with the suite.

They check the page's event fold against the generated contracts.js, with no
browser: a fold that forgot a terminal status, or followed an event type no
worker publishes, turns this red.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="node is not installed (scripts/install.sh needs it)")
def test_node_unit_tests_pass() -> None:
    assert NODE is not None
    done = subprocess.run(  # noqa: S603 - the installed node on our own test files
        [NODE, "--test", "tests/web/js/"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "# fail 0" in done.stdout
