"""Run one PDF read in a fresh, limited child process and wait for it under a deadline.

Guarantees:
- The child's address space is capped (``RLIMIT_AS``), its CPU time too
  (``RLIMIT_CPU``, SIGXCPU), and the caller kills it at the wall-clock deadline
  or as soon as ``cancel`` is set (a tool call that timed out): no read outlives
  the call that started it, so a retry never runs beside an earlier attempt.
- The caller's memory holds only the answer (text), never the parse: a PDF
  bomb costs the child its limit and the caller nothing.
- At most ``concurrency`` children per calling process read at once; a call
  that cannot get a slot before its deadline fails as ``busy``.
- Each failure is a :class:`PdfReadFailed` with a reason and a ``kind``:
  ``invalid`` (not a PDF we read), ``limit`` (memory, CPU or wall time),
  ``cancelled`` or ``busy``. A child is never reused: one file, one process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from services.common.pdf_child.reasons import death_reason, is_allocation_failure

ROOT = Path(__file__).resolve().parents[3]
POLL_S = 0.05


@dataclass(frozen=True)
class ChildLimits:
    memory_mb: int = 1024
    timeout_s: float = 60.0  # wall clock; the CPU limit is the same number of seconds
    concurrency: int = 2  # children at once per calling process


class PdfReadFailed(Exception):
    def __init__(self, reason: str, *, kind: str) -> None:
        super().__init__(reason)
        self.reason, self.kind = reason, kind


_slots: dict[tuple[int, int], threading.BoundedSemaphore] = {}
_slots_lock = threading.Lock()
_running: set[int] = set()  # pids of live children (tests, diagnostics)


def running_children() -> list[int]:
    with _slots_lock:
        return sorted(_running)


def _slot(concurrency: int) -> threading.BoundedSemaphore:
    # Keyed by pid: a forked worker must not inherit its parent's taken slots.
    key = (os.getpid(), max(1, concurrency))
    with _slots_lock:
        return _slots.setdefault(key, threading.BoundedSemaphore(key[1]))


def _check_cancel(cancel: threading.Event | None) -> None:
    if cancel is not None and cancel.is_set():
        raise PdfReadFailed("the PDF read was cancelled (the call timed out)", kind="cancelled")


def read_pdf(
    task: str,
    path: Path,
    limits: ChildLimits,
    *,
    max_pages: int = 500,
    max_chars: int = 5_000_000,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """The child's result for ``task`` (see ``child``) on ``path``, or PdfReadFailed."""
    deadline = time.monotonic() + limits.timeout_s
    slot = _slot(limits.concurrency)
    while not slot.acquire(timeout=POLL_S):
        _check_cancel(cancel)
        if time.monotonic() >= deadline:
            raise PdfReadFailed("too many PDFs are being read at once; try again", kind="busy")
    try:
        _check_cancel(cancel)
        return _run(task, path, limits, max_pages, max_chars, deadline, cancel)
    finally:
        slot.release()


def _run(
    task: str,
    path: Path,
    limits: ChildLimits,
    max_pages: int,
    max_chars: int,
    deadline: float,
    cancel: threading.Event | None,
) -> dict[str, Any]:
    cpu_s = max(1, int(limits.timeout_s))
    argv = [str(path), str(limits.memory_mb), str(cpu_s), str(max_pages), str(max_chars)]
    # A file, not a pipe, for stderr: MuPDF may warn a lot, and nobody drains it.
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "services.common.pdf_child.child", task, *argv],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        with _slots_lock:
            _running.add(proc.pid)
        try:
            out = _wait(proc, deadline, cancel, limits)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            with _slots_lock:
                _running.discard(proc.pid)
        line = out.strip().splitlines()[-1:] if out else []
        if not line:
            stderr.seek(max(0, stderr.seek(0, os.SEEK_END) - 4000))
            tail = stderr.read().decode("utf-8", "replace")
            reason = death_reason(
                proc.returncode, tail, memory_mb=limits.memory_mb, cpu_s=float(cpu_s)
            )
            hit_limit = proc.returncode < 0 or is_allocation_failure(tail)
            raise PdfReadFailed(reason, kind="limit" if hit_limit else "invalid")
    try:
        answer: dict[str, Any] = json.loads(line[0])
    except json.JSONDecodeError:
        raise PdfReadFailed("the PDF reader produced unreadable output", kind="invalid") from None
    if "error" in answer:
        raise PdfReadFailed(str(answer["error"]), kind=str(answer.get("kind") or "invalid"))
    result: dict[str, Any] = answer["result"]
    return result


def _wait(
    proc: subprocess.Popen[bytes],
    deadline: float,
    cancel: threading.Event | None,
    limits: ChildLimits,
) -> bytes:
    """The child's stdout once it exits; killed at the deadline or on ``cancel``."""
    while True:
        try:
            # Repeated communicate() calls lose no output (documented by subprocess).
            out, _ = proc.communicate(timeout=max(0.0, min(POLL_S, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            pass
        else:
            return out or b""
        if cancel is not None and cancel.is_set():
            proc.send_signal(signal.SIGKILL)
            raise PdfReadFailed("the PDF read was cancelled (the call timed out)", kind="cancelled")
        if time.monotonic() >= deadline:
            proc.send_signal(signal.SIGKILL)
            raise PdfReadFailed(
                f"reading the PDF took longer than {limits.timeout_s:.0f} s", kind="limit"
            )
