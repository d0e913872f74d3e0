"""Embedding backends side by side: chunks/s and SciFact nDCG@10 for PyTorch
(the baseline), ONNX fp32 and ONNX int8, measured in the same run.

Throughput: the same sample of real SciFact chunk texts (title-prefixed, as
ingestion embeds them) through a fresh embedder per backend, one warm-up batch
excluded. Quality: each backend indexes the same SciFact slice through the
ingestion path (``services.library.beir``) and is scored on hybrid, BM25-only
and dense-only nDCG@10 (vectors cached per backend under --cache, so a rerun
re-scores without re-embedding).

    .venv/bin/python -m bench.library_embedding --data /work/shared/data/scifact \
        --limit-docs 1500 --sample 512 --cache /tmp/leaflab_embbench
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from services.library.beir import document_chunks, load_beir, score_all, scratch_index
from services.library.embedding import BACKENDS, CachedEmbedder, embedder_from_settings
from services.library.indexing import embed_text
from services.library.settings import LibrarySettings


def _args() -> argparse.Namespace:
    home = Path(os.environ.get("LEAFLAB_HOME", "/tmp"))
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", default="../shared/data/scifact")
    ap.add_argument("--limit-docs", type=int, default=1500)
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--sample", type=int, default=512, help="chunks timed per backend")
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--cache", default=str(home / "leaflab_embbench"))
    ap.add_argument("--no-quality", action="store_true", help="throughput only")
    return ap.parse_args()


def throughput(settings: LibrarySettings, backend: str, texts: list[str]) -> dict[str, float]:
    embedder = embedder_from_settings(settings, backend=backend)
    started = time.perf_counter()
    embedder.encode(texts[: settings.embedding_batch_size])  # load / export, warm-up
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    embedder.encode(texts)
    seconds = time.perf_counter() - started
    return {
        "chunks": len(texts),
        "seconds": round(seconds, 2),
        "chunks_per_s": round(len(texts) / seconds, 1),
        "load_s": round(load_s, 1),
    }


def main() -> None:
    args = _args()
    settings = LibrarySettings(qdrant_url=None, embedding_device="cpu")
    data = load_beir(Path(args.data), limit_docs=args.limit_docs, limit_queries=args.limit_queries)
    texts = [
        embed_text(c, title)
        for _, title, chunks in document_chunks(data, max_tokens=settings.chunk_max_tokens)
        for c in chunks
    ]
    sample = texts[: args.sample]
    backends = args.backends.split(",")
    rows: dict[str, dict[str, object]] = {}
    for backend in backends:
        rows[backend] = {"backend": backend, **throughput(settings, backend, sample)}
        print(json.dumps(rows[backend]), flush=True)
    if not args.no_quality:
        for backend in backends:
            cached = CachedEmbedder(
                Path(args.cache) / backend, embedder_from_settings(settings, backend=backend)
            )
            with scratch_index(settings, data, cached) as (retriever, chunks, index_s):
                figures = score_all(retriever, data)
            rows[backend].update(
                {
                    "ndcg@10_hybrid": figures["hybrid"]["ndcg@10"],
                    "ndcg@10_dense": figures["dense"]["ndcg@10"],
                    "ndcg@10_bm25": figures["bm25"]["ndcg@10"],
                    "index_chunks": chunks,
                }
            )
            print(json.dumps(rows[backend]), flush=True)
    base = rows.get("torch")
    summary: dict[str, object] = {
        "docs": len(data.corpus),
        "queries": len(data.queries),
        "sample_chunks": len(sample),
        "load_average": os.getloadavg()[0],
        "rows": list(rows.values()),
    }
    if base:
        summary["speedup_vs_torch"] = {
            b: round(float(r["chunks_per_s"]) / float(base["chunks_per_s"]), 2)  # type: ignore[arg-type]
            for b, r in rows.items()
        }
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
