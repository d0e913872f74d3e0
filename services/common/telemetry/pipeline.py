"""The span pipeline: the agent's thread only appends; one thread redacts; one per sink writes.

Why not the SDK's ``BatchSpanProcessor`` per sink (the previous design): each
sink had its own queue and export thread, so every span was redacted once per
sink, and at a burst those threads held the GIL against the agents while the
bounded queues overflowed (38 % of a 20,000-span burst dropped, bench/RESULTS.md).

Here ``on_end`` appends the finished span to one deque (atomic under the GIL,
no lock; span_buffer.py, shared with the hand-off) and, once per batch, sets
an event. The redaction thread drains the deque in batches, redacts each span
once, and hands the same cleaned batch to every sink's writer thread. A writer
that is slow or hung (a dead collector) only fills its own bounded queue: its
sink loses spans (counted as ``queue_full``), the other sinks and the agent do
not wait.

Every span that is not delivered is counted in ``leaflab_spans_dropped_total``.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Mapping

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter

from services.common.metrics.definitions import SPANS_DROPPED
from services.common.telemetry.processors import GuardedSpanExporter
from services.common.telemetry.redaction import RedactionPolicy, redact_batch
from services.common.telemetry.span_buffer import BoundedSpanBuffer

log = logging.getLogger(__name__)

_STOP: list[ReadableSpan] = []  # sentinel batch that ends a writer thread
# A sink whose one export has run this long is treated as hung, not slow.
_STUCK_S = 2.0


class _SinkWriter:
    """One sink's thread and its bounded queue of cleaned batches."""

    def __init__(self, sink: str, exporter: SpanExporter, max_spans: int) -> None:
        self.sink = sink
        self.exporter = exporter
        # Bounded in spans, not batches: while the redactor catches up with a
        # burst it hands over many small batches.
        self.batches: queue.Queue[list[ReadableSpan]] = queue.Queue()
        self._max_spans = max_spans
        self._pending = 0
        self._lock = threading.Lock()
        self._full = SPANS_DROPPED.labels(sink=sink, reason="queue_full")
        self._export_started = 0.0  # monotonic start of the export in progress, 0 when idle
        self.thread = threading.Thread(target=self._run, name=f"span-sink-{sink}", daemon=True)
        self.thread.start()

    def submit(self, batch: list[ReadableSpan]) -> None:
        with self._lock:
            accepted = self._pending + len(batch) <= self._max_spans
            if accepted:
                self._pending += len(batch)
        if accepted:
            self.batches.put_nowait(batch)
        else:  # this sink is behind or hung: lose its copy, counted
            self._full.inc(len(batch))

    def idle(self) -> bool:
        return self.batches.unfinished_tasks == 0

    def waiting(self) -> int:
        """Spans queued for this sink, or 0 when it is stuck in one export (hung):
        a reader that waits for room must not wait on a sink that does not move."""
        started = self._export_started
        if started and time.monotonic() - started > _STUCK_S:
            return 0
        return self._pending

    def stop(self, timeout_s: float) -> None:
        self.batches.put_nowait(_STOP)
        self.thread.join(timeout_s)  # a hung sink's daemon thread is abandoned

    def _run(self) -> None:
        while True:
            batch = self.batches.get()
            try:
                if batch is _STOP:
                    return
                self._export_started = time.monotonic()
                self.exporter.export(batch)  # guarded: never raises, counts its losses
            except Exception as exc:  # belt and braces: the thread must survive
                log.warning("span sink %s writer raised: %s", self.sink, exc)
            finally:
                self._export_started = 0.0
                with self._lock:
                    self._pending -= len(batch)
                self.batches.task_done()


class SpanPipeline(BoundedSpanBuffer):
    """One bounded buffer for all sinks, redaction once per span, a writer per sink.

    ``max_queue_size`` bounds the spans waiting for redaction; each sink also
    holds at most ``max_queue_size`` redacted spans while it writes. Past
    either bound spans are dropped, never waited for.
    """

    def __init__(
        self,
        sinks: Mapping[str, SpanExporter],
        policy: RedactionPolicy,
        *,
        max_queue_size: int,
        max_export_batch_size: int,
        schedule_delay_millis: float,
    ) -> None:
        super().__init__(list(sinks), max_queue=max_queue_size, batch=max_export_batch_size)
        self._sinks = {
            sink: GuardedSpanExporter(exporter, sink) for sink, exporter in sinks.items()
        }
        self._policy = policy
        self._delay_s = schedule_delay_millis / 1000
        self._start()
        if hasattr(os, "register_at_fork"):
            # Prefork workers: the parent's threads do not exist in the child.
            os.register_at_fork(after_in_child=self._start)

    def _start(self) -> None:
        self._new_buffer()
        self._busy = False
        self._flushing = False
        self._writers = [_SinkWriter(s, e, self._max_queue) for s, e in self._sinks.items()]
        self._redactor = threading.Thread(target=self._run, name="span-redactor", daemon=True)
        self._redactor.start()

    def _run(self) -> None:
        while not self._stopped:
            woken = self._wake.wait(self._delay_s)
            self._wake.clear()
            # Woken by a full batch: take full batches only, so a burst does not
            # become many tiny batches (a transaction each); the schedule or a
            # flush takes the rest.
            self._drain(self._batch if woken and not self._flushing else 1)
        self._drain(1)

    def _drain(self, at_least: int) -> None:
        buffer, sinks = self._buffer, tuple(self._sinks)
        self._busy = True  # before popping, so a flush never sees "empty and idle" too early
        try:
            while len(buffer) >= at_least:
                batch = [buffer.popleft() for _ in range(min(self._batch, len(buffer)))]
                cleaned, _failed = redact_batch(self._policy, batch, sinks=sinks)
                if cleaned:
                    for writer in self._writers:
                        writer.submit(cleaned)
        except Exception as exc:  # the redaction thread must survive anything
            log.warning("span pipeline: batch lost: %s", exc)
        finally:
            self._busy = False

    def backlog(self) -> int:
        """Spans waiting for redaction, plus the longest queue of a sink that is moving.

        The exporter process reads no more while this is at the bound, so a
        burst waits in every buffer on the way (its traced process's too) before
        a slow sink's queue overflows; a hung sink still loses only its own copies.
        """
        # A batch being redacted is in neither the buffer nor a sink's queue yet.
        redacting = self._batch if self._busy else 0
        return len(self._buffer) + redacting + max((w.waiting() for w in self._writers), default=0)

    def _idle(self) -> bool:
        return not self._buffer and not self._busy and all(w.idle() for w in self._writers)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        self._flushing = True
        try:
            while not self._idle():
                if time.monotonic() >= deadline:
                    return False
                self._wake.set()
                time.sleep(0.005)
        finally:
            self._flushing = False
        # An exporter's force_flush may return None (the SDK's base class): only False fails.
        flushed = [sink.force_flush(timeout_millis) for sink in self._sinks.values()]
        return all(result is not False for result in flushed)

    def shutdown(self) -> None:
        self.force_flush(5000)
        self._stopped = True
        self._wake.set()
        self._redactor.join(5)
        for writer in self._writers:
            writer.stop(5)
        for sink in self._sinks.values():
            sink.shutdown()
