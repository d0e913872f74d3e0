"""One span exporter process, seen from the traced process that started it.

Started with the interpreter of the traced process (exporter_process.py), fed
through its standard input, answered on its standard output. Its own copy of
the settings travels as the first frame, never on the command line or in the
environment (the database URL carries a password).

Accounting, so no loss is silent: every span written to the pipe counts as
*sent* for each sink; the exporter reports what each sink wrote or dropped
(*accounted*). When the process ends, for whatever reason, sent − accounted
spans of each sink are counted as dropped with ``reason="exporter_lost"``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from services.common.metrics.definitions import (
    SPANS_DROPPED,
    SPANS_EXPORTED,
    SPANS_REDACTION_FAILED,
)
from services.common.telemetry import span_wire

log = logging.getLogger(__name__)

LOST = "exporter_lost"
_F_SETPIPE_SZ = 1031  # Linux: a 1 MiB pipe holds a few batches instead of 64 KiB
_PIPE_BYTES = 1 << 20
_ROOT = Path(__file__).resolve().parents[3]  # the directory holding ``services``


class ExporterChild:
    """A running exporter process, its pipe, and its per-sink accounting."""

    def __init__(self, config: Mapping[str, Any], sinks: Sequence[str]) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_ROOT), env.get("PYTHONPATH")) if p)
        self.proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "services.common.telemetry.exporter_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            bufsize=0,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._fd = self.proc.stdin.fileno()
        with contextlib.suppress(OSError):
            fcntl.fcntl(self._fd, _F_SETPIPE_SZ, _PIPE_BYTES)
        os.set_blocking(self._fd, False)  # a hung exporter must not hang the sender
        self._sinks = tuple(sinks)
        self._sent = dict.fromkeys(self._sinks, 0.0)
        self._accounted = dict.fromkeys(self._sinks, 0.0)
        self._flushed: dict[int, bool] = {}
        self._replies = threading.Condition()
        self._write_lock = threading.Lock()
        self._settle_lock = threading.Lock()
        self._settled = False
        self._broken = False  # a write failed: treat it as gone even before it is reaped
        self._reader = threading.Thread(
            target=self._read, name="span-exporter-replies", daemon=True
        )
        self._reader.start()
        self.write(span_wire.frame((span_wire.CONFIG, dict(config))))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return not self._broken and self.proc.poll() is None

    def write(self, data: bytes, *, spans: int = 0, stop: threading.Event | None = None) -> bool:
        """Write one or more whole frames; False when the exporter is gone.

        ``spans`` count as sent before the first byte goes: a frame cut short
        by the exporter's death is then counted lost, not forgotten.
        """
        with self._write_lock:
            for sink in self._sinks:
                self._sent[sink] += spans
            view = memoryview(data)
            while view:
                try:
                    view = view[os.write(self._fd, view) :]
                except BlockingIOError:
                    # The pipe is full: the exporter is behind. Wait for room,
                    # checking now and then that it is still there.
                    select.select([], [self._fd], [], 0.1)
                    if not self.alive() or (stop is not None and stop.is_set()):
                        self._broken = True
                        return False
                except OSError:  # BrokenPipeError: it died
                    self._broken = True
                    return False
            return True

    def flush(self, number: int, timeout_s: float) -> bool:
        """Ask the exporter to write everything sent so far; wait for its answer."""
        request = (span_wire.FLUSH, (number, int(timeout_s * 1000)))
        if not self.write(span_wire.frame(request)):
            return False
        deadline = time.monotonic() + timeout_s
        with self._replies:
            while number not in self._flushed:
                left = deadline - time.monotonic()
                if left <= 0 or not self._reader.is_alive():
                    return False
                self._replies.wait(min(left, 0.1))
            return self._flushed.pop(number)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        stream = self.proc.stdout
        try:
            while (message := span_wire.read_message(stream)) is not None:  # type: ignore[arg-type]
                kind, payload = message
                if kind == span_wire.COUNTS:
                    self._recount(payload)
                elif kind == span_wire.FLUSHED:
                    number, ok = payload
                    with self._replies:
                        self._flushed[number] = bool(ok)
                        self._replies.notify_all()
        except Exception as exc:  # a broken reply stream ends this exporter's accounting
            log.warning("span exporter %s: unreadable reply: %s", self.pid, exc)

    def _recount(self, deltas: Mapping[tuple[str, str, str], float]) -> None:
        for (counter, sink, reason), value in deltas.items():
            if counter == span_wire.COUNT_EXPORTED:
                SPANS_EXPORTED.labels(sink=sink).inc(value)
            elif counter == span_wire.COUNT_DROPPED:
                SPANS_DROPPED.labels(sink=sink, reason=reason).inc(value)
            elif counter == span_wire.COUNT_REDACTION_FAILED:
                SPANS_REDACTION_FAILED.labels(sink=sink).inc(value)
            else:
                continue
            if sink in self._accounted:
                self._accounted[sink] += value

    def settle(self, timeout_s: float) -> None:
        """After the exporter ended (or was told to): read its last report, count the rest lost."""
        with self._settle_lock:
            if self._settled:
                return
            self._settled = True
        self._reader.join(timeout_s)
        try:
            code = self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        lost = {s: self._sent[s] - self._accounted[s] for s in self._sinks}
        for sink, count in lost.items():
            if count > 0:
                SPANS_DROPPED.labels(sink=sink, reason=LOST).inc(count)
        if code != 0 or any(count > 0 for count in lost.values()):
            log.warning("span exporter %s ended (exit %s); spans lost: %s", self.pid, code, lost)

    def close(self, timeout_s: float) -> None:
        """End of input: the exporter writes what it holds and exits."""
        # A writer stuck on a full pipe gives up within 0.1 s of its stop event.
        locked = self._write_lock.acquire(timeout=2)
        try:
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()
        finally:
            if locked:
                self._write_lock.release()
        self.settle(timeout_s)

    def abandon(self) -> None:
        """In a forked copy of the traced process: let go of the parent's exporter.

        Closing the inherited pipe ends lets the exporter see end of input when
        its own traced process exits; its process is not this copy's to wait for.
        """
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
