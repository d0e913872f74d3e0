"""Parse + chunk throughput: the parser pool vs bare PyMuPDF, same run.

    .venv/bin/python -m bench.library_parsing [--pdfs DIR] [--rounds 3]

Three ways over the same PDFs, interleaved each round (the median round is
reported, so a noisy neighbour hurts all three alike):

- ``bare``: this process opens each PDF and calls ``page.get_text()`` on every
  page; no structure, no chunks, no isolation (the ceiling).
- ``pool``: one warm pool process (RLIMIT_AS, CPU and wall limits) parses the
  structure; this process decodes its answer and chunks it (what ingestion does).
- ``process_per_pdf``: the same parser in a fresh process per PDF
  (``docs_per_process=1``): the cost of the previous one-child-per-PDF design.

Per core: pages per CPU-second, parent plus children, read from
getrusage and /proc. Prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import pymupdf

from services.library.chunking import chunk_blocks
from services.library.parsing.pool import ParseLimits, ParserPool


def _shared_pdfs() -> Path:
    here = Path(__file__).resolve()
    for folder in here.parents:
        candidate = folder / "shared" / "data" / "pdfs"
        if candidate.is_dir():
            return candidate
    return here.parents[2] / "shared" / "data" / "pdfs"


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # reaped processes
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def _proc_cpu(pid: int | None) -> float:
    """CPU seconds of a live child (not yet in RUSAGE_CHILDREN)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bare(pdfs: list[Path]) -> int:
    pages = 0
    for path in pdfs:
        with pymupdf.open(path) as doc:
            for page in doc:
                page.get_text()
                pages += 1
    return pages


def through(pool: ParserPool, pdfs: list[Path]) -> tuple[int, int]:
    pages = chunks = 0
    for path in pdfs:
        parsed = pool.parse(path)
        pages += int(parsed["pages"])
        title = parsed.get("title") or path.name
        chunks += len(chunk_blocks(parsed["blocks"], paper=title, max_tokens=220))
    return pages, chunks


def _timed(run: Any, live_pid: Any = None) -> dict[str, float]:
    cpu0 = _self_cpu() + _proc_cpu(live_pid() if live_pid else None)
    t0 = time.perf_counter()
    result = run()
    wall = time.perf_counter() - t0
    cpu = _self_cpu() + _proc_cpu(live_pid() if live_pid else None) - cpu0
    pages = result if isinstance(result, int) else result[0]
    return {
        "pages": pages,
        "pages_per_s": pages / wall,
        "pages_per_cpu_s": pages / cpu if cpu > 0 else float("nan"),
        "chunks": 0 if isinstance(result, int) else result[1],
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pdfs", type=Path, default=_shared_pdfs())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=0, help="first N PDFs only (0 = all)")
    args = parser.parse_args()
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    if args.limit:
        pdfs = pdfs[: args.limit]
    limits = ParseLimits(pool_size=1)
    pool = ParserPool(limits)
    fresh = ParserPool(ParseLimits(pool_size=1, docs_per_process=1))
    pool.parse(pdfs[0])  # warm: the process and its imports, as in a running service
    rounds: dict[str, list[dict[str, float]]] = {"bare": [], "pool": [], "process_per_pdf": []}
    try:
        for _ in range(args.rounds):
            rounds["bare"].append(_timed(lambda: bare(pdfs)))
            rounds["pool"].append(_timed(lambda: through(pool, pdfs), lambda: pool.last_pid))
            rounds["process_per_pdf"].append(_timed(lambda: through(fresh, pdfs)))
    finally:
        pool.close()
        fresh.close()
    figures: dict[str, Any] = {"pdfs": len(pdfs), "rounds": args.rounds}
    for name, runs in rounds.items():
        figures[name] = {
            "pages": runs[0]["pages"],
            "pages_per_s": round(statistics.median(r["pages_per_s"] for r in runs), 1),
            "pages_per_cpu_s": round(statistics.median(r["pages_per_cpu_s"] for r in runs), 1),
        }
        if name != "bare":
            figures[name]["chunks"] = runs[0]["chunks"]
    ratio = figures["pool"]["pages_per_cpu_s"] / figures["bare"]["pages_per_cpu_s"]
    figures["pool_vs_bare_per_cpu"] = round(ratio, 2)
    for name in rounds:
        f = figures[name]
        print(
            f"{name:16s} {f['pages_per_s']:8.1f} pages/s  {f['pages_per_cpu_s']:8.1f} pages/CPU-s"
        )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
