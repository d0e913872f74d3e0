"""Hybrid search as the store grows: p50/p95 of `GET /search`'s work (query
embedding with the configured backend + dense + BM25 + fusion) at N chunks,
memory and disk per million chunks, with the query embedding alone measured in
the same run as the baseline.

Chunks: real SciFact chunk texts (BM25 as ingestion encodes them), cycled to N;
dense vectors are real embeddings of a base sample of those texts plus small
noise (σ 0.02, renormalised) — so neighbours are realistic without embedding N
texts on a CPU. Queries are real SciFact claims, embedded per search. Chunks
are spread over ``--projects`` collections; each search is scoped to 3 (the
payload filter on ``collection``).

    .venv/bin/python -m bench.library_scale --chunks 50000 --queries 100
    .venv/bin/python -m bench.library_scale --chunks 1000000 --optimize   # long
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from services.library.beir import document_chunks, load_beir
from services.library.embedding import embedder_from_settings
from services.library.indexing import embed_text
from services.library.lexical import Bm25Encoder
from services.library.retrieval import Retriever, fusion_config
from services.library.settings import LibrarySettings
from services.library.store import open_store
from services.library.store.base import StoredChunk

SHARED = Path(
    os.environ.get("LEAFLAB_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data")
)


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def disk_mb(root: Path) -> float:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) / 2**20


def _pcts(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--projects", type=int, default=10)
    ap.add_argument("--base", type=int, default=256, help="texts really embedded")
    ap.add_argument("--limit-docs", type=int, default=None)
    ap.add_argument("--data", default=str(SHARED / "scifact"))
    ap.add_argument("--optimize", action="store_true", help="build the HNSW index before timing")
    args = ap.parse_args()

    settings = LibrarySettings(qdrant_url=None)
    data = load_beir(Path(args.data), limit_docs=args.limit_docs)
    docs = document_chunks(data, max_tokens=settings.chunk_max_tokens)
    flat = [(doc_id, title, c) for doc_id, title, chunks in docs for c in chunks]
    encoder = Bm25Encoder(settings.bm25_params())
    sparse = [encoder.encode_document(c.text, title=t) for _, t, c in flat]
    embedder = embedder_from_settings(settings)
    base = embedder.encode([embed_text(c, t) for _, t, c in flat[: args.base]])
    rng = np.random.default_rng(7)
    queries = list(data.queries.values())[: args.queries]

    with tempfile.TemporaryDirectory(prefix="leaflab-bench-scale-") as tmp:
        store = open_store(settings, path=Path(tmp))
        store.ensure(embedder.dimension)
        rss0 = rss_mb()
        t0 = time.perf_counter()
        batch: list[StoredChunk] = []
        for i in range(args.chunks):
            doc_id, title, chunk = flat[i % len(flat)]
            vector = base[i % len(base)] + rng.normal(0, 0.02, base.shape[1]).astype(np.float32)
            vector /= np.linalg.norm(vector)
            copy = i // len(flat)
            payload = {
                "collection": f"project:{i % args.projects}",
                "document_id": f"{copy}:{doc_id}",
                "title": title,
                "locator": chunk.locator,
                "page": chunk.page,
                "section": chunk.section,
                "kind": chunk.kind,
                "ordinal": chunk.ordinal,
                "text": chunk.text,
            }
            batch.append(
                StoredChunk(str(uuid.uuid4()), vector.tolist(), sparse[i % len(flat)], payload)
            )
            if len(batch) == 2000:
                store.upsert(batch)
                batch = []
        if batch:
            store.upsert(batch)
        upsert_s = time.perf_counter() - t0
        optimize_s = None
        if args.optimize:
            t1 = time.perf_counter()
            store.optimize()
            optimize_s = round(time.perf_counter() - t1, 1)
        rss_delta = rss_mb() - rss0
        on_disk = disk_mb(Path(tmp))
        retriever = Retriever(
            store=store, embedder=embedder, encoder=encoder, fusion=fusion_config(settings)
        )
        scope = [f"project:{p}" for p in range(min(3, args.projects))]
        for _ in range(5):
            retriever.search("warm-up query", collections=scope, mode="mix", k=10)
        full_ms, embed_ms = [], []
        for q in queries:
            t2 = time.perf_counter()
            retriever.search(q, collections=scope, mode="mix", k=10)
            full_ms.append((time.perf_counter() - t2) * 1000)
            t3 = time.perf_counter()
            embedder.encode_query(q)
            embed_ms.append((time.perf_counter() - t3) * 1000)
        store.close()
    per_million = 1_000_000 / max(1, args.chunks)
    print(
        json.dumps(
            {
                "store": f"library default ({settings.qdrant_local_engine})",
                "backend": settings.embedding_backend,
                "chunks": args.chunks,
                "distinct_texts": len(flat),
                "projects": args.projects,
                "scope_projects": len(scope),
                "queries": len(queries),
                "upsert_s": round(upsert_s, 1),
                "optimize_s": optimize_s,
                "rss_mb_per_million": round(rss_delta * per_million),
                "disk_mb_per_million": round(on_disk * per_million),
                "hybrid_with_query_embedding": _pcts(full_ms),
                "baseline_query_embedding_only": _pcts(embed_ms),
                "load_average": round(os.getloadavg()[0], 1),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
