"""How a limited PDF reader failed, in words a user can act on.

MuPDF reports an allocation refused by ``RLIMIT_AS`` as an ordinary error
("calloc (4104 x 1 bytes) failed", "malloc (16 bytes) failed", "out of memory"),
which the parsing code would otherwise take for a damaged file. A process that
saw one is out of address space and must not read another document: the
caller kills it and, in a pool, starts a fresh one.
"""

from __future__ import annotations

import re
import signal

ALLOCATION_FAILURE = re.compile(
    r"\b(?:c|m|re)alloc\b[^\n]{0,80}failed|out of memory|MemoryError|cannot allocate memory"
    r"|RLIMIT_\w+",
    re.IGNORECASE,
)


def is_allocation_failure(text: str) -> bool:
    """Whether an error text (an answer or a stderr tail) says an allocation failed."""
    return ALLOCATION_FAILURE.search(text) is not None


def memory_limit_reason(memory_mb: int) -> str:
    return f"exceeded the parser memory limit ({memory_mb} MiB)"


def cpu_limit_reason(cpu_s: float) -> str:
    return f"parser exceeded its CPU time limit ({cpu_s:.0f} s)"


def death_reason(code: int, stderr_tail: str, *, memory_mb: int, cpu_s: float) -> str:
    """Why a parser process ended without answering (``code``: its exit status)."""
    if code < 0:
        sig = -code
        if sig == signal.SIGXCPU:
            return cpu_limit_reason(cpu_s)
        if sig == signal.SIGKILL:
            return "parser process was killed (memory or time limit, or by the system)"
        return f"parser crashed with signal {signal.Signals(sig).name}"
    if is_allocation_failure(stderr_tail):
        return memory_limit_reason(memory_mb)
    last = stderr_tail.strip().splitlines()[-1:] or ["no output"]
    return f"parser failed (exit {code}): {last[0][:300]}"
