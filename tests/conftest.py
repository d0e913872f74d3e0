"""Shared test fixtures: real PostgreSQL and Redis, one fresh database per run.

Each test run creates its own database (``leaflab_test_<suffix>``, dropped at
the end) and leases two Redis dbs, so parallel runs on one machine never
collide (tests/fixtures/scratch.py):

- ``LEAFLAB_TEST_DB_SUFFIX``: the database suffix; default pid + random.
- ``LEAFLAB_TEST_REDIS_DB`` / ``LEAFLAB_TEST_REDIS_ISOLATED_DB``: Redis db numbers
  to use (the second defaults to the first + 1, 15 wraps to 1); unset, the run leases two free
  dbs of 1–15. A db leased by another live run stops this one with a clear error.

A missing service fails the run loudly instead of skipping; so do a missing Chromium
or missing network namespaces, unless opted out (tests/fixtures/opt_outs.py).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import build_engine, build_sessionmaker
from services.common.migrate import upgrade_to_head
from services.common.settings import get_settings
from tests.fixtures.scratch import (
    RedisDbLease,
    RedisDbTaken,
    create_database,
    drop_database,
    run_suffix,
)

PG_ADMIN_URL = os.environ.get(
    "LEAFLAB_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_BASE = os.environ.get("LEAFLAB_TEST_REDIS", "redis://127.0.0.1:6379")
SUFFIX = run_suffix()


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def _require(host: str, port: int, what: str) -> None:
    if not _port_open(host, port):
        pytest.exit(
            f"{what} is not reachable on {host}:{port}; run `make test` "
            "(it starts the services) or start it by hand",
            returncode=3,
        )


@dataclass(frozen=True)
class Stack:
    database_url: str
    redis_url: str


@dataclass(frozen=True)
class RedisDbs:
    main: str  # what LEAFLAB_REDIS_URL points at
    isolated: str  # see ``isolated_redis_url``


@pytest.fixture(scope="session")
def redis_dbs() -> Iterator[RedisDbs]:
    _require("127.0.0.1", 6379, "Redis")
    lease = RedisDbLease(REDIS_BASE)
    try:
        chosen = os.environ.get("LEAFLAB_TEST_REDIS_DB")
        if chosen is None:
            main, isolated = lease.take_free(2)
        else:
            main = int(chosen)
            isolated = int(os.environ.get("LEAFLAB_TEST_REDIS_ISOLATED_DB", main % 15 + 1))
            lease.take(main)
            lease.take(isolated)
    except RedisDbTaken as exc:
        lease.release()
        pytest.exit(f"{exc}: unset LEAFLAB_TEST_REDIS_DB or pick other dbs", returncode=3)
    yield RedisDbs(lease.url(main), lease.url(isolated))
    lease.release()


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory, redis_dbs: RedisDbs) -> Iterator[Stack]:
    _require("127.0.0.1", 5432, "PostgreSQL")
    name = f"leaflab_test_{SUFFIX}"
    database_url = create_database(PG_ADMIN_URL, name)
    redis_url = redis_dbs.main
    redis.Redis.from_url(redis_url).flushdb()
    home = tmp_path_factory.mktemp("leaflab_home")
    os.environ.update(
        {
            "LEAFLAB_ENV": "test",
            "LEAFLAB_DATABASE_URL": database_url,
            "LEAFLAB_REDIS_URL": redis_url,
            "LEAFLAB_HOME": str(home),
            # Suites hammer the API with one key; tests/api/test_rate_limits.py
            # turns the per-key limit on for its own apps.
            "LEAFLAB_RATE_LIMIT_PER_S": "0",
            # No OpenAlex / Crossref lookups from a test (the public internet is not
            # one's): tests/library/test_metadata_lookup.py points them at recorded records.
            "LEAFLAB_METADATA_LOOKUP": "false",
        }
    )
    get_settings.cache_clear()
    upgrade_to_head(database_url)
    yield Stack(database_url=database_url, redis_url=redis_url)
    drop_database(PG_ADMIN_URL, name)


@pytest.fixture(scope="session")
def isolated_redis_url(stack: Stack, redis_dbs: RedisDbs) -> str:
    """A second, empty Redis db for tests that push fake messages onto real queue
    names or run an in-process Celery worker: long-lived consumers started by
    other test modules (library, sandbox) must never see those messages."""
    redis.Redis.from_url(redis_dbs.isolated).flushdb()
    return redis_dbs.isolated


@pytest.fixture(scope="session")
def engine(stack: Stack) -> Iterator[Engine]:
    eng = build_engine(stack.database_url, pool_size=5)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def session_factory(engine: Engine) -> sessionmaker[Session]:
    return build_sessionmaker(engine)


@pytest.fixture
def unique() -> str:
    """A short unique token for building test data that never collides."""
    return uuid.uuid4().hex[:10]


# opt_outs: the end-of-run list of tests a LEAFLAB_SKIP_…=1 opt-out switched off.
pytest_plugins = ["tests.fixtures.processes", "tests.fixtures.opt_outs"]
