"""Telemetry settings (traces and metrics), read from ``LEAFLAB_*`` variables."""

from __future__ import annotations

from pydantic import Field

from services.common.settings import CommonSettings


class TelemetrySettings(CommonSettings):
    """What every service needs to trace and expose metrics.

    A service whose own settings class does not inherit from this one still
    gets these values: :func:`services.common.telemetry.setup_tracing` reads
    them from the environment and takes only the database URL from the
    service's settings.
    """

    tracing_enabled: bool = True
    # OTLP/HTTP collector base URL (``http://otel-collector:4318``); off when unset.
    otlp_endpoint: str | None = None
    otlp_timeout_s: float = Field(default=5.0, gt=0)
    # Persist spans into Postgres (``spans`` table) for Leaflab's own trace pages.
    trace_db_export: bool = True
    # Large string attributes are stored as preview + length + sha256 unless this is on.
    trace_full_capture: bool = False
    trace_preview_chars: int = Field(default=1024, ge=16)
    trace_max_events: int = Field(default=128, ge=1)
    # Bounded export queue per sink: when a sink is slow or down, spans are
    # dropped (and counted) instead of growing memory or blocking the app.
    trace_queue_size: int = Field(default=8192, ge=16)
    trace_batch_size: int = Field(default=512, ge=1)
    trace_schedule_delay_ms: int = Field(default=500, ge=10)
    trace_db_connect_timeout_s: int = Field(default=2, ge=1)
    trace_db_statement_timeout_ms: int = Field(default=5000, ge=100)
    # Port of the Prometheus exposition server in Celery workers (0 = off).
    metrics_port: int = 0
    # Bearer token every /metrics endpoint demands when set (deployments that expose it).
    metrics_token: str | None = None
