"""Every Prometheus metric Leaflab exports, defined once so services share them.

Services import the objects and observe them, e.g.::

    from services.common.metrics import STEP_DURATION
    STEP_DURATION.labels(kind="tool", name="python").observe(elapsed)

Label sets are kept small and bounded (model, user and project ids, queue
names, statuses); never put free text or job ids in a label.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Gauge, Histogram

# One registry for the process; the scrape-time collectors (queues, jobs) are
# registered onto it by :func:`services.common.metrics.register_platform_collectors`.
METRICS_REGISTRY: Final[CollectorRegistry] = REGISTRY

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
_LONG_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200)

HTTP_REQUESTS: Final = Counter(
    "leaflab_http_requests",
    "HTTP requests served, by service, method, route template and status code.",
    ["service", "method", "route", "status"],
)
HTTP_REQUEST_DURATION: Final = Histogram(
    "leaflab_http_request_duration_seconds",
    "HTTP request latency by service, method and route template.",
    ["service", "method", "route"],
    buckets=_LATENCY_BUCKETS,
)
CELERY_TASKS: Final = Counter(
    "leaflab_celery_tasks",
    "Celery tasks finished, by task name and outcome (success, failure, retry).",
    ["task", "outcome"],
)
CELERY_TASK_DURATION: Final = Histogram(
    "leaflab_celery_task_duration_seconds",
    "Celery task run time by task name.",
    ["task"],
    buckets=_LONG_BUCKETS,
)
JOB_DURATION: Final = Histogram(
    "leaflab_job_duration_seconds",
    "Wall time from job creation to a terminal status, by kind and final status.",
    ["kind", "status"],
    buckets=_LONG_BUCKETS,
)
STEP_DURATION: Final = Histogram(
    "leaflab_step_duration_seconds",
    "Duration of one ledger step: kind is llm or tool; name is the model or tool name.",
    ["kind", "name"],
    buckets=_LATENCY_BUCKETS,
)
LLM_REQUEST_DURATION: Final = Histogram(
    "leaflab_llm_request_duration_seconds",
    "Model call latency by model, provider and outcome (ok, error, fallback).",
    ["model", "provider", "outcome"],
    buckets=_LATENCY_BUCKETS,
)
LLM_TOKENS: Final = Counter(
    "leaflab_llm_tokens",
    "Tokens used by model calls; type is input, output or cached.",
    ["model", "user", "project", "type"],
)
LLM_COST_USD: Final = Counter(
    "leaflab_llm_cost_usd",
    "Dollar cost of model calls by model, user and project.",
    ["model", "user", "project"],
)
MODEL_BREAKER_STATE: Final = Gauge(
    "leaflab_model_breaker_state",
    "Circuit breaker state per model endpoint and model (0 closed, 1 half-open, 2 open), "
    "as last seen by this process (the state itself is shared in Redis).",
    ["endpoint", "model"],
    multiprocess_mode="max",
)
BUDGET_RESERVATIONS: Final = Counter(
    "leaflab_budget_reservations",
    "Budget reservations before model calls: reserved, refused (budget exhausted) or "
    "unbudgeted (no budget applies).",
    ["outcome"],
)
BUDGET_ORPHANS_RELEASED: Final = Counter(
    "leaflab_budget_orphans_released",
    "Budget reservations the sweeper gave back because their worker's lease was gone.",
)
BUDGET_OVERRUN_USD: Final = Counter(
    "leaflab_budget_overrun_usd",
    "US$ a server reported beyond what settled calls were charged (a reply past max_tokens, "
    "or a charge cut at a budget's limit); each is a row in budget_overruns.",
)
BUDGET_OVERRUNS: Final = Counter(
    "leaflab_budget_overruns",
    "Budget overrun rows written (one per budget charged less than its call reported).",
)
SANDBOX_EXEC_DURATION: Final = Histogram(
    "leaflab_sandbox_exec_duration_seconds",
    "Sandbox execution time by backend (docker, bwrap) and outcome (ok, error, timeout).",
    ["backend", "outcome"],
    buckets=_LATENCY_BUCKETS,
)
SANDBOX_START_DURATION: Final = Histogram(
    "leaflab_sandbox_start_duration_seconds",
    "Time to get a ready sandbox, by backend and whether it came from the warm pool.",
    ["backend", "warm"],
    buckets=_LATENCY_BUCKETS,
)
SANDBOX_WARM_POOL: Final = Gauge(
    "leaflab_sandbox_warm_pool_size",
    "Idle warm sandboxes ready to use, by backend.",
    ["backend"],
)
LIBRARY_INGEST_DURATION: Final = Histogram(
    "leaflab_library_ingest_duration_seconds",
    "Time to ingest one document (parse, chunk, embed, index), by outcome.",
    ["outcome"],
    buckets=_LONG_BUCKETS,
)
LIBRARY_SEARCH_DURATION: Final = Histogram(
    "leaflab_library_search_duration_seconds",
    "Library search latency by mode (survey, derive, write, keyword, vector, mix).",
    ["mode"],
    buckets=_LATENCY_BUCKETS,
)
SPANS_EXPORTED: Final = Counter(
    "leaflab_spans_exported",
    "Spans written by a tracing sink (postgres, otlp).",
    ["sink"],
)
SPANS_DROPPED: Final = Counter(
    "leaflab_spans_dropped",
    "Spans a tracing sink dropped: queue_full, export_failed, sink_down, or exporter_lost "
    "(held by an exporter process that ended before writing them).",
    ["sink", "reason"],
)
SPANS_REDACTION_FAILED: Final = Counter(
    "leaflab_spans_redaction_failed",
    "Spans not exported because redacting their batch failed (by sink): never sent unredacted.",
    ["sink"],
)
METRICS_SERVER_FAILURES: Final = Counter(
    "leaflab_metrics_server_failures",
    "Times a worker's metrics server could not start (port taken …); the worker runs on.",
)

# Names of the gauges the scrape-time collectors produce (see collectors.py);
# listed here so dashboards and tests can check them like the others.
QUEUE_DEPTH_METRIC: Final = "leaflab_queue_depth"
JOBS_BY_STATUS_METRIC: Final = "leaflab_jobs"
COLLECTOR_UP_METRIC: Final = "leaflab_collector_up"
