"""The benchmarks' CPU ledger reads a short-lived, single-threaded process to the
millisecond (a Postgres backend that works 6 ms mid-batch read 0 in 10 ms ticks)."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.cpu_accounting import CpuLedger, pids_of

BURN = (
    "import sys, time\n"
    "sys.stdin.readline()\n"
    "t = time.process_time()\n"
    "while time.process_time() - t < 0.006: pass\n"
    "sys.stdin.readline()\n"
)


def test_six_milliseconds_of_work_read_as_six_not_zero_or_ten() -> None:
    child = subprocess.Popen([sys.executable, "-c", BURN], stdin=subprocess.PIPE, text=True)
    assert child.stdin is not None
    try:
        time.sleep(1.0)  # the interpreter's start-up is done before the ledger starts
        ledger = CpuLedger({"child": pids_of(child.pid)})
        ledger.start()
        child.stdin.write("\n")
        child.stdin.flush()
        time.sleep(0.5)
        used = ledger.stop()["child"]
    finally:
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait(timeout=30)
    # Ticks read 0.00 or 0.01 exactly; the scheduler's clock reads the 6 ms (plus a read).
    assert 0.0055 <= used <= 0.0095, used


THREAD_THEN_EXIT = (
    "import sys, threading, time\n"
    "sys.stdin.readline()\n"
    "def burn():\n"
    "    t = time.thread_time()\n"
    "    while time.thread_time() - t < 0.2: pass\n"
    "worker = threading.Thread(target=burn)\n"
    "worker.start(); worker.join()\n"
    "print('done', flush=True)\n"
    "sys.stdin.readline()\n"
)


def test_a_thread_that_has_exited_still_counts() -> None:
    """One thread left (the main one, idle) after a worker thread burnt 200 ms:
    its schedstat says ~0, the process's own counters keep the 200 ms."""
    child = subprocess.Popen(
        [sys.executable, "-c", THREAD_THEN_EXIT],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        time.sleep(1.0)
        ledger = CpuLedger({"child": pids_of(child.pid)})
        ledger.start()
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "done"
        used = ledger.stop()["child"]
    finally:
        child.stdin.write("\n")
        child.stdin.flush()
        child.wait(timeout=30)
    assert used >= 0.17, used
