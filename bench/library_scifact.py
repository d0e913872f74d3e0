"""SciFact retrieval figures: BM25-only, dense-only and hybrid from ONE index.

Indexes through the real chunk → embed → store path; chunk embeddings are cached
on disk (keyed by text) so fusion settings can be re-scored without re-embedding.

    .venv/bin/python bench/library_scifact.py --limit-docs 2000 --cache /tmp/scifact_emb.npz
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from pathlib import Path

import numpy as np

from services.library.beir import build_index, load_beir, score
from services.library.embedding import Embedder
from services.library.lexical import Bm25Encoder, Bm25Params
from services.library.retrieval import FusionConfig, Retriever
from services.library.store.edge import EdgeStore


class CachedEmbedder(Embedder):
    """Embedder that remembers vectors by text hash (bench-only speed-up)."""

    def __init__(self, cache: Path, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.cache_path = cache
        self.cache: dict[str, np.ndarray] = {}
        if cache.exists():
            data = np.load(cache)
            self.cache = {k: data[k] for k in data.files}

    def encode(self, texts: list[str]) -> np.ndarray:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        missing = [t for t, k in zip(texts, keys, strict=True) if k not in self.cache]
        if missing:
            for text, vec in zip(missing, super().encode(missing), strict=True):
                self.cache[hashlib.sha256(text.encode()).hexdigest()] = vec
        return np.stack([self.cache[k] for k in keys]) if keys else super().encode([])

    def save(self) -> None:
        np.savez(self.cache_path, **self.cache)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="../shared/data/scifact")
    ap.add_argument("--limit-docs", type=int, default=None)
    ap.add_argument("--limit-queries", type=int, default=None)
    ap.add_argument("--cache", default="/tmp/leaflab_scifact_emb.npz")
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=220)
    args = ap.parse_args()
    data = load_beir(Path(args.data), limit_docs=args.limit_docs, limit_queries=args.limit_queries)
    embedder = CachedEmbedder(Path(args.cache), max_seq_length=args.seq)
    rows = []
    for title_weight in (1.0, 2.0):
        encoder = Bm25Encoder(Bm25Params(title_weight=title_weight))
        with tempfile.TemporaryDirectory() as tmp:
            store = EdgeStore(Path(tmp) / "edge")
            store.ensure(embedder.dimension)
            t0 = time.perf_counter()
            chunks = build_index(
                data, embedder=embedder, encoder=encoder, store=store, max_tokens=args.max_tokens
            )
            embedder.save()
            index_s = time.perf_counter() - t0
            for mode, dw, lw in [
                ("keyword", 1, 1),
                ("vector", 1, 1),
                ("mix", 1, 1),
                ("mix", 1.0, 0.7),
                ("mix", 1.0, 1.3),
            ]:
                fusion = FusionConfig(dense_weight=dw, lexical_weight=lw, candidates=200)
                retriever = Retriever(
                    store=store, embedder=embedder, encoder=encoder, fusion=fusion
                )
                t1 = time.perf_counter()
                metrics = score(retriever, data, mode=mode)
                row = {
                    "mode": mode,
                    "dense_w": dw,
                    "lex_w": lw,
                    "title_w": title_weight,
                    **metrics,
                    "docs": len(data.corpus),
                    "queries": len(data.queries),
                    "chunks": chunks,
                    "index_s": round(index_s, 1),
                    "query_s": round(time.perf_counter() - t1, 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
            store.close()
    print(json.dumps({"summary": rows}))


if __name__ == "__main__":
    main()
