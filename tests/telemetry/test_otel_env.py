"""The standard OTEL_* variables, in a real process exporting to a real OTLP/HTTP receiver."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from services.common.models import SpanRecord
from tests.conftest import Stack
from tests.telemetry.otlp_receiver import OtlpReceiver, start_receiver

ROOT = Path(__file__).resolve().parents[2]
CUSTOM_PATH = "/custom/otlp/traces"

# Installs tracing from the environment alone, as a service entry point does,
# emits one span named argv[1] and flushes before exiting.
EMIT = """
import sys
from opentelemetry import trace
from services.common.telemetry import flush_tracing, setup_tracing
setup_tracing("leaflab-env-test")
with trace.get_tracer("leaflab.test").start_as_current_span(sys.argv[1]):
    pass
flush_tracing()
"""


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    found, server = start_receiver(paths=("/v1/traces", CUSTOM_PATH))
    yield found
    server.shutdown()
    server.server_close()


def _emit(stack: Stack, **otel: str) -> str:
    """Run a process with only ``otel`` as telemetry config; returns its span's name."""
    name = f"env-test-{uuid.uuid4().hex[:8]}"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OTEL_") and k != "LEAFLAB_OTLP_ENDPOINT"
    }
    env.update(
        PYTHONPATH=str(ROOT),
        LEAFLAB_DATABASE_URL=stack.database_url,
        LEAFLAB_TRACE_SCHEDULE_DELAY_MS="50",
        **otel,
    )
    done = subprocess.run(
        [sys.executable, "-c", EMIT, name], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return name


def _stored(engine: Engine, name: str) -> int:
    with engine.connect() as conn:
        return int(conn.scalar(select(func.count()).where(SpanRecord.name == name)) or 0)


class TestStandardVariables:
    def test_endpoint_headers_and_service_name_reach_the_collector(
        self, stack: Stack, receiver: OtlpReceiver, engine: Engine
    ) -> None:
        name = _emit(
            stack,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_EXPORTER_OTLP_HEADERS="x-api-key=s3cr%3Dt,x-tenant=lab one",
            OTEL_SERVICE_NAME="lab-gateway",
        )
        (span,) = receiver.named(name)
        assert span.service == "lab-gateway"
        (path, headers), *_ = [d for d in receiver.deliveries if d[0] == "/v1/traces"][-1:]
        assert path == "/v1/traces"
        assert headers["x-api-key"] == "s3cr=t" and headers["x-tenant"] == "lab one"
        assert _stored(engine, name) == 1  # Leaflab's own trace pages still get it

    def test_traces_endpoint_is_used_as_given(self, stack: Stack, receiver: OtlpReceiver) -> None:
        name = _emit(stack, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=receiver.url + CUSTOM_PATH)
        assert len(receiver.named(name)) == 1
        assert receiver.deliveries[-1][0] == CUSTOM_PATH

    def test_leaflab_alias_still_works(self, stack: Stack, receiver: OtlpReceiver) -> None:
        name = _emit(stack, LEAFLAB_OTLP_ENDPOINT=receiver.url)
        (span,) = receiver.named(name)
        assert span.service == "leaflab-env-test"

    def test_sampler_ratio_zero_exports_and_stores_nothing(
        self, stack: Stack, receiver: OtlpReceiver, engine: Engine
    ) -> None:
        name = _emit(
            stack,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_TRACES_SAMPLER="traceidratio",
            OTEL_TRACES_SAMPLER_ARG="0",
        )
        assert receiver.named(name) == []
        assert _stored(engine, name) == 0
        # The same process with ratio 1 does export: the zero is the sampler's doing.
        kept = _emit(
            stack,
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url,
            OTEL_TRACES_SAMPLER="traceidratio",
            OTEL_TRACES_SAMPLER_ARG="1",
        )
        assert len(receiver.named(kept)) == 1

    def test_sdk_disabled_exports_nothing_and_writes_nothing(
        self, stack: Stack, receiver: OtlpReceiver, engine: Engine
    ) -> None:
        before = receiver.requests
        name = _emit(stack, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url, OTEL_SDK_DISABLED="true")
        assert receiver.requests == before and receiver.named(name) == []
        assert _stored(engine, name) == 0
