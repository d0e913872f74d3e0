"""Tracing installed once for the test session: Postgres sink + a real OTLP receiver."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, select

from services.common.models import SpanRecord
from services.common.telemetry import TelemetrySettings, flush_tracing, setup_tracing
from services.common.telemetry.setup import installed_provider
from tests.conftest import Stack
from tests.telemetry.otlp_receiver import OtlpReceiver, start_receiver

TEST_SERVICE = "leaflab-telemetry-test"


@dataclass(frozen=True)
class Tracing:
    settings: TelemetrySettings
    receiver: OtlpReceiver


@pytest.fixture(scope="session")
def tracing(stack: Stack) -> Iterator[Tracing]:
    receiver, server = start_receiver()
    settings = TelemetrySettings(
        database_url=stack.database_url,
        otlp_endpoint=receiver.url,
        trace_schedule_delay_ms=100,
        env="test",
    )
    setup_tracing(TEST_SERVICE, settings)
    assert installed_provider() is not None
    yield Tracing(settings=settings, receiver=receiver)
    flush_tracing()
    server.shutdown()
    server.server_close()


def stored_spans(
    engine: Engine,
    trace_id: str,
    *,
    at_least: int = 1,
    names: set[str] | frozenset[str] = frozenset(),
    timeout: float = 10.0,
) -> list[Any]:
    """Rows of ``spans`` for a trace, waiting until the batch exporter delivered them all.

    Spans of one trace come from several threads (API, Celery tasks) and reach
    Postgres in separate batches, so wait for the names, not just a count.
    """
    deadline = time.monotonic() + timeout
    rows: list[Any] = []
    while time.monotonic() < deadline:
        flush_tracing()
        with engine.connect() as conn:
            rows = list(conn.execute(select(SpanRecord).where(SpanRecord.trace_id == trace_id)))
        if len(rows) >= at_least and names <= {row.name for row in rows}:
            return rows
        time.sleep(0.1)
    got = sorted(row.name for row in rows)
    raise AssertionError(f"trace {trace_id}: stored {got}, wanted {sorted(names)} / {at_least}")
