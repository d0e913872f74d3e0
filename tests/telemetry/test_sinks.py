"""Both sinks receive the same spans, redacted: Postgres rows and a real OTLP receiver."""

from __future__ import annotations

import json
import time

from opentelemetry import trace
from sqlalchemy import Engine

from services.common.telemetry import current_trace_id_hex, error_attributes
from services.common.telemetry.names import TRACER_WORKER
from tests.telemetry.conftest import TEST_SERVICE, Tracing, stored_spans

API_KEY = "lf_Q2hpY2tlbnNBcmVDb29sMTIzNDU2Nzg5MA"
OPENAI_KEY = "sk-proj-4f9c2a7e1b3d5f7a9c1e3b5d7f9a1c3e"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9abcdefghijklmnop"
SECRETS = (API_KEY, OPENAI_KEY, AWS_KEY, "hunter2-very-secret", "eyJhbGciOiJIUzI1NiJ9abcdef")


def _emit_secret_trace() -> str:
    tracer = trace.get_tracer(TRACER_WORKER)
    with tracer.start_as_current_span("execute_tool bash") as span:
        span.set_attribute("leaflab.tool.arguments", f'{{"command": "curl -H \'{BEARER}\' x"}}')
        span.set_attribute("leaflab.env", f"OPENAI_API_KEY={OPENAI_KEY} AWS={AWS_KEY}")
        span.set_attribute("http.request.header.authorization", f"Bearer {API_KEY}")
        span.set_attribute("leaflab.argv", ["--password=hunter2-very-secret", "ok"])
        span.set_attribute("leaflab.prompt", "x" * 5000)
        span.set_attributes(error_attributes(provider="openai", status=429, request_id="req_1"))
        span.add_event("tool.output", {"stdout": f"using key {API_KEY}"})
        trace_id = current_trace_id_hex()
    assert trace_id is not None
    return trace_id


def _wait_otlp(tracing: Tracing, trace_id: str, timeout: float = 10.0) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = tracing.receiver.for_trace(trace_id)
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("no spans reached the OTLP receiver")


class TestSecretsNeverLeave:
    def test_postgres_rows_are_redacted(self, tracing: Tracing, engine: Engine) -> None:
        trace_id = _emit_secret_trace()
        (row,) = stored_spans(engine, trace_id, at_least=1)
        stored = json.dumps({"a": row.attributes, "e": row.events, "s": row.status_message})
        for secret in SECRETS:
            assert secret not in stored
        attrs = row.attributes
        assert attrs["http.request.header.authorization"] == "[REDACTED]"
        assert attrs["leaflab.env"].startswith("OPENAI_API_KEY=[REDACTED] AWS=AKIA")
        assert attrs["leaflab.argv"] == ["--password=[REDACTED]", "ok"]
        assert "lf_[REDACTED]" in row.events[0]["attributes"]["stdout"]
        assert attrs["leaflab.error.request_id"] == "req_1"
        assert attrs["http.response.status_code"] == 429

    def test_otlp_export_is_redacted(self, tracing: Tracing) -> None:
        trace_id = _emit_secret_trace()
        (span,) = _wait_otlp(tracing, trace_id)
        assert span.service == TEST_SERVICE
        assert span.name == "execute_tool bash"
        blob = json.dumps({"a": span.attributes, "e": span.events})
        for secret in SECRETS:
            assert secret not in blob
        assert span.attributes["http.request.header.authorization"] == "[REDACTED]"
        assert "lf_[REDACTED]" in span.events[0]["attributes"]["stdout"]

    def test_large_payload_becomes_preview_length_hash(self, tracing: Tracing) -> None:
        trace_id = _emit_secret_trace()
        (span,) = _wait_otlp(tracing, trace_id)
        preview_chars = tracing.settings.trace_preview_chars
        assert span.attributes["leaflab.prompt"] == "x" * preview_chars + "…"
        assert span.attributes["leaflab.prompt.length"] == 5000
        assert len(span.attributes["leaflab.prompt.sha256"]) == 64


class TestOtlpAndPostgresAgree:
    def test_same_trace_in_both_sinks(self, tracing: Tracing, engine: Engine) -> None:
        tracer = trace.get_tracer(TRACER_WORKER)
        with tracer.start_as_current_span("agent.round"):
            with tracer.start_as_current_span("chat m1"):
                trace_id = current_trace_id_hex()
        assert trace_id is not None
        rows = stored_spans(engine, trace_id, at_least=2)
        deadline = time.monotonic() + 10
        while len(tracing.receiver.for_trace(trace_id)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        exported = tracing.receiver.for_trace(trace_id)
        assert {(s.span_id, s.parent_span_id, s.name) for s in exported} == {
            (r.span_id, r.parent_span_id, r.name) for r in rows
        }
        assert {r.service for r in rows} == {TEST_SERVICE}
