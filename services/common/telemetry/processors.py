"""The sink guard: counts what each sink writes and loses, and backs off from a dead one."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from services.common.metrics.definitions import SPANS_DROPPED, SPANS_EXPORTED

log = logging.getLogger(__name__)


class GuardedSpanExporter(SpanExporter):
    """Counts exported and lost spans per sink, swallows errors, backs off when down.

    After a failed export the sink is skipped for ``backoff_s``: batches are
    dropped (``reason="sink_down"``) without redacting or connecting, so a
    dead database costs neither CPU (the GIL the app needs) nor timeouts.
    """

    def __init__(self, inner: SpanExporter, sink: str, *, backoff_s: float = 2.0) -> None:
        self.inner = inner
        self.sink = sink
        self.backoff_s = backoff_s
        self._down_until = 0.0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if time.monotonic() < self._down_until:
            SPANS_DROPPED.labels(sink=self.sink, reason="sink_down").inc(len(spans))
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception as exc:
            log.warning("span sink %s raised: %s", self.sink, exc)
            result = SpanExportResult.FAILURE
        if result is SpanExportResult.SUCCESS:
            dropped = int(getattr(self.inner, "dropped_last", 0))  # counted by redaction
            SPANS_EXPORTED.labels(sink=self.sink).inc(len(spans) - dropped)
        else:
            self._down_until = time.monotonic() + self.backoff_s
            SPANS_DROPPED.labels(sink=self.sink, reason="export_failed").inc(len(spans))
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception as exc:
            log.warning("span sink %s shutdown failed: %s", self.sink, exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return self.inner.force_flush(timeout_millis)
        except Exception:
            return False
