"""CPU seconds per role of a running `leaflab up` stack, read from its process tree.

`leaflab up` runs every process of the stack (embedded Postgres and its backends,
Redis, the API, the workers, the library service, the model simulator) below its
own process, so the tree under it is the whole stack; each process is assigned a
role by its command line. The model simulator is reported apart: it stands for
the GPU server, outside Leaflab. On a machine with ``cores`` cores a batch can
finish no sooner than the stack's CPU seconds / cores — the bound the
makespan is read against.
"""

from __future__ import annotations

import psutil

from bench.cpu_accounting import CpuLedger, PidSource

# Command-line fragments → role, first match wins.
ROLES: list[tuple[str, str]] = [
    ("services.model_sim", "model simulator (apart)"),
    ("postgres", "postgres"),
    ("redis-server", "redis"),
    ("services.api.app", "api"),
    ("services.library.app", "library"),
    ("services.worker.app", "agent workers"),
    ("services.sandbox", "sandbox worker"),
]
OTHER = "leaflab up + other"
SIMULATOR = ROLES[0][1]


def role_of(cmdline: list[str]) -> str:
    line = " ".join(cmdline)
    for fragment, role in ROLES:
        if fragment in line:
            return role
    return OTHER


def _tree(root: int) -> list[psutil.Process]:
    try:
        top = psutil.Process(root)
        return [top, *top.children(recursive=True)]
    except psutil.Error:
        return []


def _role_source(root: int, role: str) -> PidSource:
    def read() -> list[int]:
        pids = []
        for proc in _tree(root):
            try:
                if role_of(proc.cmdline()) == role:
                    pids.append(proc.pid)
            except psutil.Error:
                continue
        return pids

    return read


def stack_ledger(root: int, sample_s: float = 0.25) -> CpuLedger:
    """A ledger with one group per role under ``root`` (sampled: Postgres backends
    and Celery's children come and go during a batch)."""
    roles = [role for _, role in ROLES] + [OTHER]
    return CpuLedger({role: _role_source(root, role) for role in roles}, sample_s=sample_s)


def leaflab_cpu_s(used: dict[str, float]) -> float:
    """The stack's own CPU seconds: every role but the simulator."""
    return sum(seconds for role, seconds in used.items() if role != SIMULATOR)
