"""A pool of long-lived, resource-limited parser processes.

Guarantees:
- Each document is parsed in a separate process capped in memory (RLIMIT_AS,
  for the process's life), CPU time (per document), wall time (the pool kills
  a process that has not answered in ``timeout_s``) and pages (per document).
- A hostile document fails with a reason and costs at most its own process:
  the pool starts a replacement for the next document.
- A process that dies mid-document for any other cause (a crash, an outside
  SIGKILL) is replaced and the document retried once; a second death fails
  the document with the reason. A document that exceeds its wall or CPU time
  is not retried (it would only hang again).
- A process that hit a limit is never reused: one that reported an allocation
  failure (MuPDF's "calloc … failed" / "out of memory" under RLIMIT_AS, a
  MemoryError), timed out, died or answered garbage is killed and replaced
  before the next document. (Kept, such a process still held the memory and
  failed every later document, other users' included, with "calloc failed".)
- A process is recycled after ``docs_per_process`` documents, or as soon as
  its resident memory passes ``recycle_rss_mb`` after a document, so slow
  leaks and fragmentation in MuPDF cannot accumulate.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from services.common.pdf_child.reasons import (
    death_reason,
    is_allocation_failure,
    memory_limit_reason,
)

log = logging.getLogger(__name__)


class ParseFailed(Exception):
    """The document cannot be parsed; ``str(exc)`` is the reason shown to users."""


@dataclass(frozen=True)
class ParseLimits:
    memory_mb: int = 1024
    timeout_s: float = 60.0
    max_pages: int = 1500
    pool_size: int = 2
    docs_per_process: int = 200
    recycle_rss_mb: int = 512


class _Died(Exception):
    """The parser process ended without answering; the message says how."""


class _TimedOut(Exception):
    pass


def _death_reason(code: int, stderr_tail: str, limits: ParseLimits) -> str:
    return death_reason(code, stderr_tail, memory_mb=limits.memory_mb, cpu_s=limits.timeout_s)


class ParserProcess:
    """One parser child: JSON lines in, JSON lines out, stderr to a temp file."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self.documents = 0
        # Set when the process hit a limit or misbehaved: never handed a document again.
        self.discard = False
        # A file, not a pipe: MuPDF warns a lot, and a full pipe would block the child.
        self._stderr: IO[bytes] = tempfile.TemporaryFile()
        root = Path(__file__).resolve().parents[3]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "services.library.parsing.child", str(limits.memory_mb)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def reusable(self) -> bool:
        return (
            not self.discard
            and self.alive()
            and self.documents < self.limits.docs_per_process
            and self.rss_mb() < self.limits.recycle_rss_mb
        )

    def rss_mb(self) -> float:
        """Resident memory now (MiB); 0 when the process is gone."""
        try:
            status = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0.0
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def parse(self, path: Path) -> dict[str, Any]:
        """Send one document, wait for its answer (raises _Died / _TimedOut)."""
        request = {
            "path": str(path),
            "max_pages": self.limits.max_pages,
            "cpu_s": int(self.limits.timeout_s) + 1,
        }
        assert self.proc.stdin is not None
        self.documents += 1
        try:
            self.proc.stdin.write(json.dumps(request).encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise _Died(self._reason()) from None
        line = self._read_line(time.monotonic() + self.limits.timeout_s)
        try:
            answer: dict[str, Any] = json.loads(line)
        except json.JSONDecodeError:
            self.discard = True
            raise ParseFailed("parser produced unreadable output") from None
        return answer

    def _read_line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _TimedOut()
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            data = os.read(fd, 1 << 20)
            if not data:  # EOF: the process is gone
                raise _Died(self._reason())
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _reason(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = -signal.SIGKILL
        self._stderr.seek(0, os.SEEK_END)
        self._stderr.seek(max(0, self._stderr.tell() - 4000))
        tail = self._stderr.read().decode("utf-8", "replace")
        return _death_reason(code, tail, self.limits)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        try:
            if self.proc.stdin:
                self.proc.stdin.close()  # the child's loop ends on EOF
            self.proc.wait(timeout=2)
        except (subprocess.TimeoutExpired, OSError):
            self.kill()
        if self.proc.stdout:
            self.proc.stdout.close()
        self._stderr.close()


class ParserPool:
    """Up to ``limits.pool_size`` parser processes shared by the caller's threads."""

    def __init__(self, limits: ParseLimits) -> None:
        self.limits = limits
        self._idle: queue.LifoQueue[ParserProcess | None] = queue.LifoQueue()
        for _ in range(max(1, limits.pool_size)):
            self._idle.put(None)  # a slot whose process starts on first use
        self._lock = threading.Lock()
        self._busy: dict[int, ParserProcess] = {}
        self.started = 0  # processes started over the pool's life (tests, metrics)
        self.last_pid: int | None = None  # the process that parsed the latest document
        self._closed = False

    def busy_pids(self) -> list[int]:
        """Pids of processes parsing a document right now."""
        with self._lock:
            return list(self._busy)

    def parse(self, path: Path) -> dict[str, Any]:
        """The parsed document, or :class:`ParseFailed` with the reason."""
        proc = self._idle.get()
        try:
            for attempt in (1, 2):
                proc = self._ready(proc)
                with self._lock:
                    self._busy[proc.pid] = proc
                    self.last_pid = proc.pid
                try:
                    answer = proc.parse(path)
                except _TimedOut:
                    proc.discard = True
                    proc.kill()
                    raise ParseFailed(
                        f"parser timed out after {self.limits.timeout_s:.0f} s"
                    ) from None
                except _Died as died:
                    log.warning("library.parse: parser died on attempt %d: %s", attempt, died)
                    proc.discard = True
                    proc.kill()
                    if attempt == 2 or "CPU time limit" in str(died):
                        raise ParseFailed(
                            f"{died} (parser process died on {attempt} attempt"
                            f"{'s' if attempt > 1 else ''})"
                        ) from None
                    continue
                finally:
                    with self._lock:
                        self._busy.pop(proc.pid, None)
                if "error" in answer:
                    reason = str(answer["error"])
                    if answer.get("discard") or is_allocation_failure(reason):
                        # Out of address space: the heap is spent, whatever the child says.
                        proc.discard = True
                        proc.kill()
                        reason = memory_limit_reason(self.limits.memory_mb)
                    raise ParseFailed(reason)
                return answer
            raise AssertionError("unreachable")
        finally:
            self._idle.put(self._recycled(proc))

    def _ready(self, proc: ParserProcess | None) -> ParserProcess:
        if proc is not None and proc.reusable():
            return proc
        if proc is not None:
            proc.close()
        with self._lock:
            self.started += 1
        return ParserProcess(self.limits)

    def _recycled(self, proc: ParserProcess | None) -> ParserProcess | None:
        if proc is None:
            return None
        if not proc.reusable():
            if proc.discard:
                proc.kill()  # never wait on a process that hit a limit
            proc.close()
            return None
        return proc

    def close(self) -> None:
        """Stop every idle process (busy ones stop when their caller returns them)."""
        self._closed = True
        while True:
            try:
                proc = self._idle.get_nowait()
            except queue.Empty:
                return
            if proc is not None:
                proc.close()


_pools: dict[tuple[int, ParseLimits], ParserPool] = {}
_pools_lock = threading.Lock()


def shared_pool(limits: ParseLimits) -> ParserPool:
    """This process's pool for ``limits`` (a forked worker gets its own, never its parent's)."""
    key = (os.getpid(), limits)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None:
            pool = _pools[key] = ParserPool(limits)
        return pool
