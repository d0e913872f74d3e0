"""Library search latency on real text, query embedding included, plus parse + chunk
throughput on the shared PDFs.

The index holds SciFact's abstracts (/work/shared/data/scifact), chunked and
embedded exactly as ingestion does (``services.library.beir``: MiniLM vectors +
BM25 of the real text), in the service's default local store (Qdrant Edge). To
reach ``--chunks``, the real chunks are stored again under further collections
(``project:0`` … ``project:N-1``); a search is scoped to as many of them as hold
``--scope`` chunks (default 20,000: the 2 of 5 collections of the earlier
synthetic version), as a user's project search is. Queries are SciFact's real
claims; each timed search is what the library service does for ``GET /search``:
embed the query (MiniLM, CPU), BM25-encode it, query both indexes, fuse (the
library's default settings).

Baselines measured in the same run: the query embedding alone, and the same
searches with the query vector precomputed (store + fusion only).

Query embedding runs with torch's default threads, as the service does today;
``OMP_NUM_THREADS=1`` shows the single-thread figure (much faster on a busy box).
Corpus vectors are cached on disk (``--cache``, shared with bench/library_scifact.py):
the first run embeds 11,430 chunks (~25–50 min on 2 busy cores).

    .venv/bin/python -m bench.library_latency --chunks 50000 [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from services.library.beir import BeirSet, document_chunks, load_beir
from services.library.chunking import chunk_blocks
from services.library.embedding import CachedEmbedder, Embedder, embedder_from_settings
from services.library.indexing import embed_text
from services.library.lexical import Bm25Encoder
from services.library.parsing.isolated import ParseLimits, parse_isolated
from services.library.retrieval import Retriever, fusion_config
from services.library.settings import LibrarySettings
from services.library.store.base import StoredChunk, VectorStore
from services.library.store.factory import open_store

# The design docs' data folder sits next to the repository (../shared/data).
SHARED = Path(
    os.environ.get("LEAFLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def parse_throughput(pdf_dir: Path) -> dict[str, float]:
    pages = chunks = 0
    t0 = time.perf_counter()
    for pdf in sorted(pdf_dir.glob("*.pdf")):
        parsed = parse_isolated(pdf, ParseLimits())
        pages += parsed["pages"]
        chunks += len(chunk_blocks(parsed["blocks"], paper=pdf.name, max_tokens=220))
    secs = time.perf_counter() - t0
    return {
        "pages": pages,
        "chunks": chunks,
        "seconds": round(secs, 1),
        "pages_per_s": round(pages / secs, 1),
    }


def real_chunks(
    data: BeirSet, settings: LibrarySettings, embedder: Embedder, encoder: Bm25Encoder
) -> list[StoredChunk]:
    """SciFact's chunks as ingestion stores them (collection set per copy later)."""
    docs = document_chunks(data, max_tokens=settings.chunk_max_tokens)
    texts = [embed_text(c, title) for _, title, chunks in docs for c in chunks]
    vectors = iter(embedder.encode(texts))
    out = []
    for doc_id, title, chunks in docs:
        for chunk in chunks:
            payload = {
                "document_id": doc_id,
                "title": title,
                "locator": chunk.locator,
                "page": chunk.page,
                "section": chunk.section,
                "kind": chunk.kind,
                "ordinal": chunk.ordinal,
                "text": chunk.text,
            }
            sparse = encoder.encode_document(chunk.text, title=title)
            out.append(StoredChunk("", next(vectors).tolist(), sparse, payload))
    return out


def fill(store: VectorStore, chunks: list[StoredChunk], copies: int, target: int) -> int:
    """Store ``chunks`` under ``project:0``, ``project:1`` … until ``target``; returns count."""
    stored = 0
    for copy in range(copies):
        batch = []
        if stored >= target:
            break
        for chunk in chunks[: target - stored]:
            payload = {
                **chunk.payload,
                "collection": f"project:{copy}",
                "document_id": f"{copy}:{chunk.payload['document_id']}",
            }
            batch.append(StoredChunk(str(uuid.uuid4()), chunk.dense, chunk.sparse, payload))
            if len(batch) == 1000:
                store.upsert(batch)
                batch = []
        if batch:
            store.upsert(batch)
        stored += min(len(chunks), target - stored)
    return stored


def _pcts(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=50_000, help="total chunks in the store")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--scope", type=int, default=20_000, help="chunks a search may see")
    ap.add_argument("--data", default=str(SHARED / "scifact"))
    ap.add_argument("--limit-docs", type=int, default=None, help="the corpus's first N docs")
    ap.add_argument("--pdfs", default=str(SHARED / "pdfs"), help="'' to skip parsing")
    home = Path(os.environ.get("LEAFLAB_HOME", "/tmp"))
    ap.add_argument("--cache", default=str(home / "leaflab_scifact_emb"))
    args = ap.parse_args()
    if args.pdfs:
        print(json.dumps({"parse": parse_throughput(Path(args.pdfs))}), flush=True)

    settings = LibrarySettings(qdrant_url=None)
    data = load_beir(Path(args.data))
    if args.limit_docs:  # a prefix in file order, so a partly filled --cache is reused
        data.corpus = dict(list(data.corpus.items())[: args.limit_docs])
    encoder = Bm25Encoder(settings.bm25_params())
    chunks = real_chunks(
        data, settings, CachedEmbedder(Path(args.cache), embedder_from_settings(settings)), encoder
    )
    in_scope = max(1, math.ceil(args.scope / len(chunks)))
    copies = max(in_scope, math.ceil(args.chunks / len(chunks)))
    # The service's own embedder: no cache, so every query is really embedded.
    embedder = embedder_from_settings(settings)
    queries = list(data.queries.values())[: args.queries]
    scope = [f"project:{c}" for c in range(in_scope)]
    with tempfile.TemporaryDirectory(prefix="leaflab-bench-library-") as tmp:
        store = open_store(settings, path=Path(tmp))
        store.ensure(embedder.dimension)
        t0 = time.perf_counter()
        total = fill(store, chunks, copies, max(args.chunks, in_scope * len(chunks)))
        upsert_s = time.perf_counter() - t0
        retriever = Retriever(
            store=store, embedder=embedder, encoder=encoder, fusion=fusion_config(settings)
        )
        for _ in range(5):  # warm-up: model load, first-query allocations
            retriever.search("warm-up query", collections=scope, mode="mix", k=10)
        embed_ms, full_ms, store_ms = [], [], []
        for q in queries:  # the headline first, so warm caches favour the baselines
            t1 = time.perf_counter()
            retriever.search(q, collections=scope, mode="mix", k=10)  # embeds the query
            full_ms.append((time.perf_counter() - t1) * 1000)
            t2 = time.perf_counter()
            vector = embedder.encode_query(q)
            embed_ms.append((time.perf_counter() - t2) * 1000)
            t3 = time.perf_counter()
            retriever.search(q, collections=scope, mode="mix", k=10, query_vector=vector)
            store_ms.append((time.perf_counter() - t3) * 1000)
        store.close()
    print(
        json.dumps(
            {
                "store": "qdrant-edge (library default, no HNSW optimize)",
                "corpus": f"SciFact, {len(data.corpus)} docs -> {len(chunks)} real chunks",
                "chunks": total,
                "copies": copies,
                "in_search_scope": in_scope * len(chunks),
                "scope_collections": in_scope,
                "queries": len(queries),
                "upsert_s": round(upsert_s, 1),
                "search_with_query_embedding": _pcts(full_ms),
                "baseline_query_embedding_only": _pcts(embed_ms),
                "baseline_search_precomputed_vector": _pcts(store_ms),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
