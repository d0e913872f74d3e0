"""Stand-alone ingest workers for deployments with a Qdrant server:
``celery -A services.library.worker worker -Q library --pool threads``.

Refuses to start against an embedded store, which only the library service may open.
"""

from __future__ import annotations

from services.common.celery_app import build_celery
from services.common.metrics import start_metrics_server
from services.common.telemetry import TelemetrySettings, instrument_celery, setup_tracing
from services.common.telemetry.names import SERVICE_LIBRARY
from services.library.runtime import LibraryRuntime, build_runtime
from services.library.settings import get_library_settings
from services.library.tasks import register_ingest_task

_settings = get_library_settings()
if not _settings.qdrant_url:
    raise RuntimeError(
        "stand-alone library workers need LEAFLAB_QDRANT_URL; with an embedded store the "
        "library service consumes the `library` queue itself"
    )
setup_tracing(SERVICE_LIBRARY, _settings)
# Compose scrapes stand-alone library workers on LEAFLAB_METRICS_PORT; a taken port
# is logged and counted, never fatal.
if _metrics_port := TelemetrySettings().metrics_port:
    start_metrics_server(_metrics_port)
app = build_celery(_settings)
instrument_celery(app)
_runtime: LibraryRuntime | None = None


def _get_runtime() -> LibraryRuntime:
    global _runtime
    if _runtime is None:
        _runtime = build_runtime(_settings)
    return _runtime


register_ingest_task(app, _get_runtime)
