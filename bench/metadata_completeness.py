"""Share of library documents with authors, year and a DOI or arXiv id: before
metadata extraction, after it, and after it plus the OpenAlex / Crossref lookup
(issue 28 item 1), on a folder of PDFs.

Before: what ingestion kept until now — a title, the page-1 DOI
(``structure.doi``), and the year the survey guessed from the file name; no
authors. After: the same parse with ``metadata`` (services/library/metadata)
merged as ingestion merges it. Lookup: "after", then the library's lookup
(services/library/metadata/lookup.py, through the address guard) against the
recorded OpenAlex / Crossref records served on loopback
(tests/fixtures/recorded_metadata.py) — what the lookup does with those
records, not what the live services hold today. All three are computed in this
run, from one parse of each PDF. ``--show`` prints each document's fields.

    .venv/bin/python -m bench.metadata_completeness --pdfs /work/shared/data/pdfs --show
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from services.common.net_guard import NetGuard, parse_allow_list
from services.library.metadata.apply import merged_fields, with_lookup
from services.library.metadata.lookup import MetadataLookup, build_lookup
from services.library.parsing.pdf_structure import parse_pdf
from services.library.settings import LibrarySettings
from services.worker.survey.citations import guess_year
from tests.fixtures.recorded_metadata import RecordedMetadata, serve_recorded_metadata


def _shared_pdfs() -> Path:
    """shared/data/pdfs next to the checkout, or next to a folder above it (worktrees)."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "shared" / "data" / "pdfs").is_dir():
            return folder / "shared" / "data" / "pdfs"
    return Path("/work/shared/data/pdfs")


DEFAULT_PDFS = _shared_pdfs()


def before(parsed: dict[str, Any], name: str) -> dict[str, Any]:
    return {
        "authors": [],
        "year": guess_year(name),
        "ids": parsed["structure"].get("doi"),
    }


def merged(parsed: dict[str, Any], name: str) -> dict[str, Any]:
    row: Any = SimpleNamespace(metadata_source={})  # a new row: nothing manual yet
    return merged_fields(row, parsed["metadata"], parsed_title=parsed["title"], filename=name)


def looked_up(values: dict[str, Any], lookup: MetadataLookup, name: str) -> dict[str, Any]:
    found = lookup.find(
        doi=values.get("doi"),
        arxiv_id=values.get("arxiv_id"),
        title=values.get("title"),
        document=name,
    )
    return with_lookup(values, found) if found is not None else values


def after(values: dict[str, Any]) -> dict[str, Any]:
    return {
        "title": values.get("title"),
        "authors": values.get("authors") or [],
        "year": values.get("year"),
        "ids": values.get("doi") or values.get("arxiv_id"),
        "venue": values.get("venue"),
        "source": values["metadata_source"],
    }


def recorded_lookup(recorded: RecordedMetadata) -> MetadataLookup:
    env = recorded.env()
    settings = LibrarySettings(
        metadata_lookup=True,  # whatever the environment says: this is what is measured
        web_allow=recorded.allow_entry,
        openalex_base_url=env["LEAFLAB_OPENALEX_BASE_URL"],
        crossref_base_url=env["LEAFLAB_CROSSREF_BASE_URL"],
    )
    lookup = build_lookup(settings, NetGuard(parse_allow_list(settings.web_allow)))
    assert lookup is not None, "the recorded server must pass the address guard"
    return lookup


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
    old, new, full = [], [], []
    seconds = 0.0
    with serve_recorded_metadata() as recorded:
        lookup = recorded_lookup(recorded)
        for pdf in pdfs:
            parsed = parse_pdf(str(pdf), max_pages=2000)
            values = merged(parsed, pdf.name)
            old.append(before(parsed, pdf.name))
            new.append(after(values))
            started = time.perf_counter()
            full.append(after(looked_up(values, lookup, pdf.name)))
            seconds += time.perf_counter() - started
            if args.show:
                print(pdf.name, json.dumps(full[-1], ensure_ascii=False))
        requests = dict(recorded.hits)
    filled = sum("openalex" in r["source"].values() or "crossref" in r["source"].values()
                 for r in full)  # fmt: skip
    print(
        json.dumps(
            {
                "benchmark": "metadata_completeness",
                "documents": len(pdfs),
                "before_pct": shares(old),
                "after_pct": shares(new),
                "with_lookup_pct": shares(full),
                "found_by_lookup": filled,
                "lookup_requests": requests,
                "lookup_ms_per_doc": round(1000 * seconds / max(len(pdfs), 1), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
