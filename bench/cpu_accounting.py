"""CPU seconds per process over a benchmark run, so each millisecond per step is attributed.

Wall time on a shared 2-core machine says little; CPU time per process does not
depend on what else runs. A single-threaded process (a Postgres backend, Redis) is
read from ``/proc/<pid>/schedstat``, the scheduler's nanosecond run time: its
``stat`` counters move in whole 10 ms ticks, so a backend that opens mid-batch and
works 6 ms read 0 — unless its ticks exceed that by more than their error, which
means threads that have exited (their time is kept only in ``stat``). A
multi-threaded process is read from ``stat`` through psutil,
which also counts its exited threads (their ``schedstat`` is gone with them); over
a run its tick error is small against its total.
Groups are named sets of pids. They are re-read at start, at stop and every
``sample_s`` in between, keeping each process's last reading: a Postgres backend
that starts and exits during the run (a pool's overflow connection) is counted up
to its last sample instead of being lost, and one that appears is counted from
zero. Only a process that lives less than one sampling interval is missed;
``processes_seen`` says how many each group had, so churn shows.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil
import psycopg

PidSource = Callable[[], list[int]]
# stat's user and system counters each move in whole ticks (10 ms at USER_HZ=100).
TICK_ERROR_S = 0.02


def _cpu_s(pid: int) -> tuple[float, float] | None:
    """(total, system) CPU seconds; the total to the nanosecond where the process has one
    thread, the system share always in ticks (schedstat does not split it)."""
    try:
        proc = psutil.Process(pid)
        times = proc.cpu_times()
        threads = proc.num_threads()
    except psutil.Error:
        return None
    total = float(times.user) + float(times.system)
    if threads == 1:
        precise = _schedstat_s(pid)
        # schedstat is the main thread's alone: a process whose other threads
        # have exited keeps their time only in stat's ticks. Trust schedstat
        # only where the ticks agree with it to their own error.
        if precise is not None and total - precise <= TICK_ERROR_S:
            total = precise
    return total, float(times.system)


def _schedstat_s(pid: int) -> float | None:
    """The scheduler's run time of ``pid``'s main thread, in seconds (None: unreadable)."""
    try:
        with open(f"/proc/{pid}/schedstat") as fh:
            return int(fh.read().split()[0]) / 1e9
    except (OSError, ValueError, IndexError):
        return None


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


def postgres_shared(admin_dsn: str) -> PidSource:
    """The server's own processes (postmaster, WAL writer, checkpointer …), which work
    for every database: forking backends, flushing the WAL that commits wrote."""

    def read() -> list[int]:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname IS NULL"
                " AND backend_type <> 'client backend'"
            ).fetchall()
        pids = [int(r[0]) for r in rows]
        try:
            pids.append(psutil.Process(pids[0]).ppid())  # the postmaster
        except (IndexError, psutil.Error):
            pass
        return pids

    return read


@dataclass
class CpuLedger:
    groups: dict[str, PidSource]
    # Seconds between readings while running; 0 reads only at start and stop.
    sample_s: float = 0.0
    # Of each group's CPU seconds, those spent in the kernel (syscalls, lock hand-offs).
    system_s: dict[str, float] = field(default_factory=dict)
    # How many distinct processes each group had during the run.
    processes_seen: dict[str, int] = field(default_factory=dict)
    _start: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    _last: dict[str, dict[int, tuple[float, float]]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _sampler: threading.Thread | None = None

    def start(self) -> None:
        self._start = {name: self._read(source) for name, source in self.groups.items()}
        self._last = {name: dict(readings) for name, readings in self._start.items()}
        if self.sample_s > 0:
            self._stop.clear()
            self._sampler = threading.Thread(target=self._sample, daemon=True)
            self._sampler.start()

    def stop(self) -> dict[str, float]:
        """CPU seconds per group since ``start``."""
        if self._sampler is not None:
            self._stop.set()
            self._sampler.join()
            self._sampler = None
        self._take_readings()
        used: dict[str, float] = {}
        for name in self.groups:
            before = self._start.get(name, {})
            now = self._last[name]
            total = sum(cpu[0] - before.get(pid, (0.0, 0.0))[0] for pid, cpu in now.items())
            system = sum(cpu[1] - before.get(pid, (0.0, 0.0))[1] for pid, cpu in now.items())
            used[name] = total
            self.system_s[name] = system
            self.processes_seen[name] = len(now)
        return used

    def _sample(self) -> None:
        while not self._stop.wait(self.sample_s):
            self._take_readings()

    def _take_readings(self) -> None:
        for name, source in self.groups.items():
            self._last.setdefault(name, {}).update(self._read(source))

    @staticmethod
    def _read(source: PidSource) -> dict[int, tuple[float, float]]:
        out: dict[int, tuple[float, float]] = {}
        for pid in source():
            cpu = _cpu_s(pid)
            if cpu is not None:
                out[pid] = cpu
        return out
