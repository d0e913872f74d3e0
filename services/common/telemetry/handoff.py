"""Spans handed to an exporter process: the traced process neither redacts, encodes nor writes.

The in-process pipeline (pipeline.py) kept the agent's thread cheap, but its
redaction and sink threads still ran on the agents' GIL: at a 20,000-span
burst they starved and 12,864 spans were dropped (bench/RESULTS.md). Here the
agent's thread does what it did there — ``on_end`` appends the span to one
bounded deque — and one hand-off thread turns each batch into plain tuples
(span_wire.py, one ``marshal`` call per batch) and writes it to a pipe. The
exporter process at the other end (exporter_process.py, a child of this
process: no service to deploy) redacts and writes both sinks with the same code.

Kept from the in-process pipeline (span_buffer.py, the same code): the agent
never waits (the deque is bounded, the pipe write is non-blocking, a full
deque drops and counts ``queue_full``); every span not delivered is counted in
``leaflab_spans_dropped_total``, here too (the exporter reports its counts
back). Added: an exporter that dies is started again (after ``_RESTART_S``,
longer when it keeps dying young), and the spans it held are counted
(``exporter_lost``); spans
already handed over survive this process's crash (the exporter writes them at
end of input).
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Sequence

from services.common.settings import CommonSettings
from services.common.telemetry import span_wire
from services.common.telemetry.exporter_child import ExporterChild
from services.common.telemetry.settings import TelemetrySettings
from services.common.telemetry.span_buffer import BoundedSpanBuffer

log = logging.getLogger(__name__)

_RESTART_S = 1.0
# An exporter that dies young (it cannot import, cannot start) is started again
# less and less often, up to this: each start costs an interpreter's start-up.
_RESTART_MAX_S = 30.0
_LIVED_S = 10.0


def exporter_config(settings: TelemetrySettings) -> dict[str, object]:
    """The settings an exporter process needs: telemetry's own fields and the database."""
    own = set(TelemetrySettings.model_fields) - set(CommonSettings.model_fields)
    fields = {name: getattr(settings, name) for name in sorted(own)}
    fields.update(database_url=settings.database_url, env=settings.env)
    return fields


class SpanHandoff(BoundedSpanBuffer):
    """Finished spans to an exporter child process, in batches, off the agent's thread."""

    def __init__(self, settings: TelemetrySettings, sinks: Sequence[str]) -> None:
        super().__init__(
            sinks, max_queue=settings.trace_queue_size, batch=settings.trace_batch_size
        )
        self._config = exporter_config(settings)
        self._sinks = tuple(sinks)
        self._delay_s = settings.trace_schedule_delay_ms / 1000
        self._flush_numbers = itertools.count(1)
        self._child: ExporterChild | None = None
        self._start()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._after_fork)

    def _start(self) -> None:
        self._new_buffer()
        self._stop = threading.Event()
        self._busy = False
        self._flushing = False
        self._started_at = 0.0
        self._restart_s = _RESTART_S
        self._thread = threading.Thread(target=self._run, name="span-handoff", daemon=True)
        self._thread.start()

    def _after_fork(self) -> None:
        # A forked copy has none of the parent's threads, and its exporter is
        # the parent's: it starts its own on its first spans.
        if self._child is not None:
            self._child.abandon()
            self._child = None
        self._start()

    @property
    def exporter_pid(self) -> int | None:
        """The running exporter process's id (tests, diagnostics)."""
        child = self._child
        return child.pid if child is not None and child.alive() else None

    def _exporter(self) -> ExporterChild | None:
        """The live exporter, started (again) if need be; None while waiting to restart."""
        child = self._child
        if child is not None and child.alive():
            return child
        if child is not None:
            child.settle(5)  # it died: count what it held
            self._child = None
            lived = time.monotonic() - self._started_at
            self._restart_s = (
                _RESTART_S if lived > _LIVED_S else min(_RESTART_MAX_S, self._restart_s * 2)
            )
        if time.monotonic() - self._started_at < self._restart_s:
            return None
        self._started_at = time.monotonic()
        try:
            self._child = ExporterChild(self._config, self._sinks)
        except Exception as exc:  # cannot start now: spans wait in the bounded buffer
            log.warning("span exporter did not start: %s", exc)
            return None
        return self._child

    def _run(self) -> None:
        while not self._stop.is_set():
            woken = self._wake.wait(self._delay_s)
            self._wake.clear()
            self._hand_over(self._batch if woken and not self._flushing else 1)
        self._hand_over(1)

    def _hand_over(self, at_least: int) -> None:
        buffer = self._buffer
        self._busy = True  # before popping, so a flush never sees "empty and idle" too early
        try:
            while len(buffer) >= at_least:
                child = self._exporter()
                if child is None:
                    return  # restarting: the spans wait (the bound still holds)
                encoder = span_wire.BatchEncoder()
                taken = min(self._batch, len(buffer))
                for _ in range(taken):
                    encoder.add(buffer.popleft())
                if not child.write(
                    span_wire.frame(encoder.message()), spans=taken, stop=self._stop
                ):
                    return  # it died: the next _exporter() counts this batch lost, restarts
        except Exception as exc:  # the hand-off thread must survive anything
            log.warning("span hand-off: batch lost: %s", exc)
        finally:
            self._busy = False

    def _idle(self) -> bool:
        return not self._buffer and not self._busy

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        self._flushing = True
        try:
            while not self._idle():
                if time.monotonic() >= deadline or not self._thread.is_alive():
                    return False
                self._wake.set()
                time.sleep(0.002)
        finally:
            self._flushing = False
        child = self._child
        if child is None:
            return True  # nothing was ever handed over, or all of it is accounted for
        return child.flush(next(self._flush_numbers), max(0.0, deadline - time.monotonic()))

    def shutdown(self) -> None:
        if self._stopped:
            return
        self.force_flush(5000)
        self._stopped = True
        self._stop.set()
        self._wake.set()
        self._thread.join(5)
        if self._child is not None:
            self._child.close(10)
            self._child = None
