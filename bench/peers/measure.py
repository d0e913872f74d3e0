"""What one system's batch cost: CPU per process group, WAL bytes, rows written.

WAL is the system's own database's share of the span's records (bench/peers/wal.py),
with the cluster's total beside it: the local Postgres is shared with whatever else
runs on the machine, so the runner also runs one system at a time.
Rows are ``n_tup_ins + n_tup_upd`` over the system's own scratch database, read
once its connections have closed, since a backend reports its counts at exit.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from bench.cpu_accounting import CpuLedger, PidSource, pids_of, postgres_backends
from bench.peers.child import ChildArgs, child_argv
from bench.peers.wal import WalMeter, WalSpan
from bench.peers.workload import STEPS
from bench.scratch_stack import PG_ADMIN

STATS_SETTLE_S = 1.5


@dataclass
class Run:
    system: str
    makespan: float  # s
    failed: int
    steps: int
    cpu: dict[str, float]  # CPU s per process group
    wal: WalSpan
    rows: dict[str, int]  # rows inserted or updated, per table


def libpq_url(sqlalchemy_url: str) -> str:
    return sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://", 1)


def _rows_written(dsn: str) -> dict[str, int]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT schemaname || '.' || relname, n_tup_ins + n_tup_upd FROM pg_stat_user_tables"
        ).fetchall()
    return {str(name): int(count) for name, count in rows}


class Window:
    """The measured span of one batch: start before the first job, stop after the last."""

    def __init__(self, groups: dict[str, PidSource], dsn: str) -> None:
        # Sampled while running so that a backend exiting mid-batch is still counted.
        self._ledger = CpuLedger(groups, sample_s=0.2)
        self._dsn = dsn
        self._rows: dict[str, int] = {}
        self._wal = WalMeter(dsn)

    def start(self) -> None:
        # A backend reports its counts when idle for a second at most, or at exit: the
        # set-up's rows (a framework's migrations) are counted before the batch, not in it.
        time.sleep(STATS_SETTLE_S)
        self._rows = _rows_written(self._dsn)
        self._wal.start()
        self._ledger.start()

    def stop(self) -> tuple[dict[str, float], WalSpan]:
        """CPU s per group and WAL written since ``start``."""
        cpu = self._ledger.stop()
        return cpu, self._wal.stop()

    def rows(self) -> dict[str, int]:
        """Rows written per table since ``start``; call once the system's connections
        are closed."""
        time.sleep(STATS_SETTLE_S)
        now = _rows_written(self._dsn)
        grown = {name: count - self._rows.get(name, 0) for name, count in now.items()}
        return {name: count for name, count in grown.items() if count}


def run_child(system: str, module: str, args: ChildArgs, database: str, logs: Path) -> Run:
    """Start a peer's worker process, measure its batch from outside, and stop it."""
    log = open(logs / f"{system}.log", "ab")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        child_argv(module, args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        if proc.stdout.readline().strip() != "READY":
            raise SystemExit(f"{system} did not start; see {logs / f'{system}.log'}")
        groups = {"workers": pids_of(proc.pid), "postgres": postgres_backends(PG_ADMIN, database)}
        window = Window(groups, args.dsn)
        window.start()
        proc.stdin.write("GO\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        cpu, wal = window.stop()
        if not line:
            raise SystemExit(f"{system} ended mid-batch; see {logs / f'{system}.log'}")
        result = json.loads(line)
        proc.stdin.write("EXIT\n")
        proc.stdin.close()
        proc.wait(60)
        rows = window.rows()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()
    steps = args.jobs * len(STEPS)
    return Run(system, result["makespan"], result["failed"], steps, cpu, wal, rows)
