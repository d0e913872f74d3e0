"""Entry point of the parsing child process: ``python -m services.library.parsing.child``.

Sets its own resource limits first (no preexec_fn: the parent is multi-threaded),
then parses and writes one JSON object to stdout. Expected rejections are
reported as ``{"error": reason}`` with exit code 2.
"""

from __future__ import annotations

import json
import resource
import sys


def _limit(memory_mb: int, cpu_s: int) -> None:
    memory = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def main(argv: list[str]) -> int:
    path, memory_mb, cpu_s, max_pages = argv[0], int(argv[1]), int(argv[2]), int(argv[3])
    _limit(memory_mb, cpu_s)
    # Imported after the limits so that MuPDF's allocations are bounded too.
    from services.library.parsing.pdf_structure import PdfRejected, parse_pdf

    try:
        result = parse_pdf(path, max_pages=max_pages)
    except PdfRejected as exc:
        sys.stdout.write(json.dumps({"error": str(exc)}))
        return 2
    except MemoryError:
        sys.stdout.write(
            json.dumps({"error": f"exceeded the parser memory limit ({memory_mb} MiB)"})
        )
        return 2
    sys.stdout.write(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
