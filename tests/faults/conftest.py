"""Fixtures for fault tests: private Postgres/Redis plus Leaflab's processes on them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import build_engine, build_sessionmaker
from services.common.migrate import upgrade_to_head
from tests.conftest import Stack
from tests.faults.private_servers import MissingBinary, PrivatePostgres, PrivateRedis
from tests.fixtures.processes import Services, free_port

# The chaos test runs real Docker sandboxes: the sandbox suite's session fixtures
# make sure Docker answers and the image exists.
from tests.sandbox.conftest import docker_ready, sandbox_image, sandbox_settings  # noqa: F401, E402


@dataclass
class FaultStack:
    """Servers this test alone may kill, and the Leaflab processes using them."""

    pg: PrivatePostgres
    redis: PrivateRedis
    engine: Engine
    factory: sessionmaker[Session]
    services: Services
    home: Path


def start_fault_stack(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, hosts: tuple[str, ...] = ("127.0.0.1",)
) -> FaultStack:
    """Start and migrate private servers; on any failure, remove what was started."""
    pg = PrivatePostgres(free_port(), hosts=hosts)
    redis_dir = tmp_path / "redis"
    redis_dir.mkdir()
    rds = PrivateRedis(redis_dir, free_port(), hosts=hosts)
    try:
        pg.init()
        rds.start()
        upgrade_to_head(pg.url())
    except (MissingBinary, PermissionError) as exc:
        rds.stop()
        pg.destroy()
        pytest.fail(f"fault tests need root and local PostgreSQL/Redis binaries: {exc}")
    except BaseException:
        rds.stop()
        pg.destroy()
        raise
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("LEAFLAB_HOME", str(home))
    services = Services(Stack(database_url=pg.url(), redis_url=rds.url()), tmp_path)
    engine = build_engine(pg.url(), pool_size=4)
    return FaultStack(pg, rds, engine, build_sessionmaker(engine), services, home)


def stop_fault_stack(fs: FaultStack) -> None:
    for proc in fs.services.procs:
        proc.kill9()  # nothing to drain: a graceful Celery stop only costs seconds
    fs.services.stop()
    fs.engine.dispose()
    fs.redis.stop()
    fs.pg.destroy()


@pytest.fixture
def fault_stack(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultStack]:
    fs = start_fault_stack(tmp_path, monkeypatch)
    try:
        yield fs
    finally:
        stop_fault_stack(fs)
