"""Medians over rounds, and paired ratios: Leaflab / each peer, round by round."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict

from bench.peers.measure import Run

METRICS = ("makespan_s", "cpu_ms_per_step", "wal_bytes_per_step", "rows_per_step")
# Shown, not compared: the whole cluster's WAL over the run, other sessions' included.
SHOWN = (*METRICS, "cluster_wal_bytes_per_step")


def figures(run: Run) -> dict[str, float]:
    return {
        "makespan_s": run.makespan,
        "cpu_ms_per_step": 1000 * sum(run.cpu.values()) / run.steps,
        "wal_bytes_per_step": (run.wal.ours if run.wal.ours is not None else run.wal.cluster)
        / run.steps,
        "cluster_wal_bytes_per_step": run.wal.cluster / run.steps,
        "rows_per_step": sum(run.rows.values()) / run.steps,
    }


def report(rounds: list[dict[str, Run]], header: str) -> None:
    systems = list(dict.fromkeys(name for round_ in rounds for name in round_))
    medians = {
        name: {
            metric: statistics.median(figures(r[name])[metric] for r in rounds if name in r)
            for metric in SHOWN
        }
        for name in systems
    }
    print(header)
    if any(run.wal.ours is None for round_ in rounds for run in round_.values()):
        print("pg_walinspect unavailable: wal_bytes_per_step is the whole cluster's")
    print(f"\nmedians over {len(rounds)} round(s):")
    print(f"| system | {' | '.join(SHOWN)} | CPU ms/step by group | failed |")
    print(f"|---|{'---|' * len(SHOWN)}---|---|")
    for name in systems:
        runs = [r[name] for r in rounds if name in r]
        split = _split(runs)
        failed = sum(run.failed for run in runs)
        values = " | ".join(_fmt(medians[name][m]) for m in SHOWN)
        print(f"| {name} | {values} | {split} | {failed} |")
    print("\nrows written per step, by table (first round):")
    for name in systems:
        run = next(r[name] for r in rounds if name in r)
        top = sorted(run.rows.items(), key=lambda kv: -kv[1])
        print(f"  {name}: " + (", ".join(f"{t} {n / run.steps:.2f}" for t, n in top) or "none"))
    ratios = _paired_ratios(rounds, systems)
    if ratios:
        print("\npaired ratios, Leaflab / system (median of per-round ratios):")
        print(f"| Leaflab / | {' | '.join(METRICS)} |")
        print(f"|---|{'---|' * len(METRICS)}")
        for name, row in ratios.items():
            print(f"| {name} | {' | '.join(_fmt_ratio(row[m]) for m in METRICS)} |")
    print(json.dumps({"medians": medians, "leaflab_over": ratios}))


def _split(runs: list[Run]) -> str:
    per_group: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for group, seconds in run.cpu.items():
            per_group[group].append(1000 * seconds / run.steps)
    return ", ".join(f"{g} {statistics.median(v):.2f}" for g, v in per_group.items())


def _paired_ratios(rounds: list[dict[str, Run]], systems: list[str]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for name in systems:
        if name == "leaflab":
            continue
        pairs = [
            (figures(r["leaflab"]), figures(r[name]))
            for r in rounds
            if {"leaflab", name} <= r.keys()
        ]
        if not pairs:
            continue
        out[name] = {
            metric: statistics.median(
                ours[metric] / theirs[metric] if theirs[metric] else float("inf")
                for ours, theirs in pairs
            )
            for metric in METRICS
        }
    return out


def _fmt(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.2f}"


def _fmt_ratio(value: float) -> str:
    return "∞ (peer 0)" if value == float("inf") else f"{value:.2f}×"
