"""Parsing with and without table detection, same run, same PDFs (issue 28).

    .venv/bin/python -m bench.library_tables [--pdfs DIR] [--rounds 3]

Each round parses every PDF in this process twice, interleaved: ``parse_pdf``
with table detection (``services/library/parsing/tables.py``: ``find_tables``
on rule-bounded regions next to a "Table N" caption) and with
``tables=False``. The median round's pages/s (wall and per CPU-second) is
reported, with the tables found per PDF and the Markdown chunks they became.
Prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

# The parser child imports pymupdf without its ONNX layout package (detection does
# not use it: use_layout=False); so does this bench, so both pay the same start.
sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]

from services.library.chunking import chunk_blocks  # noqa: E402
from services.library.parsing.pdf_structure import parse_pdf  # noqa: E402


def _shared_pdfs() -> Path:
    here = Path(__file__).resolve()
    for folder in here.parents:
        candidate = folder / "shared" / "data" / "pdfs"
        if candidate.is_dir():
            return candidate
    return here.parents[2] / "shared" / "data" / "pdfs"


def _cpu() -> float:
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def _run(pdfs: list[Path], tables: bool) -> dict[str, Any]:
    pages = 0
    found: dict[str, int] = {}
    table_chunks = 0
    cpu0, t0 = _cpu(), time.perf_counter()
    for path in pdfs:
        parsed = parse_pdf(str(path), max_pages=1000, tables=tables)
        pages += int(parsed["pages"])
        found[path.name] = sum(1 for b in parsed["blocks"] if b["kind"] == "table" and b["env"])
        chunks = chunk_blocks(parsed["blocks"], paper=path.name, max_tokens=256)
        table_chunks += sum(1 for c in chunks if c.kind == "table" and "| --- |" in c.text)
    wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
    return {
        "pages": pages,
        "pages_per_s": pages / wall,
        "pages_per_cpu_s": pages / cpu if cpu > 0 else float("nan"),
        "tables": found,
        "markdown_table_chunks": table_chunks,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pdfs", type=Path, default=_shared_pdfs())
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    runs: dict[str, list[dict[str, Any]]] = {"with_tables": [], "without_tables": []}
    _run(pdfs[:1], True)  # warm: imports, fonts
    for _ in range(args.rounds):
        runs["without_tables"].append(_run(pdfs, False))
        runs["with_tables"].append(_run(pdfs, True))
    figures: dict[str, Any] = {"pdfs": len(pdfs), "rounds": args.rounds}
    for name, rs in runs.items():
        median = statistics.median(r["pages_per_s"] for r in rs)
        row = min(rs, key=lambda r: abs(r["pages_per_s"] - median))
        figures[name] = row
        print(
            f"{name:15s} pages={row['pages']} pages/s={row['pages_per_s']:.1f} "
            f"pages/cpu-s={row['pages_per_cpu_s']:.1f} tables={sum(row['tables'].values())} "
            f"markdown table chunks={row['markdown_table_chunks']}"
        )
    w, wo = figures["with_tables"], figures["without_tables"]
    figures["cost_ratio_cpu"] = wo["pages_per_cpu_s"] / w["pages_per_cpu_s"]
    for name, n in w["tables"].items():
        print(f"  {name:28s} tables={n}")
    print(f"with/without per CPU: {1 / figures['cost_ratio_cpu']:.2f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
