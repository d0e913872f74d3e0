"""Apply each guarantee mutation (catalog.py), run only its tests, and fail if any
mutation leaves them green.

Each mutation runs in its own scratch copy of the tree (scratch.py): the working
tree is never edited, so Ctrl-C, SIGTERM or even ``kill -9`` of this run cannot
leave a mutation behind, and ``--jobs`` mutations run side by side. On Ctrl-C or
SIGTERM the running test processes get SIGINT (their fixtures tear down), then
SIGKILL, and the copies are removed. Before anything runs, every mutation's text
is checked against the code: one that no longer matches is reported ``STALE``
and fails the run (the catalog must be updated), and a working tree carrying a
mutation marker makes the run refuse to start.

Usage: ``scripts/mutate.sh [-k SUBSTRING] [--jobs N] [--no-control]``. ``--no-control``
is for the test command after a full pytest run of the same tree passed: that run
already showed every selection green unmutated, and the control is the stage's
longest job.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from tests.mutations.catalog import MUTATIONS, Mutation, control
from tests.mutations.scratch import (
    Stale,
    check_applies,
    leftover_markers,
    make_copy,
    scratch_of,
    tree_files,
)

ROOT = Path(__file__).resolve().parents[2]
# A selection that hangs under its mutation counts as noticing it; the bound keeps
# a hung one from eating the run's time budget.
TEST_TIMEOUT_S = 240
# The control runs every selection in one pytest (about 6 minutes alone here, more
# beside the mutations): it gets its own bound, and running past it is a failure,
# never a kill (a hung control proves nothing about any mutation).
CONTROL_TIMEOUT_S = 1500
INTERRUPT_GRACE_S = 15


@dataclass(frozen=True)
class Outcome:
    # killed | SURVIVED | ERROR | STALE | INTERRUPTED; the control: passed | CONTROL FAILED
    verdict: str
    seconds: float
    detail: str  # the failing test (killed), else why

    @property
    def ok(self) -> bool:
        return self.verdict in ("killed", "passed")


class Running:
    """The live test processes, so an interrupt can stop every one of them."""

    def __init__(self) -> None:
        self._procs: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()
        self.stopping = threading.Event()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)
        if self.stopping.is_set():
            self._signal(proc, signal.SIGKILL)

    def discard(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    @staticmethod
    def _signal(proc: subprocess.Popen[bytes], signum: int) -> None:
        try:
            os.killpg(proc.pid, signum)
        except ProcessLookupError:
            pass

    def stop_all(self) -> None:
        self.stopping.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            self._signal(proc, signal.SIGINT)  # pytest tears its fixtures down
        deadline = time.monotonic() + INTERRUPT_GRACE_S
        for proc in procs:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                self._signal(proc, signal.SIGKILL)


def _summary(stdout: str) -> tuple[bool, str]:
    """(a test failed, the first failing test) from pytest's ``-q`` output."""
    lines = stdout.strip().splitlines()
    failed = any(" failed" in line for line in lines[-1:])
    first = next((line for line in lines if line.startswith("FAILED ")), "")
    return failed, first.removeprefix("FAILED ")[:200]


def is_control(mutation: Mutation) -> bool:
    return not mutation.path


def _tail(text: str, returncode: int) -> str:
    """The first failing or erroring test and pytest's last line."""
    lines = text.strip().splitlines()
    bad = [line for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return f"exit {returncode}: " + " | ".join(bad[:2] + lines[-1:])[:400]


def run_one(mutation: Mutation, files: list[str], running: Running) -> Outcome:
    started = time.monotonic()
    if running.stopping.is_set():
        return Outcome("INTERRUPTED", 0.0, "not started")
    try:
        scratch = make_copy(ROOT, files, mutation)
    except Stale as exc:
        return Outcome("STALE", 0.0, str(exc))
    try:
        env = {**os.environ, "PYTHONPATH": str(scratch), "LEAFLAB_ENV": "test"}
        stop_first = [] if is_control(mutation) else ["-x"]
        cmd = [sys.executable, "-m", "pytest", *stop_first, "-q", "-p", "no:cacheprovider", "-rfE"]
        proc = subprocess.Popen(
            [*cmd, *mutation.tests],
            cwd=scratch,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: stopped as one, spared a terminal's ^C
        )
        running.add(proc)
        bound = CONTROL_TIMEOUT_S if is_control(mutation) else TEST_TIMEOUT_S
        try:
            out, _ = proc.communicate(timeout=bound)
        except subprocess.TimeoutExpired:
            Running._signal(proc, signal.SIGKILL)
            proc.communicate()
            verdict = "CONTROL FAILED" if is_control(mutation) else "killed"
            return Outcome(verdict, time.monotonic() - started, f"hung > {bound} s")
        finally:
            running.discard(proc)
        took = time.monotonic() - started
        if running.stopping.is_set():
            return Outcome("INTERRUPTED", took, "stopped")
        text = out.decode(errors="replace")
        failed, first = _summary(text)
        # Killed means a test *failed*; a run that only errored (a broken fixture,
        # an import error) or collected nothing proves nothing about the guarantee.
        if is_control(mutation):
            if proc.returncode == 0:
                return Outcome("passed", took, text.strip().splitlines()[-1][:200])
            return Outcome("CONTROL FAILED", took, _tail(text, proc.returncode))
        if proc.returncode == 1 and failed:
            return Outcome("killed", took, first)
        verdict = "SURVIVED" if proc.returncode == 0 else "ERROR"
        return Outcome(verdict, took, _tail(text, proc.returncode))
    finally:
        shutil.rmtree(scratch_of(scratch), ignore_errors=True)


def _terminate(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds main, which stops the tests and cleans up


def preflight(chosen: list[Mutation], files: list[str]) -> list[str]:
    """Problems that stop the run before it starts."""
    problems = [f"{name} carries a mutation marker" for name in leftover_markers(ROOT, files)]
    for mutation in chosen:
        try:
            check_applies(ROOT, mutation)
        except Stale as exc:
            problems.append(f"STALE {mutation.name}: {exc}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-k", default="", help="only mutations whose name contains this")
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("LEAFLAB_MUTATION_JOBS", "3")),
        help="mutations run side by side (default 3, LEAFLAB_MUTATION_JOBS)",
    )
    parser.add_argument(
        "--no-control",
        action="store_true",
        help="skip the control (only after a full, passing pytest run of this tree)",
    )
    args = parser.parse_args()
    # Explicitly: a shell starts background commands with SIGINT ignored, and the
    # run must stop (and clean up) on ^C wherever it was started from.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGHUP, _terminate)
    chosen = [m for m in MUTATIONS if args.k.lower() in m.name.lower()]
    files = tree_files(ROOT)
    problems = preflight(chosen, files)
    if problems:
        for problem in problems:
            print(f"mutations: {problem}", file=sys.stderr)
        print("mutations: refusing to start; fix tests/mutations/catalog.py or the tree")
        return 1
    # The control first: the longest job, and the one whose failure voids every kill.
    jobs = [control(tuple(chosen)), *chosen] if chosen and not args.no_control else chosen
    running = Running()
    results: dict[str, Outcome] = {}
    total = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    try:
        pending: dict[Future[Outcome], Mutation] = {
            pool.submit(run_one, m, files, running): m for m in jobs
        }
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                mutation = pending.pop(future)
                outcome = results[mutation.name] = future.result()
                print(f"{outcome.verdict:8} {outcome.seconds:6.1f}s  {mutation.name}", flush=True)
                print(f"{'':17}{outcome.detail}", flush=True)
    except BaseException:
        running.stop_all()
        print("mutations: interrupted; test processes stopped, scratch copies removed")
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    took = time.monotonic() - total
    bad = [name for name, outcome in results.items() if not outcome.ok]
    killed = sum(results[m.name].verdict == "killed" for m in chosen if m.name in results)
    control_ok = all(o.verdict == "passed" for n, o in results.items() if n.startswith("control"))
    control_said = (
        "the full pytest run was the control"
        if args.no_control
        else f"control {'passed' if control_ok else 'FAILED'}"
    )
    print(
        f"mutations: {killed}/{len(chosen)} killed in {took:.0f} s "
        f"({control_said}, --jobs {args.jobs})"
    )
    for name in bad:
        print(f"mutations: {results[name].verdict}: {name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
