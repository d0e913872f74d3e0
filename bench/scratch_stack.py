"""A scratch Postgres database and a leased Redis db for one benchmark run.

Names are unique per run (label + pid + random) and the database is dropped at
the end, so two benchmark runs (or a benchmark and a test run) never share
data. The Redis db is leased like the test suite's (tests/fixtures/scratch.py):
``LEAFLAB_BENCH_REDIS_DBS`` (e.g. ``9`` or ``10-15``) narrows the dbs it may take.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import redis

from services.common.migrate import upgrade_to_head
from tests.fixtures.scratch import CANDIDATE_DBS, RedisDbLease, create_database, drop_database

PG_ADMIN = os.environ.get("LEAFLAB_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_BASE = os.environ.get("LEAFLAB_TEST_REDIS", "redis://127.0.0.1:6379")


@dataclass(frozen=True)
class ScratchStack:
    database_name: str
    database_url: str  # SQLAlchemy URL (postgresql+psycopg://…)
    redis_url: str


def _candidate_dbs() -> list[int]:
    spec = os.environ.get("LEAFLAB_BENCH_REDIS_DBS", "")
    if not spec:
        return list(CANDIDATE_DBS)
    out: list[int] = []
    for part in spec.split(","):
        low, _, high = part.partition("-")
        out += range(int(low), int(high or low) + 1)
    return out


@contextmanager
def scratch_stack(
    label: str, *, redis_db: bool = True, name: str | None = None
) -> Iterator[ScratchStack]:
    """A migrated database ``leaflab_bench_<label>_<pid>_<random>`` (or ``name``)
    and, unless ``redis_db`` is False, an empty leased Redis db; both gone afterwards."""
    name = name or f"leaflab_bench_{label}_{os.getpid()}_{secrets.token_hex(3)}"
    lease = RedisDbLease(REDIS_BASE)
    try:
        redis_url = ""
        if redis_db:
            redis_url = lease.url(lease.take_free(1, _candidate_dbs())[0])
            redis.Redis.from_url(redis_url).flushdb()
        url = create_database(PG_ADMIN, name)
        upgrade_to_head(url)
        yield ScratchStack(name, url, redis_url)
    finally:
        drop_database(PG_ADMIN, name)
        lease.release()
