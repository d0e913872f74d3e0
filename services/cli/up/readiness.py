"""When is the stack ready? When every service it started answers, not when it was started.

`leaflab up` prints "ready" only after the API, the library, the model
simulator (when it runs one) and every Celery worker answer; a request sent
right after that line is served, not refused by a service still loading.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
from celery import Celery


@dataclass(frozen=True)
class Check:
    """One thing that must answer; ``log`` is the log file to point at when it does not."""

    name: str
    probe: Callable[[], bool]
    log: str


def http_ok(url: str) -> Callable[[], bool]:
    def probe() -> bool:
        try:
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    return probe


def worker_node(name: str) -> str:
    """The Celery node name a worker started with ``-n NAME@%h`` answers to."""
    return f"{name}@{socket.gethostname()}"


def celery_workers_answer(app: Celery, nodes: list[str]) -> Callable[[], bool]:
    """All ``nodes`` answer a broadcast ping: they consume their queues."""

    def probe() -> bool:
        try:
            replies = app.control.ping(destination=nodes, timeout=1.0)
        except Exception:  # broker not reachable yet: not ready
            return False
        answered = {node for reply in replies for node in reply}
        return set(nodes) <= answered

    return probe


class NotReady(RuntimeError):
    """Some services did not answer in time; the message names them and their logs."""


def wait_ready(
    checks: list[Check],
    *,
    timeout_s: float,
    tick: Callable[[], bool],
    on_ready: Callable[[str], None] | None = None,
) -> bool:
    """Wait until every check passes. ``tick`` runs between rounds (supervision);
    it returns False to give up (the stack is stopping). Returns False then."""
    pending = list(checks)
    deadline = time.monotonic() + timeout_s
    while pending:
        still = []
        for check in pending:
            if check.probe():
                if on_ready is not None:
                    on_ready(check.name)
            else:
                still.append(check)
        pending = still
        if not pending:
            return True
        if not tick():
            return False
        if time.monotonic() > deadline:
            names = ", ".join(f"{c.name} (log: {c.log})" for c in pending)
            raise NotReady(f"not ready after {timeout_s:.0f}s: {names}")
        time.sleep(0.3)
    return True
