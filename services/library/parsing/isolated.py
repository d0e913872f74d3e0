"""Parse a PDF in an isolated, resource-limited process (memory, CPU time, wall
time and page caps).

A hostile or broken PDF can crash MuPDF, allocate without bound or loop
forever; in a parser process each of those becomes a clear failure reason for
that one document while the worker carries on. The processes are long-lived
and shared (``pool``), so a document no longer pays for a fresh interpreter.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from services.library.parsing.pool import ParseFailed, ParseLimits, shared_pool

__all__ = ["ParseFailed", "ParseLimits", "parse_isolated"]


def parse_isolated(path: Path, limits: ParseLimits) -> dict[str, Any]:
    """Return the parsed document or raise :class:`ParseFailed` with a reason."""
    return shared_pool(limits).parse(path)
