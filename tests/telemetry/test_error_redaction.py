"""Error text and query strings are cleaned like attributes; a span that cannot be
cleaned is dropped out loud (logged and counted), never sent as it is."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode
from prometheus_client import REGISTRY
from sqlalchemy import Engine

from services.common.telemetry import TracingMiddleware, current_trace_id_hex
from services.common.telemetry.redaction import RedactingSpanExporter, RedactionPolicy
from tests.telemetry.conftest import Tracing, stored_spans

OPENAI_KEY = "sk-proj-4f9c2a7e1b3d5f7a9c1e3b5d7f9a1c3e"
PASSWORD = "hunter2-very-secret"
SEARCHED = "confidential-grant-topic"


class TestErrorText:
    def test_status_and_exception_text_are_redacted_and_capped(
        self, tracing: Tracing, engine: Engine
    ) -> None:
        tracer = trace.get_tracer("leaflab.test")
        with tracer.start_as_current_span("failing call") as span:
            try:
                raise ValueError(f"login failed: password={PASSWORD}")
            except ValueError as exc:
                span.record_exception(exc)
            span.set_status(Status(StatusCode.ERROR, f"upstream said {OPENAI_KEY} " + "x" * 5000))
            trace_id = current_trace_id_hex()
        assert trace_id is not None
        (row,) = stored_spans(engine, trace_id)
        stored = json.dumps({"e": row.events, "s": row.status_message})
        assert OPENAI_KEY not in stored and PASSWORD not in stored
        message = str(row.status_message)
        assert "sk-[REDACTED]" in message
        assert len(message) <= tracing.settings.trace_preview_chars + 1
        exception = row.events[0]["attributes"]
        assert exception["exception.message"] == "login failed: password=[REDACTED]"


class TestQueryStrings:
    def test_server_spans_never_store_what_was_searched(
        self, tracing: Tracing, engine: Engine
    ) -> None:
        app = FastAPI()

        @app.get("/v1/library/search")
        def search(q: str) -> dict[str, str]:
            # Later instrumentation (an HTTP client's) may add URL attributes too.
            current = trace.get_current_span()
            current.set_attribute("url.query", f"q={q}")
            current.set_attribute("url.full", f"http://library/search?q={q}")
            return {"trace_id": current_trace_id_hex() or ""}

        app.add_middleware(TracingMiddleware, service_name="leaflab-test")
        with TestClient(app) as client:
            trace_id = client.get("/v1/library/search", params={"q": SEARCHED}).json()["trace_id"]
        rows = stored_spans(engine, trace_id, names={"GET /v1/library/search"})
        for stored in rows:
            assert SEARCHED not in json.dumps({"n": stored.name, "a": stored.attributes})
            assert "url.query" not in stored.attributes
        (server,) = [r for r in rows if r.name == "GET /v1/library/search"]
        assert server.attributes["url.path"] == "/v1/library/search"
        (handler,) = [r for r in rows if "url.full" in r.attributes]
        assert handler.attributes["url.full"] == "http://library/search"


class _Unreadable(ReadableSpan):
    @property
    def attributes(self) -> Any:
        raise RuntimeError("attribute storage is corrupt")


def _dropped(sink: str) -> float:
    return REGISTRY.get_sample_value("leaflab_spans_redaction_failed_total", {"sink": sink}) or 0.0


class TestRedactionFailure:
    def test_bad_span_is_dropped_logged_and_counted_the_rest_exported(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        memory = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(memory))
        with provider.get_tracer("t").start_as_current_span("good"):
            pass
        (good,) = memory.get_finished_spans()
        bad = _Unreadable(name="bad", context=good.context)
        sink = InMemorySpanExporter()
        exporter = RedactingSpanExporter(sink, RedactionPolicy(), sink="test-sink")
        before = _dropped("test-sink")
        with caplog.at_level(logging.ERROR, logger="services.common.telemetry.redaction"):
            exporter.export([good, bad])
        assert [s.name for s in sink.get_finished_spans()] == ["good"]
        assert _dropped("test-sink") == before + 1
        assert "dropped 1 span(s) that could not be redacted: 'bad' (RuntimeError)" in caplog.text
