"""CPU seconds per process over a benchmark run, so each millisecond per step is attributed.

Wall time on a shared 2-core machine says little; CPU time (user + system,
from ``/proc`` through psutil) per process does not depend on what else runs.
Groups are named sets of pids, re-read at start and stop: a Postgres backend
that appears during the run is counted from zero, one that exits before the
end is lost (pooled connections live for the whole run, so few are).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import psutil
import psycopg

PidSource = Callable[[], list[int]]


def _cpu_s(pid: int) -> tuple[float, float] | None:
    """(user, system) CPU seconds."""
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return None
    return float(times.user), float(times.system)


def pids_of(*procs: psutil.Popen | int) -> PidSource:
    """Fixed processes (and their children at read time)."""

    def read() -> list[int]:
        out: list[int] = []
        for proc in procs:
            pid = proc if isinstance(proc, int) else proc.pid
            out.append(pid)
            try:
                out += [c.pid for c in psutil.Process(pid).children(recursive=True)]
            except psutil.Error:
                pass
        return out

    return read


def postgres_backends(admin_dsn: str, database: str) -> PidSource:
    """The server processes serving connections to ``database``."""

    def read() -> list[int]:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchall()
        return [int(r[0]) for r in rows]

    return read


@dataclass
class CpuLedger:
    groups: dict[str, PidSource]
    # Of each group's CPU seconds, those spent in the kernel (syscalls, lock hand-offs).
    system_s: dict[str, float] = field(default_factory=dict)
    _start: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)

    def start(self) -> None:
        self._start = {name: self._read(source) for name, source in self.groups.items()}

    def stop(self) -> dict[str, float]:
        """CPU seconds per group since ``start``."""
        used: dict[str, float] = {}
        for name, source in self.groups.items():
            before = self._start.get(name, {})
            now = self._read(source)
            user = sum(cpu[0] - before.get(pid, (0.0, 0.0))[0] for pid, cpu in now.items())
            system = sum(cpu[1] - before.get(pid, (0.0, 0.0))[1] for pid, cpu in now.items())
            used[name] = user + system
            self.system_s[name] = system
        return used

    @staticmethod
    def _read(source: PidSource) -> dict[int, tuple[float, float]]:
        out: dict[int, tuple[float, float]] = {}
        for pid in source():
            cpu = _cpu_s(pid)
            if cpu is not None:
                out[pid] = cpu
        return out
