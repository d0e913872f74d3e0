"""Executions in flight per worker, so that a dead worker's callers hear of it at once.

A sandbox worker killed mid-exec answers nothing (its message was acked
early, so nobody else runs it either): its caller would wait out the whole
timeout and then learn only that nobody answered. So each worker lists its
running execs in a Redis hash (Celery task id → exec key) next to its
heartbeat. Another worker's janitor that finds the owner dead marks each of
those execs interrupted in the ledger and answers its task with that result:
the caller gets ``sandbox_interrupted`` within a janitor round.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import redis

from services.common.contracts import keys
from services.sandbox.owners import owner_alive


class InFlight:
    """One worker's list of running execs, and the lists other workers left behind."""

    def __init__(self, client: redis.Redis, owner: str) -> None:
        self.redis = client
        self.owner = owner
        self.key = keys.sandbox_inflight(owner)

    def add(self, task_id: str, exec_key: str) -> None:
        self.redis.hset(self.key, task_id, exec_key)

    def remove(self, task_id: str) -> None:
        self.redis.hdel(self.key, task_id)

    def clear(self) -> None:
        self.redis.delete(self.key)

    def orphaned(self, alive: Callable[[str], bool]) -> Iterator[tuple[str, str, str]]:
        """(owner, task id, exec key) of every exec whose worker is gone."""
        for raw in self.redis.scan_iter(match=f"{keys.SANDBOX_INFLIGHT_PREFIX}*", count=200):
            key = raw.decode() if isinstance(raw, bytes) else str(raw)
            owner = key.removeprefix(keys.SANDBOX_INFLIGHT_PREFIX)
            if owner == self.owner or owner_alive(owner, alive):
                continue
            entries = self.redis.hgetall(key)
            for task_id, exec_key in entries.items():
                yield owner, _text(task_id), _text(exec_key)

    def claim_orphan(self, owner: str, task_id: str) -> bool:
        """Take an orphaned exec off its dead owner's list; False if another janitor did."""
        return bool(self.redis.hdel(keys.sandbox_inflight(owner), task_id))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
