"""The span exporter process: redacts and writes the spans of the process that started it.

Run by handoff.py as ``python -m services.common.telemetry.exporter_process``,
one per traced process, never by hand. Standard input carries frames
(span_wire.py): the settings first, then span batches and flush requests.
The spans are rebuilt and fed to the same :class:`SpanPipeline` the
in-process mode uses (redaction once per span, a writer thread per sink, the
same bounds and drop counters), so the redaction, encoding and writing run on
this process's GIL and core, not the agents'.

What the sinks wrote and lost is reported back on standard output every
``_REPORT_S`` and before each flush answer: the traced process serves
``/metrics``, so it re-counts them there. End of input (the traced process
exited, or crashed) means flush and exit: spans already handed over are
written even when their process was killed.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from typing import Any, BinaryIO

from services.common.metrics.definitions import (
    SPANS_DROPPED,
    SPANS_EXPORTED,
    SPANS_REDACTION_FAILED,
)
from services.common.telemetry import span_wire
from services.common.telemetry.pipeline import SpanPipeline
from services.common.telemetry.redaction import RedactionPolicy
from services.common.telemetry.settings import TelemetrySettings
from services.common.telemetry.setup import configured_sinks

log = logging.getLogger("leaflab.span_exporter")

_REPORT_S = 0.25
# The pipeline here may wake often: it is this process's only work, and a
# span should not wait two schedule delays (the traced process's and this one's).
_SCHEDULE_DELAY_MS = 50


class CountReporter:
    """Sends the increase of this process's span counters since the last report."""

    def __init__(self, out: BinaryIO) -> None:
        self._out = out
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str, str], float] = {}

    def _totals(self) -> dict[tuple[str, str, str], float]:
        totals: dict[tuple[str, str, str], float] = {}
        for short, counter in (
            (span_wire.COUNT_EXPORTED, SPANS_EXPORTED),
            (span_wire.COUNT_DROPPED, SPANS_DROPPED),
            (span_wire.COUNT_REDACTION_FAILED, SPANS_REDACTION_FAILED),
        ):
            for metric in counter.collect():
                for sample in metric.samples:
                    if sample.name.endswith("_total"):
                        key = (short, sample.labels["sink"], sample.labels.get("reason", ""))
                        totals[key] = sample.value
        return totals

    def send(self, *extra: tuple[Any, ...]) -> None:
        """Report the counters' increase, then ``extra`` messages, in one write."""
        with self._lock:
            totals = self._totals()
            deltas = {k: v - self._last.get(k, 0.0) for k, v in totals.items()}
            deltas = {k: v for k, v in deltas.items() if v}
            self._last = totals
            frames = [span_wire.frame(m) for m in extra]
            if deltas:
                frames.insert(0, span_wire.frame(span_wire.counts_message(deltas)))
            if frames:
                self._out.write(b"".join(frames))
                self._out.flush()

    def run(self, stop: threading.Event) -> None:
        while not stop.wait(_REPORT_S):
            self.send()


def _pipeline(settings: TelemetrySettings) -> SpanPipeline:
    policy = RedactionPolicy(
        full_capture=settings.trace_full_capture,
        preview_chars=settings.trace_preview_chars,
        max_events=settings.trace_max_events,
    )
    return SpanPipeline(
        configured_sinks(settings),
        policy,
        max_queue_size=settings.trace_queue_size,
        max_export_batch_size=settings.trace_batch_size,
        schedule_delay_millis=_SCHEDULE_DELAY_MS,
    )


def serve(source: BinaryIO, out: BinaryIO) -> None:
    """Read frames until end of input; each span batch into the pipeline."""
    first = span_wire.read_message(source)
    if first is None:
        return
    kind, fields = first
    assert kind == span_wire.CONFIG, kind
    settings = TelemetrySettings.model_construct(**fields)
    pipeline = _pipeline(settings)
    decoder = span_wire.BatchDecoder()
    reporter = CountReporter(out)
    stop = threading.Event()
    threading.Thread(target=reporter.run, args=(stop,), name="span-counts", daemon=True).start()
    try:
        while (message := span_wire.read_message(source)) is not None:
            kind, payload = message
            if kind == span_wire.SPANS:
                spans = decoder.spans(payload)
                # Backpressure, not loss: while redaction is behind, stop reading.
                # The pipe fills, and the traced process's bounded buffer (which
                # never blocks its agents) drops and counts what does not fit.
                while pipeline.backlog() + len(spans) > settings.trace_queue_size:
                    time.sleep(0.005)
                for span in spans:
                    pipeline.on_end(span)
            elif kind == span_wire.FLUSH:
                number, timeout_ms = payload
                ok = pipeline.force_flush(timeout_ms)
                reporter.send((span_wire.FLUSHED, (number, ok)))
    finally:
        pipeline.shutdown()
        stop.set()
        reporter.send()


def main() -> None:
    # Ctrl-C, and a SIGTERM sent to the whole process group (systemd's default stop,
    # ``kill -TERM -<pgid>``, a supervisor), reach this process too: it ends at end
    # of input instead, after the traced process has handed over its last spans, so
    # they are written. SIGKILL still ends it; so does its traced process's death.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(
        level=logging.WARNING, format=f"span-exporter[{os.getpid()}] %(levelname)s %(message)s"
    )
    # Replies get a private descriptor; anything printed goes to stderr, never into them.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    serve(sys.stdin.buffer, out)


if __name__ == "__main__":
    main()
