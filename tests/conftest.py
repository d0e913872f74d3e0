"""Shared test fixtures: real PostgreSQL and Redis, one fresh database per run.

Each test run creates its own database (``leaflab_test_<suffix>``) and Redis
db index, so parallel runs by different people on one machine never collide.
Under CI a missing service fails the run loudly instead of skipping.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
import redis
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import build_engine, build_sessionmaker
from services.common.migrate import upgrade_to_head
from services.common.settings import get_settings

PG_ADMIN_URL = os.environ.get(
    "LEAFLAB_TEST_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres"
)
REDIS_BASE = os.environ.get("LEAFLAB_TEST_REDIS", "redis://127.0.0.1:6379")
SUFFIX = os.environ.get("LEAFLAB_TEST_DB_SUFFIX", "main")
REDIS_DB = int(os.environ.get("LEAFLAB_TEST_REDIS_DB", "9"))


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


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    _require("127.0.0.1", 5432, "PostgreSQL")
    _require("127.0.0.1", 6379, "Redis")
    name = f"leaflab_test_{SUFFIX}"
    with psycopg.connect(PG_ADMIN_URL, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
            (name,),
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    database_url = f"{base}/{name}"
    redis_url = f"{REDIS_BASE}/{REDIS_DB}"
    redis.Redis.from_url(redis_url).flushdb()
    home = tmp_path_factory.mktemp("leaflab_home")
    os.environ.update(
        {
            "LEAFLAB_ENV": "test",
            "LEAFLAB_DATABASE_URL": database_url,
            "LEAFLAB_REDIS_URL": redis_url,
            "LEAFLAB_HOME": str(home),
        }
    )
    get_settings.cache_clear()
    upgrade_to_head(database_url)
    yield Stack(database_url=database_url, redis_url=redis_url)


@pytest.fixture(scope="session")
def isolated_redis_url(stack: Stack) -> str:
    """A second, empty Redis db for tests that push fake messages onto real queue
    names or run an in-process Celery worker: long-lived consumers started by
    other test modules (library, sandbox) must never see those messages."""
    url = f"{REDIS_BASE}/{(REDIS_DB + 1) % 16}"
    redis.Redis.from_url(url).flushdb()
    return url


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


pytest_plugins = ["tests.fixtures.processes"]
