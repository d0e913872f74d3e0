"""Ingestion levers, one run, same load window: end-to-end pages/s of the
library's own path (parse in the parser pool → chunk → embed → BM25 → store)
per variant, each with a fresh embedder (model load outside the timing).

Variants (comma-separated ``--variants``):
  plain     no length buckets (batches in chunk order)
  buckets   token-length buckets over the whole document (the default)
  intra1 / intra4   buckets + 1 / 4 onnxruntime intra-op threads
  parallel  buckets + parallel execution mode, 2 inter-op threads
  basic     buckets + graph optimisation "basic" instead of "all"
  prefetch  buckets + the next PDF parsed while this one embeds
            (what ``LEAFLAB_CONSUMER_CONCURRENCY`` ≥ 2 gives the service)

``--make-heldout DIR`` first writes PDFs of SciFact abstracts (not the shared
PDFs the levers were chosen on) into DIR, to re-measure on held-out text.

    .venv/bin/python -m bench.ingest_levers --pdfs /work/shared/data/pdfs \
        --variants plain,buckets,intra1,parallel,prefetch
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from services.common.contracts.collections import Collection
from services.library.chunking import Chunk, chunk_blocks
from services.library.embedding import embedder_from_settings
from services.library.indexing import index_chunks
from services.library.lexical import Bm25Encoder
from services.library.parsing.isolated import ParseLimits, parse_isolated
from services.library.settings import LibrarySettings
from services.library.store import open_store

VARIANTS: dict[str, dict[str, Any]] = {
    "plain": {"embedding_length_buckets": False},
    "buckets": {},
    "intra1": {"embedding_threads": 1},
    "intra4": {"embedding_threads": 4},
    "parallel": {"embedding_execution_mode": "parallel", "embedding_inter_op_threads": 2},
    "basic": {"embedding_graph_optimization": "basic"},
    "prefetch": {},
}


def _parse(pdf: Path, max_tokens: int) -> tuple[int, str, list[Chunk]]:
    parsed = parse_isolated(pdf, ParseLimits())
    title = parsed.get("title") or pdf.name
    return (
        parsed["pages"],
        title,
        chunk_blocks(parsed["blocks"], paper=title, max_tokens=max_tokens),
    )


def run_variant(name: str, pdfs: list[Path]) -> dict[str, Any]:
    settings = LibrarySettings(qdrant_url=None, **VARIANTS[name])
    embedder = embedder_from_settings(settings)
    encoder = Bm25Encoder(settings.bm25_params())
    prefetch = name == "prefetch"
    pages = chunks = 0
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="leaflab-bench-levers-") as tmp:
        store = open_store(settings, path=Path(tmp))
        store.ensure(embedder.dimension)  # model load / export outside the timing
        embedder.encode(["warm-up"] * 4)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=1) as ahead:
            pending: Future[tuple[int, str, list[Chunk]]] | None = None
            for i, pdf in enumerate(pdfs):
                if pending is not None:
                    got = pending.result()
                else:
                    got = _parse(pdf, settings.chunk_max_tokens)
                pending = None
                if prefetch and i + 1 < len(pdfs):
                    pending = ahead.submit(_parse, pdfs[i + 1], settings.chunk_max_tokens)
                n_pages, title, doc_chunks = got
                pages += n_pages
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
        seconds = time.perf_counter() - started
        store.close()
    return {
        "variant": name,
        "pdfs": len(pdfs),
        "pages": pages,
        "chunks": chunks,
        "seconds": round(seconds, 1),
        "pages_per_s": round(pages / seconds, 2),
        "chunks_per_s": round(chunks / seconds, 1),
        "load_before": round(load_before, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def make_heldout(folder: Path, corpus: Path, *, pdfs: int = 8, per_pdf: int = 24) -> None:
    """PDFs of consecutive SciFact abstracts (title heading + body), skipping
    the first 2,000 documents (which the embedding tests sample)."""
    import pymupdf

    folder.mkdir(parents=True, exist_ok=True)
    with corpus.open() as fh:
        docs = [json.loads(line) for _, line in zip(range(2000 + pdfs * per_pdf), fh, strict=False)]
    docs = docs[2000:]
    for n in range(pdfs):
        out = pymupdf.open()
        page, y = out.new_page(), 60.0
        for doc in docs[n * per_pdf : (n + 1) * per_pdf]:
            for text, size in ((doc["title"], 13), (doc["text"], 10)):
                if y > 740:
                    page, y = out.new_page(), 60.0
                box = pymupdf.Rect(60, y, 540, 790)
                left = page.insert_textbox(box, text, fontsize=size)
                if left < 0:  # did not fit: next page
                    page, y = out.new_page(), 60.0
                    box = pymupdf.Rect(60, y, 540, 790)
                    left = page.insert_textbox(box, text, fontsize=size)
                y = 790 - left + 14
        out.save(folder / f"scifact-heldout-{n:02d}.pdf")
        out.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pdfs", required=True, type=Path)
    ap.add_argument("--variants", default="plain,buckets")
    ap.add_argument("--make-heldout", type=Path, default=None)
    ap.add_argument("--scifact", type=Path, default=Path("/work/shared/data/scifact/corpus.jsonl"))
    args = ap.parse_args()
    if args.make_heldout is not None:
        make_heldout(args.make_heldout, args.scifact)
    pdfs = sorted(args.pdfs.glob("*.pdf"))
    for name in args.variants.split(","):
        print(json.dumps(run_variant(name, pdfs)), flush=True)


if __name__ == "__main__":
    main()
