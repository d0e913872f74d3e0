"""GET /v1/traces/{trace_id} and `leaflab trace JOB_ID` against a real HTTP server."""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
import redis.asyncio as aioredis
import uvicorn
from click.testing import CliRunner
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry import trace
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from services.api.deps import CurrentUser, DbSession, hash_key
from services.api.errors import not_found
from services.api.settings import ApiSettings
from services.api.state import AppState
from services.api.traces import router as traces_router
from services.cli.trace_cmd import trace_cmd
from services.common.celery_app import build_celery
from services.common.db import transaction
from services.common.http_errors import install_error_handlers
from services.common.models import ApiKey, Job, User
from services.common.telemetry import current_trace_id_hex, model_call_attributes
from services.common.telemetry.names import SPAN_AGENT_ROUND, TRACER_WORKER
from tests.conftest import Stack
from tests.telemetry.conftest import Tracing, stored_spans


@dataclass(frozen=True)
class World:
    owner_key: str
    other_key: str
    admin_key: str
    job_id: str
    trace_id: str


def _user(db: Session, *, admin: bool = False) -> str:
    user = User(email=f"{uuid.uuid4().hex[:8]}@lab.test", is_admin=admin)
    db.add(user)
    db.flush()
    key = "lf_" + secrets.token_urlsafe(24)
    db.add(ApiKey(user_id=user.id, key_hash=hash_key(key), prefix=key[:8]))
    db.flush()
    return key


def _owner_id(db: Session, key: str) -> uuid.UUID:
    row = db.query(ApiKey).filter(ApiKey.key_hash == hash_key(key)).one()
    return row.user_id


@pytest.fixture(scope="module")
def world(tracing: Tracing, engine: Engine, session_factory: sessionmaker[Session]) -> World:
    tracer = trace.get_tracer(TRACER_WORKER)
    with tracer.start_as_current_span("job"):
        with tracer.start_as_current_span(SPAN_AGENT_ROUND):
            with tracer.start_as_current_span("chat sim") as span:
                span.set_attributes(
                    model_call_attributes(
                        request_model="sim", input_tokens=300, output_tokens=20, cost_usd=0.0125
                    )
                )
            tracer.start_span("execute_tool python").end()
        trace_id = current_trace_id_hex()
    assert trace_id is not None
    stored_spans(engine, trace_id, at_least=4)
    with transaction(session_factory) as db:
        owner, other, admin = _user(db), _user(db), _user(db, admin=True)
        job = Job(user_id=_owner_id(db, owner), kind="turn", trace_id=trace_id)
        db.add(job)
        db.flush()
        job_id = str(job.id)
    return World(owner, other, admin, job_id, trace_id)


def _app(stack: Stack, engine: Engine, factory: sessionmaker[Session]) -> FastAPI:
    settings = ApiSettings()
    app = FastAPI()
    app.state.leaflab = AppState(
        settings=settings,
        engine=engine,
        session_factory=factory,
        redis=redis.Redis.from_url(stack.redis_url),
        aredis=aioredis.Redis.from_url(stack.redis_url),
        celery=build_celery(settings),
    )
    install_error_handlers(app)
    app.include_router(traces_router)

    # The jobs API belongs to another package; this test only needs its trace_id field.
    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: uuid.UUID, user: CurrentUser, db: DbSession) -> dict[str, Any]:
        job = db.get(Job, job_id)
        if job is None or (job.user_id != user.id and not user.is_admin):
            raise not_found("job")
        return {"id": str(job.id), "trace_id": job.trace_id}

    return app


@pytest.fixture(scope="module")
def client(stack: Stack, engine: Engine, session_factory: sessionmaker[Session]) -> TestClient:
    return TestClient(_app(stack, engine, session_factory))


def _get(client: TestClient, path: str, key: str | None) -> Any:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return client.get(path, headers=headers)


class TestTraceAccess:
    def test_owner_reads_spans_with_links(self, client: TestClient, world: World) -> None:
        response = _get(client, f"/v1/traces/{world.trace_id}", world.owner_key)
        assert response.status_code == 200
        body = response.json()
        assert body["trace_id"] == world.trace_id
        spans = {s["name"]: s for s in body["spans"]}
        assert set(spans) == {"job", "agent.round", "chat sim", "execute_tool python"}
        assert spans["job"]["parent_span_id"] is None
        assert spans["chat sim"]["parent_span_id"] == spans["agent.round"]["span_id"]
        assert spans["chat sim"]["attributes"]["gen_ai.usage.input_tokens"] == 300
        assert body["spans"][0]["name"] == "job"  # oldest first
        assert {"start", "end", "status", "attributes"} <= set(body["spans"][0])

    def test_other_member_gets_404(self, client: TestClient, world: World) -> None:
        response = _get(client, f"/v1/traces/{world.trace_id}", world.other_key)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"

    def test_admin_reads_any_trace(self, client: TestClient, world: World) -> None:
        assert _get(client, f"/v1/traces/{world.trace_id}", world.admin_key).status_code == 200

    def test_unknown_trace_is_404_even_for_admin(self, client: TestClient, world: World) -> None:
        assert _get(client, f"/v1/traces/{'ab' * 16}", world.admin_key).status_code == 404

    def test_malformed_id_is_422(self, client: TestClient, world: World) -> None:
        response = _get(client, "/v1/traces/not-a-trace", world.owner_key)
        assert response.status_code == 422
        assert "32 hexadecimal" in response.json()["error"]["message"]

    def test_no_key_is_401(self, client: TestClient, world: World) -> None:
        assert _get(client, f"/v1/traces/{world.trace_id}", None).status_code == 401


@pytest.fixture(scope="module")
def server_url(
    stack: Stack, engine: Engine, session_factory: sessionmaker[Session]
) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = uvicorn.Config(
        _app(stack, engine, session_factory), host="127.0.0.1", port=port, log_level="warning"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(5)


class TestTraceCommand:
    def test_prints_tree_with_tokens_and_cost(self, server_url: str, world: World) -> None:
        env = {"LEAFLAB_URL": server_url, "LEAFLAB_API_KEY": world.owner_key}
        result = CliRunner().invoke(trace_cmd, [world.job_id], env=env)
        assert result.exit_code == 0, result.output
        lines = result.output.splitlines()
        assert lines[0] == f"trace {world.trace_id}"
        assert lines[1].startswith("job  ")
        assert lines[2].startswith("└─ agent.round  ")
        assert lines[3].startswith("   ├─ chat sim  ")
        assert "tokens 300→20" in lines[3] and "$0.012500" in lines[3]
        assert lines[4].startswith("   └─ execute_tool python  ")
        assert lines[5] == "4 spans; tokens in 300, out 20; cost $0.012500"

    def test_reads_admin_key_file(self, server_url: str, world: World, tmp_path: Any) -> None:
        (tmp_path / "admin.key").write_text(world.admin_key + "\n")
        env = {"LEAFLAB_URL": server_url, "LEAFLAB_HOME": str(tmp_path), "LEAFLAB_API_KEY": ""}
        result = CliRunner().invoke(trace_cmd, [world.job_id, "--json"], env=env)
        assert result.exit_code == 0, result.output
        body = json.loads(result.output)
        assert body["trace_id"] == world.trace_id and len(body["spans"]) == 4

    def test_member_cannot_trace_another_users_job(self, server_url: str, world: World) -> None:
        env = {"LEAFLAB_URL": server_url, "LEAFLAB_API_KEY": world.other_key}
        result = CliRunner().invoke(trace_cmd, [world.job_id], env=env)
        assert result.exit_code == 1 and "HTTP 404" in result.output

    def test_unknown_job_is_a_clear_error(self, server_url: str, world: World) -> None:
        env = {"LEAFLAB_URL": server_url, "LEAFLAB_API_KEY": world.owner_key}
        result = CliRunner().invoke(trace_cmd, [str(uuid.uuid4())], env=env)
        assert result.exit_code == 1
        assert "job not found" in result.output

    def test_unreachable_server(self, world: World) -> None:
        env = {"LEAFLAB_URL": "http://127.0.0.1:9", "LEAFLAB_API_KEY": world.owner_key}
        result = CliRunner().invoke(trace_cmd, [world.job_id], env=env)
        assert result.exit_code == 1 and "cannot reach" in result.output
