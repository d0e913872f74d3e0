"""Trace ids are the server's: a caller's traceparent is a link, never a way into another trace.

Through the real HTTP API with two users: B copying A's trace id into
``traceparent`` neither reads A's spans nor writes into A's trace.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from services.common.db import transaction
from services.common.models import Job, SpanRecord
from services.common.telemetry import TracingMiddleware
from tests.fixtures.builders import client_for, make_user, wait_job
from tests.fixtures.processes import RunningStack


def _traceparent(trace_id: str) -> str:
    return f"00-{trace_id}-{secrets.token_hex(8)}-01"


def _spans(factory: sessionmaker[Session], trace_id: str, name: str) -> list[Any]:
    """Rows of a trace, waiting (spans reach Postgres in batches) until ``name`` is there."""
    deadline = time.monotonic() + 20
    rows: list[Any] = []
    while time.monotonic() < deadline:
        with factory() as db:
            rows = list(db.scalars(select(SpanRecord).where(SpanRecord.trace_id == trace_id)))
        if any(r.name == name for r in rows):
            return rows
        time.sleep(0.2)
    raise AssertionError(f"no {name!r} span in trace {trace_id}: {[r.name for r in rows]}")


class TestTraceIsolation:
    def test_copied_traceparent_neither_reads_nor_joins_another_users_trace(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        alice = client_for(running.url, make_user(session_factory))
        bob = client_for(running.url, make_user(session_factory))
        session = alice.post("/v1/sessions", json={}).json()
        running.sim.set_script(session["id"], {"replies": [{"content": "alice's answer"}]})
        chosen = secrets.token_hex(16)  # a trace id Alice's client made up
        posted = alice.post(
            f"/v1/sessions/{session['id']}/messages",
            json={"content": "alice's question"},
            headers={"traceparent": _traceparent(chosen)},
        )
        assert posted.status_code == 202
        a_job = wait_job(alice, posted.json()["job_id"])
        a_trace = a_job["trace_id"]
        # The server made its own trace id and told the caller which.
        assert a_trace and a_trace != chosen
        assert posted.headers["x-trace-id"] == a_trace
        assert alice.get(f"/v1/traces/{a_trace}").status_code == 200

        # Bob copies Alice's real trace id into his traceparent.
        b_resp = bob.post(
            "/v1/jobs",
            json={"kind": "turn", "input": {"content": "bob's question"}},
            headers={"traceparent": _traceparent(a_trace)},
        )
        assert b_resp.status_code == 202, b_resp.text
        b_job = wait_job(bob, b_resp.json()["id"])
        assert b_job["trace_id"] not in (None, a_trace)

        # He cannot read her trace ...
        stolen = bob.get(f"/v1/traces/{a_trace}")
        assert stolen.status_code == 404
        assert "alice" not in stolen.text and a_job["id"] not in stolen.text
        # ... and his spans went into his own trace, none into hers.
        b_spans = _spans(session_factory, b_job["trace_id"], "POST /v1/jobs")
        assert b_spans
        a_spans = _spans(session_factory, a_trace, "POST /v1/sessions/{session_id}/messages")
        assert "POST /v1/jobs" not in {s.name for s in a_spans}
        assert bob.get(f"/v1/traces/{b_job['trace_id']}").status_code == 200

    def test_trace_belongs_to_the_job_that_started_it(
        self, running: RunningStack, session_factory: sessionmaker[Session]
    ) -> None:
        # Rows from before server-made trace ids: Bob's later job carries
        # Alice's trace id. Owning *a* job with that id must not be enough.
        alice_user, bob_user = make_user(session_factory), make_user(session_factory)
        alice, bob = client_for(running.url, alice_user), client_for(running.url, bob_user)
        trace_id = secrets.token_hex(16)
        with transaction(session_factory) as db:
            db.add(Job(user_id=alice_user.id, kind="turn", trace_id=trace_id, input={}))
        time.sleep(0.01)  # created_at orders them
        with transaction(session_factory) as db:
            db.add(Job(user_id=bob_user.id, kind="turn", trace_id=trace_id, input={}))
        assert bob.get(f"/v1/traces/{trace_id}").status_code == 404
        assert alice.get(f"/v1/traces/{trace_id}").status_code == 200


class TestCallerContextIsALink:
    def test_incoming_traceparent_is_linked_not_parent(self) -> None:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        app = FastAPI()

        @app.get("/ping")
        def ping() -> dict[str, str]:
            return {"ok": "yes"}

        middleware = TracingMiddleware(app, service_name="test")
        middleware.tracer = provider.get_tracer("test")
        caller_trace, caller_span = secrets.token_hex(16), secrets.token_hex(8)
        resp = TestClient(middleware).get(  # type: ignore[arg-type]
            "/ping", headers={"traceparent": f"00-{caller_trace}-{caller_span}-01"}
        )
        assert resp.status_code == 200
        (span,) = exporter.get_finished_spans()
        assert isinstance(span, ReadableSpan) and span.context is not None
        assert span.parent is None
        assert format(span.context.trace_id, "032x") == resp.headers["x-trace-id"] != caller_trace
        assert [
            (format(link.context.trace_id, "032x"), format(link.context.span_id, "016x"))
            for link in span.links
        ] == [(caller_trace, caller_span)]

    def test_only_a_leaflab_service_holding_the_internal_token_continues_its_trace(
        self,
    ) -> None:
        """The library continues the worker's trace (a job's searches belong to the
        job); a caller without the internal token, or with a wrong one, gets a link."""
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        app = FastAPI()

        @app.get("/search")
        def search() -> dict[str, str]:
            return {"ok": "yes"}

        middleware = TracingMiddleware(app, service_name="test", trusted_token="s3cret")
        middleware.tracer = provider.get_tracer("test")
        client = TestClient(middleware)  # type: ignore[arg-type]
        caller_trace, caller_span = secrets.token_hex(16), secrets.token_hex(8)
        parent = {"traceparent": f"00-{caller_trace}-{caller_span}-01"}
        for token, continued in (("s3cret", True), ("wrong", False), (None, False)):
            exporter.clear()
            extra = {"X-Leaflab-Internal": token} if token else {}
            assert client.get("/search", headers={**parent, **extra}).status_code == 200
            (span,) = exporter.get_finished_spans()
            assert span.context is not None
            same_trace = format(span.context.trace_id, "032x") == caller_trace
            assert same_trace is continued, token
            assert (span.parent is not None) is continued, token
            assert (len(span.links) == 0) is continued, token
