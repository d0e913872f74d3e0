"""Shared set-up for the spine benchmarks: the in-process runtime, with each model
call and tool run timestamped so a job's wall time splits into its steps."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from celery import Celery
from pydantic import BaseModel
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import build_engine, build_sessionmaker
from services.common.events import EventPublisher
from services.common.redis_client import build_redis
from services.worker.llm.client import client_from_settings
from services.worker.llm.pricing import PriceBook
from services.worker.llm.types import ModelResponse
from services.worker.settings import WorkerSettings
from services.worker.spine.deps import RuntimeDeps
from services.worker.spine.lease import LeaseKeeper
from services.worker.tools.base import Tool, ToolContext, ToolResult
from services.worker.tools.registry import ToolRegistry


@dataclass
class Timings:
    """Each model call's and tool run's own duration, and the moment each ended
    (``marks``: ("model" | "tool", perf_counter at its end), in order)."""

    model_s: list[float] = field(default_factory=list)
    tool_s: list[float] = field(default_factory=list)
    marks: list[tuple[str, float]] = field(default_factory=list)

    def clear(self) -> None:
        self.model_s.clear()
        self.tool_s.clear()
        self.marks.clear()


class TimedModel:
    """Wraps the model client and records each call's duration and end."""

    def __init__(self, inner: Any, timings: Timings) -> None:
        self._inner = inner
        self._timings = timings
        self.provider = inner.provider

    def complete(self, **kwargs: Any) -> ModelResponse:
        start = time.perf_counter()
        try:
            result: ModelResponse = self._inner.complete(**kwargs)
            return result
        finally:
            end = time.perf_counter()
            self._timings.model_s.append(end - start)
            self._timings.marks.append(("model", end))


class TimedTool(Tool):
    """Wraps a tool and records each run's duration and end."""

    def __init__(self, inner: Tool, timings: Timings) -> None:
        self._inner = inner
        self._timings = timings
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description  # type: ignore[misc]
        self.args_model = inner.args_model  # type: ignore[misc]
        self.effect = inner.effect  # type: ignore[misc]

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        start = time.perf_counter()
        try:
            return self._inner.run(args, ctx)
        finally:
            end = time.perf_counter()
            self._timings.tool_s.append(end - start)
            self._timings.marks.append(("tool", end))


def in_process_deps(
    *,
    database_url: str,
    redis_url: str,
    llm_url: str,
    tools: list[Tool],
    timings: Timings,
    pool_size: int = 10,
) -> tuple[RuntimeDeps, sessionmaker[Session]]:
    settings = WorkerSettings(
        database_url=database_url,
        redis_url=redis_url,
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
        model=TimedModel(client_from_settings(settings), timings),  # type: ignore[arg-type]
        prices=PriceBook.from_settings(settings),
        registry=ToolRegistry([TimedTool(t, timings) for t in tools]),
        publisher=EventPublisher(build_redis(redis_url)),
        celery=Celery("bench", broker=redis_url),
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
