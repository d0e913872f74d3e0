"""One trace per job: API request → Celery agent task → Celery sandbox task, in Postgres."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from celery import Celery
from celery.contrib.testing.worker import start_worker
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry import trace
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.common.celery_app import build_celery
from services.common.db import transaction
from services.common.models import Job, User
from services.common.settings import get_settings
from services.common.telemetry import (
    TracingMiddleware,
    attached_context,
    current_trace_id_hex,
    inject_carrier,
    instrument_celery,
    model_call_attributes,
    tool_call_attributes,
)
from services.common.telemetry.names import (
    SPAN_AGENT_ROUND,
    SPAN_JOB_SUBMIT,
    SPAN_SANDBOX_EXEC,
    TRACER_API,
    TRACER_SANDBOX,
    TRACER_WORKER,
    model_call_span_name,
    tool_call_span_name,
)
from tests.telemetry.conftest import Tracing, stored_spans

MODEL = "sim-model"


def _register_tasks(app: Celery) -> None:
    @app.task(name="agent.telemetry_probe")
    def agent_probe(job_id: str) -> str:
        worker = trace.get_tracer(TRACER_WORKER)
        with worker.start_as_current_span(SPAN_AGENT_ROUND, attributes={"leaflab.round": 1}):
            with worker.start_as_current_span(model_call_span_name(MODEL)) as span:
                span.set_attributes(
                    model_call_attributes(
                        request_model=MODEL,
                        response_model=f"{MODEL}-2026",
                        input_tokens=120,
                        output_tokens=45,
                        cached_tokens=100,
                        finish_reasons=["tool_calls"],
                        cost_usd=0.00042,
                        route_reason="scene=agent_reasoning tier=balanced",
                        fallback=False,
                        circuit_state="closed",
                        provider="vllm",
                    )
                )
            with worker.start_as_current_span(tool_call_span_name("python")) as tool:
                tool.set_attributes(tool_call_attributes(tool_name="python", call_id="call_1"))
                app.send_task("sandbox.telemetry_probe", args=[job_id])
        return job_id

    @app.task(name="sandbox.telemetry_probe")
    def sandbox_probe(job_id: str) -> str:
        with trace.get_tracer(TRACER_SANDBOX).start_as_current_span(SPAN_SANDBOX_EXEC):
            time.sleep(0.002)
        return job_id

    @app.task(name="agent.telemetry_resume")
    def agent_resume(job_id: str) -> None:
        # The sweeper re-enqueues without trace headers; the job row carries the context.
        factory = sessionmaker(app.conf.leaflab_engine)
        with transaction(factory) as db:
            job = db.get(Job, uuid.UUID(job_id))
            carrier = job.trace_context if job else None
        with attached_context(carrier):
            trace.get_tracer(TRACER_WORKER).start_span("agent.resumed").end()


@pytest.fixture(scope="module")
def celery_worker(tracing: Tracing, engine: Engine, isolated_redis_url: str) -> Iterator[Celery]:
    get_settings.cache_clear()
    app = build_celery(get_settings().model_copy(update={"redis_url": isolated_redis_url}))
    app.conf.leaflab_engine = engine
    _register_tasks(app)
    instrument_celery(app)
    with start_worker(
        app, pool="threads", concurrency=2, perform_ping_check=False, queues=["agent", "sandbox"]
    ):
        yield app


def _api(app: Celery, factory: sessionmaker[Session]) -> FastAPI:
    api = FastAPI()
    api.add_middleware(TracingMiddleware, service_name="leaflab-api")

    @api.post("/v1/jobs")
    def submit() -> dict[str, Any]:
        with trace.get_tracer(TRACER_API).start_as_current_span(SPAN_JOB_SUBMIT):
            with transaction(factory) as db:
                user = User(email=f"{uuid.uuid4().hex[:8]}@lab.test")
                db.add(user)
                db.flush()
                job = Job(
                    user_id=user.id,
                    kind="turn",
                    trace_id=current_trace_id_hex(),
                    trace_context=inject_carrier(),
                )
                db.add(job)
                db.flush()
                job_id = str(job.id)
            app.send_task("agent.telemetry_probe", args=[job_id])
        return {"id": job_id}

    return api


CHAIN_NAMES = frozenset(
    {
        "POST /v1/jobs",
        SPAN_JOB_SUBMIT,
        "agent.telemetry_probe",
        SPAN_AGENT_ROUND,
        model_call_span_name(MODEL),
        tool_call_span_name("python"),
        "sandbox.telemetry_probe",
        SPAN_SANDBOX_EXEC,
    }
)


def _by_name(rows: list[Any]) -> dict[str, Any]:
    return {row.name: row for row in rows}


def _ancestors(spans: dict[str, Any], name: str) -> list[str]:
    by_id = {row.span_id: row for row in spans.values()}
    out: list[str] = []
    parent = spans[name].parent_span_id
    while parent in by_id:
        out.append(by_id[parent].name)
        parent = by_id[parent].parent_span_id
    return out


class TestOneTracePerJob:
    def test_chain_api_worker_sandbox_is_linked(
        self, celery_worker: Celery, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        response = TestClient(_api(celery_worker, session_factory)).post("/v1/jobs")
        assert response.status_code == 200
        trace_id = response.headers["x-trace-id"]
        with transaction(session_factory) as db:
            job = db.get(Job, uuid.UUID(response.json()["id"]))
            assert job is not None
            assert job.trace_id == trace_id
            assert job.trace_context and job.trace_context["traceparent"].split("-")[1] == trace_id

        spans = _by_name(stored_spans(engine, trace_id, names=CHAIN_NAMES))
        root = spans["POST /v1/jobs"]
        assert root.parent_span_id is None and root.kind == "server"
        # FastAPI adds its own endpoint spans in between; the hop must still descend.
        assert "POST /v1/jobs" in _ancestors(spans, "job.submit")
        chain = [
            ("agent.telemetry_probe", "job.submit"),
            (SPAN_AGENT_ROUND, "agent.telemetry_probe"),
            (model_call_span_name(MODEL), SPAN_AGENT_ROUND),
            (tool_call_span_name("python"), SPAN_AGENT_ROUND),
            ("sandbox.telemetry_probe", tool_call_span_name("python")),
            (SPAN_SANDBOX_EXEC, "sandbox.telemetry_probe"),
        ]
        for child, parent in chain:
            assert spans[child].parent_span_id == spans[parent].span_id, (child, parent)
        assert spans["agent.telemetry_probe"].kind == "consumer"
        assert spans["sandbox.telemetry_probe"].attributes["messaging.destination.name"] == (
            "sandbox"
        )

    def test_model_call_span_has_genai_attributes(
        self, celery_worker: Celery, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        response = TestClient(_api(celery_worker, session_factory)).post("/v1/jobs")
        trace_id = response.headers["x-trace-id"]
        spans = _by_name(stored_spans(engine, trace_id, names=CHAIN_NAMES))
        attrs = spans[f"chat {MODEL}"].attributes
        assert attrs["gen_ai.operation.name"] == "chat"
        assert attrs["gen_ai.request.model"] == MODEL
        assert attrs["gen_ai.response.model"] == f"{MODEL}-2026"
        assert attrs["gen_ai.usage.input_tokens"] == 120
        assert attrs["gen_ai.usage.output_tokens"] == 45
        assert attrs["gen_ai.response.finish_reasons"] == ["tool_calls"]
        assert attrs["gen_ai.system"] == attrs["gen_ai.provider.name"] == "vllm"
        assert attrs["leaflab.cost_usd"] == pytest.approx(0.00042)
        assert attrs["leaflab.cached_tokens"] == 100
        assert attrs["leaflab.route_reason"].startswith("scene=agent_reasoning")
        assert attrs["leaflab.fallback"] is False
        assert attrs["leaflab.circuit_state"] == "closed"
        tool = spans["execute_tool python"].attributes
        assert tool["gen_ai.tool.name"] == "python" and tool["gen_ai.tool.call.id"] == "call_1"

    def test_requeue_without_headers_rejoins_trace_from_job_row(
        self, celery_worker: Celery, engine: Engine, session_factory: sessionmaker[Session]
    ) -> None:
        response = TestClient(_api(celery_worker, session_factory)).post("/v1/jobs")
        trace_id = response.headers["x-trace-id"]
        job_id = response.json()["id"]
        # Sent from a bare context, like the sweeper: no traceparent in the message.
        celery_worker.send_task("agent.telemetry_resume", args=[job_id])
        spans = _by_name(stored_spans(engine, trace_id, names=CHAIN_NAMES | {"agent.resumed"}))
        assert spans["agent.resumed"].parent_span_id == spans["job.submit"].span_id
