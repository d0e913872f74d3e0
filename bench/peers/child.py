"""A peer's worker process: set up, say READY, run the batch on GO, print the result.

The runner measures this process from outside (its CPU, its database's backends,
WAL and rows), so set-up (connections, schema, a framework's launch) stays out of
the figures, as Leaflab's worker start and job creation do. Each peer module calls
``serve`` with a function that prepares and returns its batch.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

Batch = Callable[[], int]  # runs every job; returns how many failed


@dataclass(frozen=True)
class ChildArgs:
    dsn: str  # libpq URL of the peer's own scratch database ("" for floor 2)
    sim_url: str
    jobs: int
    threads: int
    pool: int  # database connections the peer may hold
    options: dict[str, str]
    # ``threads`` threads, started before READY and kept until exit (see ``serve``).
    executor: ThreadPoolExecutor | None = None


def child_argv(module: str, args: ChildArgs) -> list[str]:
    return [
        sys.executable, "-m", module, "--dsn", args.dsn, "--sim-url", args.sim_url,
        "--jobs", str(args.jobs), "--threads", str(args.threads), "--pool", str(args.pool),
        "--options", json.dumps(args.options),
    ]  # fmt: skip


def serve(prepare: Callable[[ChildArgs], Batch]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsn", default="")
    parser.add_argument("--sim-url", required=True)
    parser.add_argument("--jobs", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--pool", type=int, required=True)
    parser.add_argument("--options", default="{}")
    ns = parser.parse_args()
    # The threads live across the whole measured span: the CPU ledger reads a process
    # that has one thread left from its main thread's schedstat, which would drop the
    # CPU of worker threads that had exited before the last reading.
    executor = _started(ns.threads)
    options = json.loads(ns.options)
    args = ChildArgs(ns.dsn, ns.sim_url, ns.jobs, ns.threads, ns.pool, options, executor)
    batch = prepare(args)
    print("READY", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    failed = batch()
    makespan = time.perf_counter() - start
    print(json.dumps({"makespan": makespan, "failed": failed}), flush=True)
    sys.stdin.readline()  # the runner has read its counters; the process may now exit
    executor.shutdown()


def _started(threads: int) -> ThreadPoolExecutor:
    executor = ThreadPoolExecutor(threads)
    barrier = threading.Barrier(threads)
    for future in [executor.submit(barrier.wait) for _ in range(threads)]:
        future.result()
    return executor


def run_threads(args: ChildArgs, job: Callable[[int], None]) -> int:
    """Every job on the ``threads`` threads, as a worker's thread pool runs them."""
    assert args.executor is not None

    def guarded(number: int) -> bool:
        try:
            job(number)
            return True
        except Exception as exc:  # noqa: BLE001 - counted and shown, the batch goes on
            print(f"job {number} failed: {exc!r}", file=sys.stderr, flush=True)
            return False

    return sum(not ok for ok in args.executor.map(guarded, range(args.jobs)))
