"""Entry point of a one-shot PDF reader:
``python -m services.common.pdf_child.child TASK PATH MEMORY_MB CPU_S MAX_PAGES MAX_CHARS``.

The process caps its own address space and CPU time before it imports PyMuPDF
(no ``preexec_fn``: the callers are multi-threaded), reads one file and writes
one JSON line to stdout: ``{"result": …}``, or ``{"error": reason, "kind": k}``
with ``kind`` ``invalid`` (not a PDF we read) or ``limit`` (an allocation
refused by the memory cap). Tasks:

- ``check``: open the file (cross-reference table and trailer; no page is
  interpreted) → ``{"pdf", "pages"}`` — the API's upload check;
- ``text``: each page's text (ligatures folded, line-end hyphenation joined) up
  to MAX_PAGES pages and MAX_CHARS characters
  → ``{"title", "pages", "page_count", "truncated"}`` — ``pdf_fetch``.
"""

from __future__ import annotations

import json
import resource
import sys
from pathlib import Path
from typing import Any

from services.common.hyphenation import dehyphenate
from services.common.ligatures import fold_ligatures
from services.common.pdf_child.reasons import is_allocation_failure, memory_limit_reason


class Rejected(Exception):
    """The file is not a PDF this reader accepts; the message is shown to users."""


def _limit(memory_mb: int, cpu_s: int) -> None:
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    # SIGXCPU at the soft limit (reported as a CPU overrun); SIGKILL a second later.
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# An open that allocated this much before failing failed for memory, not for
# a damaged file: garbage or an HTML page fails within a few MiB.
OPEN_GROWTH_MB = 64


def _peak_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmPeak:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _failed_for_memory(memory_mb: int, peak_before_mb: float) -> bool:
    """MuPDF reports an allocation refused while opening as a generic "Failed to
    open file": tell it by the address space the attempt reached."""
    peak = _peak_mb()
    return peak >= memory_mb * 0.9 or peak - peak_before_mb >= OPEN_GROWTH_MB


def _open(path: str, memory_mb: int) -> Any:
    # pymupdf imports its optional layout package (ONNX, ~1 s) on every start;
    # plain text extraction never uses it, and this process reads one file.
    sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]
    import pymupdf

    pymupdf.TOOLS.mupdf_display_errors(False)  # hostile files warn per operator
    peak_before = _peak_mb()
    try:
        return pymupdf.open(path, filetype="pdf")
    except MemoryError:
        raise
    except Exception as exc:  # MuPDF raises several types for broken files
        if is_allocation_failure(str(exc)) or _failed_for_memory(memory_mb, peak_before):
            raise MemoryError(str(exc)) from None
        raise Rejected(f"the file could not be read as a PDF ({type(exc).__name__})") from None


def check(path: str, memory_mb: int) -> dict[str, Any]:
    with _open(path, memory_mb) as doc:
        return {"pdf": bool(doc.is_pdf), "pages": int(doc.page_count)}


def text(path: str, memory_mb: int, max_pages: int, max_chars: int) -> dict[str, Any]:
    with _open(path, memory_mb) as doc:
        if doc.needs_pass:
            raise Rejected("the PDF is encrypted")
        title = (doc.metadata or {}).get("title") or ""
        pages: list[str] = []
        used = 0
        truncated = doc.page_count > max_pages
        for index in range(min(doc.page_count, max_pages)):
            page_text = dehyphenate(fold_ligatures(doc[index].get_text().strip()))
            if used + len(page_text) > max_chars:
                pages.append(page_text[: max(0, max_chars - used)])
                truncated = True
                break
            pages.append(page_text)
            used += len(page_text)
        return {
            "title": title,
            "pages": pages,
            "page_count": int(doc.page_count),
            "truncated": truncated,
        }


def _answer(payload: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(payload) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> int:
    task, path, memory_mb, cpu_s, max_pages, max_chars = argv
    _limit(int(memory_mb), int(cpu_s))
    try:
        if task == "check":
            result = check(path, int(memory_mb))
        elif task == "text":
            result = text(path, int(memory_mb), int(max_pages), int(max_chars))
        else:
            raise SystemExit(f"unknown task {task!r}")
    except Rejected as exc:
        _answer({"error": str(exc), "kind": "invalid"})
        return 0
    except MemoryError:
        _answer({"error": memory_limit_reason(int(memory_mb)), "kind": "limit"})
        return 3
    except Exception as exc:  # noqa: BLE001 - a page MuPDF cannot interpret
        if is_allocation_failure(str(exc)):
            _answer({"error": memory_limit_reason(int(memory_mb)), "kind": "limit"})
            return 3
        _answer({"error": f"the PDF could not be read ({type(exc).__name__})", "kind": "invalid"})
        return 0
    _answer({"result": result})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
