"""The agent's side of both span processors: one bounded deque, appended to, never waited on.

The in-process pipeline (pipeline.py) and the hand-off to an exporter process
(handoff.py) differ in what their one thread does with a batch; what the
agent's thread does is the same, and it is written here once: ``on_end``
appends the finished span (atomic under the GIL, no lock, no copy), wakes the
processor's thread once per full batch, and drops and counts
(``leaflab_spans_dropped_total{reason="queue_full"}``, per sink) what the bound
does not hold.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from services.common.metrics.definitions import SPANS_DROPPED


class BoundedSpanBuffer(SpanProcessor):
    """Finished, sampled spans into a deque bounded at ``max_queue`` spans."""

    def __init__(self, sinks: Sequence[str], *, max_queue: int, batch: int) -> None:
        self._max_queue = max_queue
        self._batch = max(1, min(batch, max_queue))
        self._full = [SPANS_DROPPED.labels(sink=s, reason="queue_full") for s in sinks]

    def _new_buffer(self) -> None:
        """An empty buffer and wake event (at start, and in a forked child)."""
        self._buffer: deque[ReadableSpan] = deque()
        self._wake = threading.Event()
        self._stopped = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        # The agent's thread: the minimum. No lock, no copy, no redaction.
        if not span.context.trace_flags.sampled:
            return
        buffer = self._buffer
        if len(buffer) >= self._max_queue or self._stopped:
            for counter in self._full:
                counter.inc()
            return
        buffer.append(span)
        if len(buffer) == self._batch:
            self._wake.set()
