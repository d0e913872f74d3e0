"""Prometheus exposition: every metric is scraped, from the worker server and the API route."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import httpx
import pytest
import redis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from redis.backoff import NoBackoff
from redis.retry import Retry
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from services.common import metrics as m
from services.common.db import transaction
from services.common.models import Job, User
from services.common.telemetry import TracingMiddleware

STATIC = [
    m.HTTP_REQUESTS, m.HTTP_REQUEST_DURATION, m.CELERY_TASKS, m.CELERY_TASK_DURATION,
    m.JOB_DURATION, m.STEP_DURATION, m.LLM_REQUEST_DURATION, m.LLM_TOKENS, m.LLM_COST_USD,
    m.SANDBOX_EXEC_DURATION,
    m.SANDBOX_START_DURATION, m.SANDBOX_WARM_POOL, m.LIBRARY_INGEST_DURATION,
    m.LIBRARY_SEARCH_DURATION, m.SPANS_EXPORTED, m.SPANS_DROPPED,
]  # fmt: skip
SCRAPED = [m.QUEUE_DEPTH_METRIC, m.JOBS_BY_STATUS_METRIC, m.COLLECTOR_UP_METRIC]


def _observe_everything() -> None:
    m.JOB_DURATION.labels(kind="turn", status="succeeded").observe(12.5)
    m.STEP_DURATION.labels(kind="llm", name="sim").observe(0.4)
    m.LLM_REQUEST_DURATION.labels(model="sim", provider="vllm", outcome="ok").observe(0.3)
    m.LLM_TOKENS.labels(model="sim", user="u1", project="p1", type="input").inc(120)
    m.LLM_COST_USD.labels(model="sim", user="u1", project="p1").inc(0.01)
    m.SANDBOX_EXEC_DURATION.labels(backend="docker", outcome="ok").observe(0.06)
    m.SANDBOX_START_DURATION.labels(backend="docker", warm="true").observe(0.2)
    m.SANDBOX_WARM_POOL.labels(backend="docker").set(3)
    m.LIBRARY_INGEST_DURATION.labels(outcome="ok").observe(4.0)
    m.LIBRARY_SEARCH_DURATION.labels(mode="survey").observe(0.09)
    m.CELERY_TASKS.labels(task="agent.advance", outcome="success").inc()
    m.CELERY_TASK_DURATION.labels(task="agent.advance").observe(1.0)
    m.SPANS_EXPORTED.labels(sink="postgres").inc(0)
    m.SPANS_DROPPED.labels(sink="postgres", reason="queue_full").inc(0)


@pytest.fixture
def platform(isolated_redis_url: str, engine: Engine) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(isolated_redis_url)
    m.register_platform_collectors(engine=engine, redis_client=client)
    yield client
    client.delete("library", "library\x06\x163")
    m.register_platform_collectors()  # unregister


def _samples(body: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    out = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            out[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return out


def _family_names(body: str) -> set[str]:
    return set(re.findall(r"^# TYPE (\S+) ", body, re.MULTILINE))


class TestExposition:
    def test_worker_server_exposes_every_metric(self, platform: redis.Redis) -> None:
        _observe_everything()
        port = m.start_metrics_server(0, addr="127.0.0.1")
        try:
            body = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
        finally:
            m.stop_metrics_server(port)
        names = _family_names(body)
        for metric in STATIC:
            exposed = f"{metric._name}_total" if metric._type == "counter" else metric._name
            assert exposed in names, exposed
        for name in SCRAPED:
            assert name in names, name

    def test_queue_depth_and_jobs_by_status_are_live(
        self, platform: redis.Redis, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        platform.rpush("library", "m1", "m2")
        platform.rpush("library\x06\x163", "m3")  # Celery's priority sibling list
        with transaction(session_factory) as db:
            user = User(email=f"{uuid.uuid4().hex[:8]}@lab.test")
            db.add(user)
            db.flush()
            db.add(Job(user_id=user.id, kind="turn", status="budget_exhausted"))
        with engine.connect() as conn:
            expected = dict(
                conn.execute(text("SELECT status, count(*) FROM jobs GROUP BY status")).all()
            )  # noqa: E501
        app = FastAPI()
        m.mount_metrics(app)
        body = TestClient(app).get("/metrics").text
        samples = _samples(body)
        assert samples[("leaflab_queue_depth", frozenset({("queue", "library")}))] == 3
        for status, count in expected.items():
            assert samples[("leaflab_jobs", frozenset({("status", status)}))] == count
        assert samples[("leaflab_jobs", frozenset({("status", "cancelled")}))] == expected.get(
            "cancelled", 0
        )
        assert samples[("leaflab_collector_up", frozenset({("collector", "jobs")}))] == 1
        assert samples[("leaflab_collector_up", frozenset({("collector", "queues")}))] == 1

    def test_broken_store_reports_down_instead_of_failing_scrape(self) -> None:
        dead = redis.Redis(
            host="127.0.0.1", port=1, socket_connect_timeout=0.2, retry=Retry(NoBackoff(), 0)
        )
        m.register_platform_collectors(redis_client=dead)
        try:
            app = FastAPI()
            m.mount_metrics(app)
            response = TestClient(app).get("/metrics")
        finally:
            m.register_platform_collectors()
        assert response.status_code == 200
        samples = _samples(response.text)
        assert samples[("leaflab_collector_up", frozenset({("collector", "queues")}))] == 0

    def test_http_middleware_counts_by_route_template(self) -> None:
        app = FastAPI()
        app.add_middleware(TracingMiddleware, service_name="leaflab-test-http")
        m.mount_metrics(app)

        @app.get("/v1/items/{item_id}")
        def item(item_id: int) -> dict[str, int]:
            return {"id": item_id}

        client = TestClient(app)
        for i in range(3):
            assert client.get(f"/v1/items/{i}").status_code == 200
        samples = _samples(client.get("/metrics").text)
        key = (
            "leaflab_http_requests_total",
            frozenset(
                {
                    ("service", "leaflab-test-http"),
                    ("method", "GET"),
                    ("route", "/v1/items/{item_id}"),
                    ("status", "200"),
                }
            ),
        )
        assert samples[key] == 3
