"""Share of library documents with authors, year and a DOI or arXiv id, before and
after metadata extraction (issue 28 item 1), on a folder of PDFs.

Before: what ingestion kept until now — a title, the page-1 DOI
(``structure.doi``), and the year the survey guessed from the file name; no
authors. After: the same parse with ``metadata`` (services/library/metadata)
merged as ingestion merges it. Both are computed in this run, from one parse of
each PDF. ``--show`` prints each document's fields for checking by eye.

    .venv/bin/python bench/metadata_completeness.py --pdfs /work/shared/data/pdfs --show
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from services.library.metadata.apply import merged_fields
from services.library.parsing.pdf_structure import parse_pdf
from services.worker.survey.citations import guess_year

DEFAULT_PDFS = Path(__file__).resolve().parents[2] / "shared" / "data" / "pdfs"


def before(parsed: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "authors": [],
        "year": guess_year(name),
        "ids": parsed["structure"].get("doi"),
    }


def after(parsed: dict[str, Any], name: str) -> dict[str, Any]:
    row: Any = SimpleNamespace(metadata_source={})  # a new row: nothing manual yet
    values = merged_fields(row, parsed["metadata"], parsed_title=parsed["title"], filename=name)
    return {
        "title": values.get("title"),
        "authors": values.get("authors") or [],
        "year": values.get("year"),
        "ids": values.get("doi") or values.get("arxiv_id"),
        "venue": values.get("venue"),
        "source": values["metadata_source"],
    }


def shares(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = max(len(rows), 1)
    return {
        "authors": round(100 * sum(bool(r["authors"]) for r in rows) / n, 1),
        "year": round(100 * sum(bool(r["year"]) for r in rows) / n, 1),
        "doi_or_arxiv": round(100 * sum(bool(r["ids"]) for r in rows) / n, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdfs", type=Path, default=DEFAULT_PDFS)
    parser.add_argument("--show", action="store_true", help="print each document's fields")
    args = parser.parse_args()
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    old, new = [], []
    for pdf in pdfs:
        parsed = parse_pdf(str(pdf), max_pages=2000)
        old.append(before(parsed, pdf.name))
        new.append(after(parsed, pdf.name))
        if args.show:
            print(pdf.name, json.dumps(new[-1], ensure_ascii=False))
    print(
        json.dumps(
            {
                "benchmark": "metadata_completeness",
                "documents": len(pdfs),
                "before_pct": shares(old),
                "after_pct": shares(new),
            }
        )
    )


if __name__ == "__main__":
    main()
