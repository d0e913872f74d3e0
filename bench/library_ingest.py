"""End-to-end ingestion of a folder of PDFs through the library's own path:
parse (isolated) → chunk → embed (configured backend) → BM25 → store, with
embedding and storing overlapped as the service does (``index_chunks``).

Prints pages/s and chunks/s end to end, and as the baseline in the same run
the parse + chunk stage alone (the part embedding speed cannot change).

    .venv/bin/python -m bench.library_ingest --pdfs /work/shared/data/pdfs
    LEAFLAB_EMBEDDING_BACKEND=torch .venv/bin/python -m bench.library_ingest ...
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from services.common.contracts.collections import Collection
from services.library.chunking import chunk_blocks
from services.library.embedding import embedder_from_settings
from services.library.indexing import index_chunks
from services.library.lexical import Bm25Encoder
from services.library.parsing.isolated import ParseLimits, parse_isolated
from services.library.settings import LibrarySettings
from services.library.store import open_store


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", required=True)
    args = ap.parse_args()
    settings = LibrarySettings(qdrant_url=None)
    embedder = embedder_from_settings(settings)
    encoder = Bm25Encoder(settings.bm25_params())
    pdfs = sorted(Path(args.pdfs).glob("*.pdf"))
    pages = chunks = 0
    parse_s = 0.0
    with tempfile.TemporaryDirectory(prefix="leaflab-bench-ingest-") as tmp:
        store = open_store(settings, path=Path(tmp))
        store.ensure(embedder.dimension)  # model load / export outside the timing
        started = time.perf_counter()
        for pdf in pdfs:
            t0 = time.perf_counter()
            parsed = parse_isolated(pdf, ParseLimits())
            title = parsed.get("title") or pdf.name
            doc_chunks = chunk_blocks(
                parsed["blocks"], paper=title, max_tokens=settings.chunk_max_tokens
            )
            parse_s += time.perf_counter() - t0
            pages += parsed["pages"]
            chunks += index_chunks(
                doc_chunks,
                document_id=pdf.stem,
                collection=Collection.LAB,  # a throw-away store: any valid one
                title=title,
                filename=pdf.name,
                embedder=embedder,
                encoder=encoder,
                store=store,
                batch=settings.embedding_batch_size * 2,
            ).done
        total_s = time.perf_counter() - started
        store.close()
    print(
        json.dumps(
            {
                "backend": settings.embedding_backend,
                "pdfs": len(pdfs),
                "pages": pages,
                "chunks": chunks,
                "seconds": round(total_s, 1),
                "pages_per_s": round(pages / total_s, 2),
                "chunks_per_s": round(chunks / total_s, 2),
                "baseline_parse_chunk_only": {
                    "seconds": round(parse_s, 1),
                    "pages_per_s": round(pages / parse_s, 2),
                },
                "load_average": round(os.getloadavg()[0], 1),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
