"""Apply each guarantee mutation (catalog.py) in turn, run only its tests, and fail
if any mutation leaves them green.

Every edit is undone before the next one starts, on success, failure, Ctrl-C or
SIGTERM (the original bytes are restored in ``finally``); a mutation whose text
no longer matches the code counts as a failure (the catalog must be updated).

Usage: ``scripts/mutate.sh [-k SUBSTRING]`` (only mutations whose name contains it).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

from tests.mutations.catalog import MUTATIONS, Mutation

ROOT = Path(__file__).resolve().parents[2]
TEST_TIMEOUT_S = 300


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # runs the finally that restores the file


def run_one(mutation: Mutation) -> tuple[str, float]:
    """``killed`` (a test failed), ``SURVIVED``, ``ERROR`` (the run broke without a
    failing test) or ``STALE`` (the text no longer matches); and seconds taken."""
    path = ROOT / mutation.path
    original = path.read_bytes()
    text = original.decode()
    if text.count(mutation.old) != 1:
        return "STALE", 0.0
    started = time.monotonic()
    try:
        path.write_text(text.replace(mutation.old, mutation.new))
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LEAFLAB_ENV": "test"}
        try:
            result = subprocess.run(
                [*cmd, *mutation.tests],
                cwd=ROOT,
                env=env,
                capture_output=True,
                timeout=TEST_TIMEOUT_S,
                check=False,
            )
            # Killed means a test *failed*; a run that only errored (a broken fixture,
            # an import error) or collected nothing proves nothing about the guarantee.
            summary = result.stdout.decode(errors="replace").strip().splitlines()[-1:]
            failed = result.returncode == 1 and any(" failed" in line for line in summary)
            outcome = "killed" if failed else "SURVIVED" if result.returncode == 0 else "ERROR"
        except subprocess.TimeoutExpired:
            outcome = "killed"  # a hang under the mutation is the tests noticing it
    finally:
        path.write_bytes(original)
    return outcome, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", default="", help="only mutations whose name contains this")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminate)
    chosen = [m for m in MUTATIONS if args.k.lower() in m.name.lower()]
    failures = 0
    total = time.monotonic()
    for mutation in chosen:
        outcome, seconds = run_one(mutation)
        failures += outcome != "killed"
        print(f"{outcome:8} {seconds:6.1f}s  {mutation.name}", flush=True)
    took = time.monotonic() - total
    print(f"{len(chosen) - failures}/{len(chosen)} mutations killed in {took:.0f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
