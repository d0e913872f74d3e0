"""Two runs on one machine never share a scratch database or Redis db."""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.conftest import PG_ADMIN_URL, REDIS_BASE
from tests.fixtures.scratch import (
    RedisDbLease,
    RedisDbTaken,
    create_database,
    drop_database,
    run_suffix,
)

# Dbs 13–15, which test runs lease last: these tests lease and free them quickly.
SPARE = range(13, 16)


def _exists(name: str) -> bool:
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        row = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone()
    return row is not None


def test_default_suffixes_differ_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LEAFLAB_TEST_DB_SUFFIX", raising=False)
    assert run_suffix() != run_suffix()
    monkeypatch.setenv("LEAFLAB_TEST_DB_SUFFIX", "x")
    assert run_suffix() == "x"


def test_scratch_database_is_dropped_even_with_a_client_connected() -> None:
    name = f"leaflab_scratch_{run_suffix()}_probe"
    url = create_database(PG_ADMIN_URL, name)
    assert url.endswith(f"/{name}") and _exists(name)
    with psycopg.connect(PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"):  # a client left open
        drop_database(PG_ADMIN_URL, name)
        assert not _exists(name)


def test_concurrent_leases_take_different_dbs() -> None:
    first, second = RedisDbLease(REDIS_BASE), RedisDbLease(REDIS_BASE)
    try:
        mine = first.take_free(1, SPARE)
        theirs = second.take_free(1, SPARE)
        assert mine != theirs
        with pytest.raises(RedisDbTaken, match=f"db {mine[0]} is leased"):
            second.take(mine[0])
    finally:
        first.release()
        second.release()
    again = RedisDbLease(REDIS_BASE)
    try:
        again.take(mine[0])  # released: free again
    finally:
        again.release()


def test_a_dead_runs_lease_expires_and_a_live_one_is_kept_alive() -> None:
    dead, live = RedisDbLease(REDIS_BASE, ttl_s=3), RedisDbLease(REDIS_BASE, ttl_s=3)
    other = RedisDbLease(REDIS_BASE)
    try:
        held = dead.take_free(1, SPARE)[0]
        dead._stop.set()  # as if killed -9: no more heartbeats, nothing released
        kept = live.take_free(1, [d for d in SPARE if d != held])[0]
        time.sleep(3.5)  # > TTL: only the heartbeat keeps ``live``'s lease
        other.take(held)
        with pytest.raises(RedisDbTaken):
            other.take(kept)
    finally:
        for lease in (dead, live, other):
            lease.release()
