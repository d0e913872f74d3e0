"""Shared set-up for the spine benchmarks: a scratch database and in-process runtime."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from celery import Celery
from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import build_engine, build_sessionmaker
from services.common.events import EventPublisher
from services.common.migrate import upgrade_to_head
from services.common.redis_client import build_redis
from services.worker.llm.client import client_from_settings
from services.worker.llm.pricing import PriceBook
from services.worker.llm.types import ModelResponse
from services.worker.runtime.deps import RuntimeDeps
from services.worker.runtime.lease import LeaseKeeper
from services.worker.settings import WorkerSettings
from services.worker.tools.base import Tool, ToolContext, ToolResult
from services.worker.tools.registry import ToolRegistry

PG_ADMIN = os.environ.get("LEAFLAB_BENCH_PG_ADMIN", "postgresql://postgres@127.0.0.1:5432/postgres")
REDIS_URL = os.environ.get("LEAFLAB_BENCH_REDIS", "redis://127.0.0.1:6379/12")


def scratch_database(name: str) -> str:
    """Create a fresh, migrated database and return its SQLAlchemy URL."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://")
    url = f"{base}/{name}"
    upgrade_to_head(url)
    return url


@dataclass
class Timings:
    model_s: list[float]
    tool_s: list[float]


class TimedModel:
    """Wraps the model client and records each call's own duration."""

    def __init__(self, inner: Any, sink: list[float]) -> None:
        self._inner = inner
        self._sink = sink
        self.provider = inner.provider

    def complete(self, **kwargs: Any) -> ModelResponse:
        start = time.perf_counter()
        try:
            result: ModelResponse = self._inner.complete(**kwargs)
            return result
        finally:
            self._sink.append(time.perf_counter() - start)


class TimedTool(Tool):
    """Wraps a tool and records each execution's own duration."""

    def __init__(self, inner: Tool, sink: list[float]) -> None:
        self._inner = inner
        self._sink = sink
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description  # type: ignore[misc]
        self.args_model = inner.args_model  # type: ignore[misc]
        self.effect = inner.effect  # type: ignore[misc]

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        start = time.perf_counter()
        try:
            return self._inner.run(args, ctx)
        finally:
            self._sink.append(time.perf_counter() - start)


def in_process_deps(
    *,
    database_url: str,
    llm_url: str,
    tools: list[Tool],
    timings: Timings,
    pool_size: int = 10,
) -> tuple[RuntimeDeps, sessionmaker[Session]]:
    settings = WorkerSettings(
        database_url=database_url,
        redis_url=REDIS_URL,
        llm_base_url=llm_url,
        time_slice_s=200,
        task_soft_time_limit_s=240,
        task_hard_time_limit_s=300,
    )
    engine = build_engine(database_url, pool_size=pool_size)
    factory = build_sessionmaker(engine)
    deps = RuntimeDeps(
        settings=settings,
        factory=factory,
        writer=engine.execution_options(isolation_level="AUTOCOMMIT"),
        model=TimedModel(client_from_settings(settings), timings.model_s),  # type: ignore[arg-type]
        prices=PriceBook.from_settings(settings),
        registry=ToolRegistry([TimedTool(t, timings.tool_s) for t in tools]),
        publisher=EventPublisher(build_redis(REDIS_URL)),
        celery=Celery("bench", broker=REDIS_URL),
        keeper=LeaseKeeper(factory, ttl_s=30),
    )
    return deps, factory


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
