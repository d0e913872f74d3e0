"""Entry point of a parser process: ``python -m services.library.parsing.child MEMORY_MB``.

A long-lived process of the parser pool (see ``pool``). It caps its own
address space once at start (no preexec_fn: the parent is multi-threaded),
then serves one request per line on stdin — ``{"path", "max_pages", "cpu_s"}``
— answering each with one JSON line on stdout: the parsed document, or
``{"error": reason}`` for an expected rejection.

Before each document the soft CPU-time limit is moved to "CPU used so far +
cpu_s", so the limit is per document although the process is long-lived;
MuPDF spinning past it gets SIGXCPU and the pool reports the reason.
After an allocation failure — a MemoryError, or MuPDF's own "calloc … failed"
/ "out of memory", which ``parse_pdf`` would report as a damaged page — the
process answers ``{"error", "discard": true}`` and exits: its address space is
spent, and kept it failed every later document (the pool discards it too).
"""

from __future__ import annotations

import json
import resource
import sys
from typing import Any

from services.common.pdf_child.reasons import is_allocation_failure, memory_limit_reason


def _limit_memory(memory_mb: int) -> None:
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _limit_cpu(cpu_s: int) -> None:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + cpu_s
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _answer(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload))
    sys.stdout.write("\n")
    sys.stdout.flush()


def serve(memory_mb: int) -> int:
    _limit_memory(memory_mb)
    # Imported after the limits so that MuPDF's allocations are bounded too.
    from services.library.parsing.pdf_structure import PdfRejected, parse_pdf

    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        _limit_cpu(int(request["cpu_s"]))
        try:
            result = parse_pdf(str(request["path"]), max_pages=int(request["max_pages"]))
        except PdfRejected as exc:
            if not is_allocation_failure(str(exc)):
                _answer({"error": str(exc)})
                continue
            result = None
        except MemoryError:
            result = None
        if result is None:
            _answer({"error": memory_limit_reason(memory_mb), "discard": True})
            return 3  # a fresh process for the next document
        _answer(result)
    return 0


if __name__ == "__main__":
    sys.exit(serve(int(sys.argv[1])))
