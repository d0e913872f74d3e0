"""Parse a PDF in a separate process with memory, CPU-time, wall-time and page limits.

A hostile or broken PDF can crash MuPDF, allocate without bound or loop
forever; in a child process each of those becomes a clear failure reason for
that one document while the worker carries on.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ParseFailed(Exception):
    """The document cannot be parsed; ``str(exc)`` is the reason shown to users."""


@dataclass(frozen=True)
class ParseLimits:
    memory_mb: int = 1024
    timeout_s: float = 60.0
    max_pages: int = 1500


def _reason_for_exit(code: int, stderr: str, limits: ParseLimits) -> str:
    if code < 0:
        sig = -code
        if sig == signal.SIGXCPU:
            return f"parser exceeded its CPU time limit ({limits.timeout_s:.0f} s)"
        if sig == signal.SIGKILL:
            return "parser was killed (memory or time limit)"
        return f"parser crashed with signal {signal.Signals(sig).name}"
    if "MemoryError" in stderr or "malloc" in stderr.lower():
        return f"exceeded the parser memory limit ({limits.memory_mb} MiB)"
    last = stderr.strip().splitlines()[-1:] or ["no output"]
    return f"parser failed (exit {code}): {last[0][:300]}"


def parse_isolated(path: Path, limits: ParseLimits) -> dict[str, Any]:
    """Return the parsed document or raise :class:`ParseFailed` with a reason."""
    cmd = [
        sys.executable,
        "-m",
        "services.library.parsing.child",
        str(path),
        str(limits.memory_mb),
        str(int(limits.timeout_s) + 1),
        str(limits.max_pages),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=limits.timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ParseFailed(f"parser timed out after {limits.timeout_s:.0f} s") from None
    stdout = proc.stdout.decode("utf-8", "replace")
    if proc.returncode in (0, 2) and stdout:
        try:
            result: dict[str, Any] = json.loads(stdout)
        except json.JSONDecodeError:
            raise ParseFailed("parser produced unreadable output") from None
        if "error" in result:
            raise ParseFailed(str(result["error"]))
        return result
    raise ParseFailed(
        _reason_for_exit(proc.returncode, proc.stderr.decode("utf-8", "replace"), limits)
    )
