"""Scrape-time collectors: state read from Redis and Postgres when Prometheus asks.

Queue depth and jobs-by-status are facts about shared stores, not about one
process, so they are computed on scrape rather than counted in memory. A
failing store yields ``leaflab_collector_up{collector=…} 0`` instead of an
error, so one broken dependency never blanks the whole scrape.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence

import redis
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry
from sqlalchemy import Engine, text

from services.common.contracts.tasks import AGENT_QUEUE, LIBRARY_QUEUE, SANDBOX_QUEUE
from services.common.metrics.definitions import (
    COLLECTOR_UP_METRIC,
    JOBS_BY_STATUS_METRIC,
    METRICS_REGISTRY,
    QUEUE_DEPTH_METRIC,
)
from services.common.models.jobs import JOB_STATUSES, TERMINAL_STATUSES

log = logging.getLogger(__name__)

CELERY_QUEUES: tuple[str, ...] = (AGENT_QUEUE, SANDBOX_QUEUE, LIBRARY_QUEUE)
# Celery's Redis transport keeps priority messages in sibling lists named
# "<queue>\x06\x16<priority>"; the depth of a queue is the sum of all of them.
_PRIORITY_SUFFIXES = ("", "\x06\x163", "\x06\x166", "\x06\x169")


def _up(collector: str, ok: bool) -> GaugeMetricFamily:
    family = GaugeMetricFamily(
        COLLECTOR_UP_METRIC,
        "1 when the scrape-time collector could read its store, else 0.",
        labels=["collector"],
    )
    family.add_metric([collector], 1.0 if ok else 0.0)
    return family


class QueueDepthCollector(Collector):
    """``leaflab_queue_depth{queue}``: messages waiting in each Celery queue."""

    def __init__(self, client: redis.Redis, queues: Sequence[str] = CELERY_QUEUES) -> None:
        self.client = client
        self.queues = tuple(queues)

    def describe(self) -> Iterable[Metric]:
        return [
            GaugeMetricFamily(QUEUE_DEPTH_METRIC, "", labels=["queue"]),
            _up("queues", True),
        ]

    def collect(self) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            QUEUE_DEPTH_METRIC, "Messages waiting in a Celery queue.", labels=["queue"]
        )
        try:
            pipe = self.client.pipeline(transaction=False)
            for queue in self.queues:
                for suffix in _PRIORITY_SUFFIXES:
                    pipe.llen(queue + suffix)
            lengths = pipe.execute()
        except Exception as exc:
            log.warning("queue depth collector: %s", exc)
            return [_up("queues", False)]
        step = len(_PRIORITY_SUFFIXES)
        for i, queue in enumerate(self.queues):
            family.add_metric([queue], float(sum(lengths[i * step : (i + 1) * step])))
        return [family, _up("queues", True)]


_JOBS_SQL = text(
    "SELECT status, count(*), "
    "EXTRACT(EPOCH FROM now() - min(coalesce(enqueued_at, created_at))) "
    "FROM jobs GROUP BY status"
)


class JobStatusCollector(Collector):
    """``leaflab_jobs{status}`` and the age of the oldest job in each live status."""

    def __init__(self, engine: Engine, statement_timeout_ms: int = 2000) -> None:
        self.engine = engine
        self.statement_timeout_ms = statement_timeout_ms

    def describe(self) -> Iterable[Metric]:
        return [
            GaugeMetricFamily(JOBS_BY_STATUS_METRIC, "", labels=["status"]),
            GaugeMetricFamily("leaflab_jobs_oldest_age_seconds", "", labels=["status"]),
            _up("jobs", True),
        ]

    def collect(self) -> Iterable[Metric]:
        try:
            with self.engine.begin() as conn:
                timeout = int(self.statement_timeout_ms)
                conn.execute(text(f"SET LOCAL statement_timeout = {timeout}"))
                rows = conn.execute(_JOBS_SQL).all()
        except Exception as exc:
            log.warning("jobs collector: %s", exc)
            return [_up("jobs", False)]
        counts = {status: 0.0 for status in JOB_STATUSES}
        # Every live status has an age, 0 when no job is in it: "oldest queued
        # job" is then a number on the dashboard, not a missing series.
        ages = {status: 0.0 for status in JOB_STATUSES if status not in TERMINAL_STATUSES}
        for status, count, age in rows:
            counts[str(status)] = float(count)
            if status not in TERMINAL_STATUSES and age is not None:
                ages[str(status)] = float(age)
        jobs = GaugeMetricFamily(
            JOBS_BY_STATUS_METRIC, "Jobs in Postgres by status.", labels=["status"]
        )
        for status, count in counts.items():
            jobs.add_metric([status], count)
        oldest = GaugeMetricFamily(
            "leaflab_jobs_oldest_age_seconds",
            "Age of the oldest job in each non-terminal status (queued, running, …); 0 if none.",
            labels=["status"],
        )
        for status, age in ages.items():
            oldest.add_metric([status], age)
        return [jobs, oldest, _up("jobs", True)]


class _PlatformCollectors(Collector):
    """Both collectors behind one registration, so re-registering replaces them."""

    def __init__(self, parts: list[QueueDepthCollector | JobStatusCollector]) -> None:
        self.parts = parts

    def describe(self) -> Iterable[Metric]:
        # Each name once: the registry indexes (and later unregisters) by name.
        unique = {m.name: m for part in self.parts for m in part.describe()}
        return list(unique.values())

    def collect(self) -> Iterator[Metric]:
        # Merge the two collector_up families so the exposition has one of each name.
        up = GaugeMetricFamily(
            COLLECTOR_UP_METRIC,
            "1 when the scrape-time collector could read its store, else 0.",
            labels=["collector"],
        )
        for part in self.parts:
            for metric in part.collect():
                if metric.name == COLLECTOR_UP_METRIC:
                    up.samples.extend(metric.samples)
                else:
                    yield metric
        yield up


_registered: dict[int, _PlatformCollectors] = {}
_lock = threading.Lock()


def register_platform_collectors(
    *,
    engine: Engine | None = None,
    redis_client: redis.Redis | None = None,
    registry: CollectorRegistry = METRICS_REGISTRY,
) -> None:
    """Expose queue depth (needs Redis) and jobs by status (needs Postgres).

    Call once per process after building the engine / Redis client; calling
    again replaces the earlier registration (tests, reloads).
    """
    parts: list[QueueDepthCollector | JobStatusCollector] = []
    if redis_client is not None:
        parts.append(QueueDepthCollector(redis_client))
    if engine is not None:
        parts.append(JobStatusCollector(engine))
    with _lock:
        old = _registered.pop(id(registry), None)
        if old is not None:
            registry.unregister(old)
        if parts:
            combined = _PlatformCollectors(parts)
            registry.register(combined)
            _registered[id(registry)] = combined
