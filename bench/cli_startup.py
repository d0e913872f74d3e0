"""Benchmark the `leaflab` CLI's start-up: wall time of short commands vs a bare interpreter.

Run: .venv/bin/python -m bench.cli_startup [--runs N] [--quick]
Each command runs N times as its own process (``sys.executable``, the repository
root as working directory, so this checkout's code is what runs), the commands
interleaved round by round so a burst of load on a shared machine hits them all
alike. Figures: the median wall time and CPU time (user + system, the
child's own rusage: less sensitive than wall time to waiting for a busy core)
of each, and their ratios to the baseline, a bare ``python -c pass`` started
the same way in the same rounds. None of them
makes a request: ``--help`` and ``--version`` answer before any. The goal
(issue 26): ``--version`` within 8× the baseline, ``jobs --help`` and
``watch --help`` in the same order. One JSON line at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEAFLAB = [sys.executable, "-m", "services.cli.main"]
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "leaflab --version": [*LEAFLAB, "--version"],
    "leaflab --help": [*LEAFLAB, "--help"],
    "leaflab jobs --help": [*LEAFLAB, "jobs", "--help"],
    "leaflab watch --help": [*LEAFLAB, "watch", "--help"],
    "leaflab submit --help": [*LEAFLAB, "submit", "--help"],
}
BASELINE = "python -c pass"


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv`` as its own process."""
    cpu_before = children_cpu_s()
    start = time.perf_counter()
    done = subprocess.run(  # noqa: S603 - our own interpreter and CLI
        argv, cwd=ROOT, capture_output=True, check=False
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}: {done.stderr[-2000:]!r}")
    return elapsed, children_cpu_s() - cpu_before


def measure(runs: int) -> dict[str, list[tuple[float, float]]]:
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for argv in COMMANDS.values():  # one untimed round: warm the page cache and .pyc files
        run_once(argv)
    for _ in range(runs):
        for name, argv in COMMANDS.items():
            samples[name].append(run_once(argv))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21, help="timed runs of each command")
    parser.add_argument("--quick", action="store_true", help="3 runs (the test's size)")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    load_before = os.getloadavg()[0]
    samples = measure(runs)
    base_wall = statistics.median(wall for wall, _ in samples[BASELINE])
    base_cpu = statistics.median(cpu for _, cpu in samples[BASELINE])
    load_after = os.getloadavg()[0]
    figures: dict[str, object] = {"runs": runs, "load_avg_1m": [load_before, load_after]}
    print(f"median of {runs} runs each, load average {load_before:.1f} -> {load_after:.1f}")
    print(f"{'command':<24} {'wall':>9} {'ratio':>6} {'min wall':>9} {'CPU':>9} {'ratio':>6}")
    for name, runs_of in samples.items():
        wall = statistics.median(w for w, _ in runs_of)
        cpu = statistics.median(c for _, c in runs_of)
        least = min(w for w, _ in runs_of)
        print(
            f"{name:<24} {wall * 1e3:7.1f}ms {wall / base_wall:5.1f}x {least * 1e3:7.1f}ms"
            f" {cpu * 1e3:7.1f}ms {cpu / base_cpu:5.1f}x"
        )
        figures[name] = {
            "wall_ms": round(wall * 1e3, 1),
            "wall_ratio": round(wall / base_wall, 2),
            "min_wall_ms": round(least * 1e3, 1),
            "cpu_ms": round(cpu * 1e3, 1),
            "cpu_ratio": round(cpu / base_cpu, 2),
        }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
