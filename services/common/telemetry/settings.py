"""Telemetry settings (traces and metrics) from ``LEAFLAB_*`` and standard ``OTEL_*`` variables.

The OpenTelemetry variables users already know are honoured as the SDK
specifies them: ``OTEL_EXPORTER_OTLP_ENDPOINT`` (base URL; ``/v1/traces`` is
appended), ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (used as is),
``OTEL_EXPORTER_OTLP_HEADERS`` / ``…_TRACES_HEADERS`` (``k=v,k2=v2``),
``OTEL_SERVICE_NAME``, ``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG`` and
``OTEL_SDK_DISABLED``. ``LEAFLAB_OTLP_ENDPOINT`` remains an alias of the
endpoint; when both are set the standard variable wins.
"""

from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import SettingsConfigDict

from services.common.settings import CommonSettings


class TelemetrySettings(CommonSettings):
    """What every service needs to trace and expose metrics.

    A service whose own settings class does not inherit from this one still
    gets these values: :func:`services.common.telemetry.setup_tracing` reads
    them from the environment and takes only the database URL from the
    service's settings.
    """

    # Field names still work as keyword arguments (tests, benchmarks).
    model_config = SettingsConfigDict(populate_by_name=True)

    tracing_enabled: bool = True
    # OTEL_SDK_DISABLED=true: no tracer provider at all, nothing exported or stored.
    sdk_disabled: bool = Field(default=False, validation_alias="OTEL_SDK_DISABLED")
    # OTLP/HTTP collector base URL (``http://otel-collector:4318``); off when unset.
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT", "LEAFLAB_OTLP_ENDPOINT"),
    )
    # The full traces URL, when it is not <endpoint>/v1/traces.
    otlp_traces_endpoint: str | None = Field(
        default=None, validation_alias="OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )
    # ``key=value,key2=value2`` (values URL-encoded), e.g. a collector's API key.
    otlp_headers: str | None = Field(
        default=None,
        validation_alias=AliasChoices(
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"
        ),
    )
    otlp_timeout_s: float = Field(default=5.0, gt=0)
    # Overrides the service's own name (``leaflab-api`` …) in the resource.
    service_name: str | None = Field(default=None, validation_alias="OTEL_SERVICE_NAME")
    # always_on | always_off | traceidratio | parentbased_always_on (default) |
    # parentbased_always_off | parentbased_traceidratio; ARG is the ratio (0..1).
    traces_sampler: str | None = Field(default=None, validation_alias="OTEL_TRACES_SAMPLER")
    traces_sampler_arg: str | None = Field(default=None, validation_alias="OTEL_TRACES_SAMPLER_ARG")
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
    # Where spans are redacted and written: ``process``, a child exporter process
    # per traced process fed through a pipe (handoff.py), so that work runs off
    # the agents' GIL; ``thread``, threads inside the traced process (pipeline.py);
    # ``auto``, a process for the agent worker (where spans compete with agents
    # for the GIL), threads elsewhere (an exporter process costs ~100 MB RSS).
    trace_export_mode: Literal["auto", "process", "thread"] = "auto"
    trace_db_connect_timeout_s: int = Field(default=2, ge=1)
    trace_db_statement_timeout_ms: int = Field(default=5000, ge=100)
    # Port of the Prometheus exposition server in Celery workers (0 = off), and the
    # address it binds: loopback unless an operator opens it (with a token, below).
    metrics_port: int = 0
    metrics_bind: str = "127.0.0.1"
    # Bearer token every /metrics endpoint demands when set (deployments that expose it).
    metrics_token: str | None = None
